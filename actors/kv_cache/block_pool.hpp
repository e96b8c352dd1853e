// A fixed pool of KV blocks: reference counts, a free list, and the prefix
// cache (content hash -> full block) with LRU eviction of cached blocks that
// no sequence references. Knows nothing of sequences; kv_cache_manager maps
// sequences to blocks on top of it.
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
  // REQUIRES: n_blocks > 0, block_size > 0.
  block_pool(int32_t n_blocks, int32_t block_size);

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t n_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t n_cached_idle() const { return n_lru_; }
  int32_t n_used() const { return n_blocks_ - n_free() - n_cached_idle(); }
  // Blocks allocate() can hand out now (free + evictable).
  int32_t n_available() const { return n_free() + n_cached_idle(); }
  // Blocks in the prefix cache, used or idle.
  int32_t n_cached() const { return static_cast<int32_t>(cached_.size()); }
  uint64_t n_evictions() const { return n_evictions_; }

  // Takes one block with ref_count 1: from the free list, else evicts the
  // least recently used cached_idle block (dropping it from the cache).
  // Returns -1 when neither exists. O(1).
  int32_t allocate();
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

  // The cached block holding exactly `tokens` (block_size ids) under `hash`,
  // or -1. No side effects. O(block_size).
  int32_t find_cached(uint64_t hash, const int32_t* tokens) const;
  // Enters a used, full block into the prefix cache under `hash`, copying its
  // tokens. Returns false (and changes nothing) when the block is already
  // cached or another block holds `hash`. REQUIRES: ref_count(block) > 0.
  bool cache_block(int32_t block, uint64_t hash, const int32_t* tokens);
  bool is_cached(int32_t block) const { return meta_[block].cached; }
  uint64_t block_hash(int32_t block) const { return meta_[block].hash; }

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
  std::unordered_map<uint64_t, int32_t> cached_;  // hash -> block
  uint64_t n_evictions_ = 0;
};

}  // namespace cortex
