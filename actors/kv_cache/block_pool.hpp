// A fixed pool of KV blocks: reference counts, a free list, and the prefix
// cache (content hash -> full block) with LRU eviction of cached blocks that
// no sequence references. Knows nothing of sequences; kv_cache_manager maps
// sequences to blocks on top of it.
//
// One pool serves every K/V group of a model (model/kv_groups.hpp): a block
// is allocated for one group and holds that group's layers, so the prefix
// cache keys a block by (hash, group), and a block is found only for its own
// group. Blocks in use are counted per group.
//
// Every block is in exactly one of three states:
//   free         ref_count == 0, not cached, on the free list
//   used         ref_count >  0, cached or not
//   cached_idle  ref_count == 0, cached, on the LRU list (still reusable)
// allocate() takes the free list first and evicts the least recently
// released cached_idle block only when the free list is empty.
//
// Not thread-safe: one owner (an actor's state) calls it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cortex {

// Hash of a full block given its predecessor's hash (kv_block_hash_root for
// the first block) and its block_size token ids. 64-bit, multiply-mix
// (wyhash-style); equal hashes are confirmed by comparing tokens.
constexpr uint64_t kv_block_hash_root = 0x9e3779b97f4a7c15ull;
uint64_t kv_block_hash(uint64_t hash_parent, const int32_t* tokens, int32_t n_tokens);

class block_pool {
 public:
  // REQUIRES: n_blocks > 0, block_size > 0, n_groups > 0.
  block_pool(int32_t n_blocks, int32_t block_size, int32_t n_groups = 1);

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t n_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t n_cached_idle() const { return n_lru_; }
  int32_t n_used() const { return n_blocks_ - n_free() - n_cached_idle(); }
  // Of those, the blocks allocated for `group`.
  int32_t n_used_in(int32_t group) const { return n_used_in_[static_cast<size_t>(group)]; }
  int32_t n_groups() const { return static_cast<int32_t>(n_used_in_.size()); }
  // Blocks allocate() can hand out now (free + evictable).
  int32_t n_available() const { return n_free() + n_cached_idle(); }
  // Blocks in the prefix cache, used or idle.
  int32_t n_cached() const { return static_cast<int32_t>(cached_.size()); }
  uint64_t n_evictions() const { return n_evictions_; }

  // Takes one block with ref_count 1 for `group`: from the free list, else
  // evicts the least recently used cached_idle block (dropping it from the
  // cache, whatever its group). Returns -1 when neither exists. O(1).
  // REQUIRES: 0 <= group < n_groups().
  int32_t allocate(int32_t group = 0);
  // Blocks allocate() would evict for the next n_new allocations, in order.
  // No side effects. O(n_new).
  std::vector<int32_t> peek_evictions(int32_t n_new) const;

  // ref_count++; a cached_idle block leaves the LRU list. O(1).
  // REQUIRES: block is used or cached_idle.
  void ref(int32_t block);
  // ref_count--; at zero a cached block goes to the LRU tail (most recent),
  // an uncached one to the free list. O(1). REQUIRES: ref_count(block) > 0.
  void unref(int32_t block);
  int32_t ref_count(int32_t block) const { return meta_[block].ref_count; }

  // The cached block of `group` holding exactly `tokens` (block_size ids)
  // under `hash`, or -1. No side effects. O(block_size).
  int32_t find_cached(uint64_t hash, const int32_t* tokens, int32_t group = 0) const;
  // Enters a used, full block into the prefix cache under `hash` for its
  // group, copying its tokens. Returns false (and changes nothing) when the
  // block is already cached or another block holds (hash, group).
  // REQUIRES: ref_count(block) > 0.
  bool cache_block(int32_t block, uint64_t hash, const int32_t* tokens);
  bool is_cached(int32_t block) const { return meta_[block].cached; }
  uint64_t block_hash(int32_t block) const { return meta_[block].hash; }
  // The group the block was last allocated for.
  int32_t group_of(int32_t block) const { return meta_[block].group; }

  // Empty when the pool's own structures agree (states partition the pool,
  // free list and LRU list well formed, cache map matches the blocks);
  // otherwise a description of the first violations found. O(n_blocks).
  std::string check_invariants() const;

 private:
  struct block_meta {
    int32_t ref_count = 0;
    int32_t lru_prev = -1;
    int32_t lru_next = -1;
    bool cached = false;
    bool in_lru = false;
    bool in_free = false;
    int32_t group = 0;
    uint64_t hash = 0;
  };

  void lru_push_back(int32_t block);
  void lru_remove(int32_t block);
  void uncache(int32_t block);
  const int32_t* tokens_of(int32_t block) const {
    return tokens_.data() + static_cast<size_t>(block) * block_size_;
  }

  int32_t n_blocks_;
  int32_t block_size_;
  std::vector<block_meta> meta_;            // (n_blocks,)
  std::vector<int32_t> tokens_;             // (n_blocks, block_size) ids of cached blocks
  std::vector<int32_t> free_list_;          // stack; back is allocated next
  int32_t lru_head_ = -1;                   // least recently released, evicted first
  int32_t lru_tail_ = -1;
  int32_t n_lru_ = 0;
  std::unordered_map<uint64_t, int32_t> cached_;  // cache_key(hash, group) -> block
  std::vector<int32_t> n_used_in_;                // (n_groups,) blocks with ref_count > 0 per group
  uint64_t n_evictions_ = 0;
};

}  // namespace cortex
