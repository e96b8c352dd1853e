// Per-sequence block tables over a block_pool, with the prefix cache.
//
// A sequence's position p lives in block table[p / block_size], slot
// p % block_size: the table is exactly what forward_pass's batch_seq reads.
// The API is the vLLM one: "blocks already cached for this request"
// (lookup_prefix), "can this step's new tokens get slots" (plan_allocation,
// no side effects) then "take them" (commit), and "free".
//
// Shared blocks are full and read-only: lookup_prefix never attaches the
// block the sequence writes next, so at least the last known token is always
// computed (cached tokens <= n_tokens - 1).
//
// Not thread-safe: one owner calls it. Block tables returned by reference
// stay valid until the next call that mutates that sequence.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/kv_cache/block_pool.hpp"
#include "messages/request.hpp"  // request_id
#include "model/expected.hpp"

namespace cortex {

struct kv_cache_config {
  int32_t n_blocks = 0;             // blocks in the pool (> 0)
  int32_t block_size = 16;          // tokens per block (> 0)
  bool enable_prefix_caching = true;
  int32_t fault_pinned_blocks = 0;  // injected fault (fault_plan.hpp): blocks taken at start, never freed
  // What a block holds, for stats only (the arena itself is the executor's):
  // the element type's name and the bytes one token takes over all layers.
  std::string kv_type = "f32";
  uint32_t kv_bytes_per_token = 0;
};

// One sequence's demand in a step: its table must cover positions
// [0, pos0 + n_tokens).
struct kv_alloc_request {
  request_id rid = 0;
  int32_t pos0 = 0;      // first position written this step
  int32_t n_tokens = 0;  // tokens written this step
};

struct kv_alloc_entry {
  request_id rid = 0;
  int32_t pos_end = 0;       // pos0 + n_tokens
  int32_t n_blocks_new = 0;  // blocks this sequence needs beyond its table
  bool fits = false;         // this entry and all before it fit together
};

// What commit() would do. Made against one state of the manager
// (`generation`); commit() refuses it once the manager has changed.
struct kv_alloc_plan {
  std::vector<kv_alloc_entry> entries;  // in request order
  int32_t n_blocks_new = 0;             // sum over entries
  int32_t n_blocks_available = 0;       // free + evictable when planned
  bool fits = false;                    // every entry fits
  std::vector<int32_t> evicted;         // cached blocks commit evicts (for the fitting entries), LRU first
  uint64_t generation = 0;
};

struct kv_cache_stats {
  int32_t n_blocks_total = 0;
  int32_t n_blocks_used = 0;         // referenced by at least one sequence
  int32_t n_blocks_free = 0;         // on the free list
  int32_t n_blocks_cached = 0;       // in the prefix cache, used or idle
  int32_t n_blocks_cached_idle = 0;  // in the prefix cache, unreferenced (evictable)
  int32_t n_seqs = 0;                // sequences holding at least one block
  uint64_t n_tokens_queried = 0;     // tokens passed to lookup_prefix
  uint64_t n_tokens_hit = 0;         // of those, served from the cache
  uint64_t n_evictions = 0;
  double hit_rate() const { return n_tokens_queried ? double(n_tokens_hit) / double(n_tokens_queried) : 0.0; }
};

class kv_cache_manager {
 public:
  // REQUIRES: cfg.n_blocks > 0, cfg.block_size > 0.
  explicit kv_cache_manager(const kv_cache_config& cfg);

  int32_t block_size() const { return pool_.block_size(); }
  int32_t n_blocks() const { return pool_.n_blocks(); }
  bool prefix_caching() const { return enable_prefix_caching_; }
  const std::string& kv_type() const { return kv_type_; }
  uint32_t kv_bytes_per_token() const { return kv_bytes_per_token_; }

  // Attaches the longest run of cached full blocks that starts `tokens`
  // (ref_count++ each) as the start of rid's table and returns how many
  // tokens they hold: a multiple of block_size, <= tokens.size() - 1, 0 when
  // prefix caching is off. REQUIRES: rid holds no blocks.
  // O(tokens.size()).
  int32_t lookup_prefix(request_id rid, const std::vector<int32_t>& tokens);

  // Blocks rid needs beyond its table to cover [0, pos_end). No side effects.
  int32_t n_blocks_needed(request_id rid, int32_t pos_end) const;
  int32_t n_blocks_available() const { return pool_.n_available(); }

  // Plans a whole step. No side effects. Requests for the same sequence
  // must not repeat. O(requests + evictions).
  kv_alloc_plan plan_allocation(const std::vector<kv_alloc_request>& requests) const;
  // Applies a plan made against the current state. Fails (changing nothing)
  // when the plan does not fit or the manager changed since it was made.
  status commit(const kv_alloc_plan& plan);

  // Releases rid's blocks (last block first, so a sequence's tail is
  // evicted before its head). Cached blocks stay cached. No-op for an
  // unknown sequence.
  void free(request_id rid);
  // Releases rid's blocks beyond those covering [0, n_tokens) (last first):
  // a speculative step's rejected positions (actors/scheduler/prompt_lookup.hpp).
  // Blocks registered in the prefix cache are full of computed tokens, so
  // never among them when n_tokens >= the registered count. No-op for an
  // unknown sequence.
  void truncate(request_id rid, int32_t n_tokens);

  // Enters rid's full blocks among its first n_tokens_computed tokens
  // into the prefix cache (`tokens` holds at least that many; their K/V must
  // be in the blocks). Idempotent, incremental: O(new full blocks *
  // block_size). A block whose content is already cached elsewhere stays
  // private. No-op when prefix caching is off.
  void register_full_blocks(request_id rid, const std::vector<int32_t>& tokens, int32_t n_tokens_computed);

  // rid's block table; empty for an unknown sequence.
  const std::vector<int32_t>& block_table(request_id rid) const;

  kv_cache_stats stats() const;

  // Empty when consistent; otherwise what is wrong: the pool's own checks,
  // plus ref counts equal table uses, no block twice in one table, cached
  // blocks of a table carry the sequence's hash chain. O(n_blocks + table
  // entries).
  std::string check_invariants() const;

 private:
  struct seq_blocks {
    std::vector<int32_t> table;
    std::vector<uint64_t> hashes;  // chain hashes of the first hashes.size() full blocks
  };

  block_pool pool_;
  bool enable_prefix_caching_;
  std::string kv_type_;
  uint32_t kv_bytes_per_token_;
  std::unordered_map<request_id, seq_blocks> seqs_;
  uint64_t generation_ = 0;  // bumped by every mutation; stale plans are refused
  uint64_t n_tokens_queried_ = 0;
  uint64_t n_tokens_hit_ = 0;
};

}  // namespace cortex
