// Per-sequence block tables over a block_pool, with the prefix cache.
//
// A sequence's position p lives in block table[p / block_size], slot
// p % block_size: the table is exactly what forward_pass's batch_seq reads.
// The API is the vLLM one: "blocks already cached for this request"
// (lookup_prefix), "can this step's new tokens get slots" (plan_allocation,
// no side effects) then "take them" (commit), and "free".
//
// Memory kinds (design.md): a model's layers may keep their K/V in several
// groups (model/kv_groups.hpp: full attention, and sliding windows), all
// served by the one pool. Each sequence has one table per group, all of the
// same length (a table row is block_size positions, one block in every
// group). A windowed group's blocks that no query still to come can see are
// released once the sequence has computed past them
// (release_out_of_window): their entries become kv_block_released. The
// prefix cache is exact for every group: a prefix is a hit only when each
// group holds what the next query needs (all of it for full attention; the
// blocks under the window before the prefix's end for a windowed group).
// With one full-attention group (every model without windows) all of this
// is the single table it always was.
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
#include "base/expected.hpp"
#include "kernels/attention.hpp"  // kv_block_released

namespace cortex {

using kernels::kv_block_released;

struct kv_cache_config {
  int32_t n_blocks = 0;             // blocks in the pool (> 0)
  int32_t block_size = 16;          // tokens per block (> 0)
  bool enable_prefix_caching = true;
  int32_t fault_pinned_blocks = 0;  // injected fault (fault_plan.hpp): blocks taken at start, never freed
  // What a block holds, for stats only (the arena itself is the executor's):
  // the element type's name and the bytes one token takes over all layers.
  std::string kv_type = "f32";
  uint32_t kv_bytes_per_token = 0;
  // The K/V groups (model/kv_groups.hpp), in order: each one's window (0:
  // full attention). Empty: one full-attention group.
  std::vector<int32_t> group_windows;
  // For stats only: layers per group (parallel to group_windows), and the
  // bytes one pool block holds (0: kv_bytes_per_token * block_size, the
  // block of a one-group model).
  std::vector<int32_t> group_layers;
  uint64_t kv_bytes_per_block = 0;
};

// One sequence's demand in a step: its tables must cover positions
// [0, pos0 + n_tokens).
struct kv_alloc_request {
  request_id rid = 0;
  int32_t pos0 = 0;      // first position written this step
  int32_t n_tokens = 0;  // tokens written this step
};

struct kv_alloc_entry {
  request_id rid = 0;
  int32_t pos_end = 0;       // pos0 + n_tokens
  int32_t n_blocks_new = 0;  // blocks this sequence needs beyond its tables (all groups)
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

// One K/V group's share (model/kv_groups.hpp).
struct kv_group_stats {
  int32_t window = 0;             // 0: full attention
  int32_t n_layers = 0;           // layers its blocks hold
  int32_t n_blocks_used = 0;      // blocks its tables reference
  int32_t n_blocks_released = 0;  // table entries released out of the window (over live sequences)
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
  std::vector<kv_group_stats> groups;  // (n_groups,)
  uint64_t n_bytes_per_block = 0;
  double hit_rate() const { return n_tokens_queried ? double(n_tokens_hit) / double(n_tokens_queried) : 0.0; }
  // K/V bytes the blocks in use hold.
  uint64_t n_bytes_used() const { return static_cast<uint64_t>(n_blocks_used) * n_bytes_per_block; }
  // What the live sequences would hold with nothing released out of the
  // windows: the blocks in use plus every released entry (a released block
  // that several sequences shared counts once for each). Equals
  // n_bytes_used() for a model without windows.
  uint64_t n_bytes_full() const {
    uint64_t n = static_cast<uint64_t>(n_blocks_used);
    for (const auto& g : groups) n += static_cast<uint64_t>(g.n_blocks_released);
    return n * n_bytes_per_block;
  }
};

class kv_cache_manager {
 public:
  // REQUIRES: cfg.n_blocks > 0, cfg.block_size > 0, group windows >= 0.
  explicit kv_cache_manager(const kv_cache_config& cfg);

  int32_t block_size() const { return pool_.block_size(); }
  int32_t n_blocks() const { return pool_.n_blocks(); }
  int32_t n_groups() const { return static_cast<int32_t>(windows_.size()); }
  int32_t group_window(int32_t group) const { return windows_[static_cast<size_t>(group)]; }
  bool prefix_caching() const { return enable_prefix_caching_; }
  const std::string& kv_type() const { return kv_type_; }
  uint32_t kv_bytes_per_token() const { return kv_bytes_per_token_; }

  // Attaches the longest cached prefix of `tokens` that every group can
  // serve (ref_count++ on each block attached) as the start of rid's tables
  // and returns how many tokens it holds: a multiple of block_size,
  // <= tokens.size() - 1, 0 when prefix caching is off. A full-attention
  // group needs all of the prefix's blocks; a windowed group only those
  // holding the window before its end, and gets kv_block_released entries
  // for the rest. REQUIRES: rid holds no blocks. O(tokens.size() * groups).
  int32_t lookup_prefix(request_id rid, const std::vector<int32_t>& tokens);

  // Blocks rid needs beyond its tables to cover [0, pos_end), over all
  // groups. No side effects.
  int32_t n_blocks_needed(request_id rid, int32_t pos_end) const;
  int32_t n_blocks_available() const { return pool_.n_available(); }
  // Table rows (block_size positions, one block in each group) the pool can
  // still give: n_blocks_available() / n_groups().
  int32_t n_rows_available() const { return pool_.n_available() / n_groups(); }

  // Plans a whole step. No side effects. Requests for the same sequence
  // must not repeat. O(requests + evictions).
  kv_alloc_plan plan_allocation(const std::vector<kv_alloc_request>& requests) const;
  // Applies a plan made against the current state. Fails (changing nothing)
  // when the plan does not fit or the manager changed since it was made.
  status commit(const kv_alloc_plan& plan);

  // Releases rid's blocks (last row first, so a sequence's tail is evicted
  // before its head). Cached blocks stay cached. No-op for an unknown
  // sequence.
  void free(request_id rid);
  // rid has computed its first n_tokens_computed positions: each windowed
  // group releases the blocks whose positions all lie before
  // n_tokens_computed - window + 1, which no query from position
  // n_tokens_computed on can see (those registered in the prefix cache stay
  // there, evictable). Their entries become kv_block_released. Call after
  // register_full_blocks, so that released blocks are cached first. No-op
  // without windowed groups or for an unknown sequence. O(blocks released).
  void release_out_of_window(request_id rid, int32_t n_tokens_computed);
  // Releases rid's blocks beyond those covering [0, n_tokens) (last first):
  // a speculative step's rejected positions (actors/scheduler/prompt_lookup.hpp).
  // Blocks registered in the prefix cache are full of computed tokens, so
  // never among them when n_tokens >= the registered count. No-op for an
  // unknown sequence.
  void truncate(request_id rid, int32_t n_tokens);

  // Enters rid's full blocks among its first n_tokens_computed tokens
  // into the prefix cache, in every group (`tokens` holds at least that
  // many; their K/V must be in the blocks). Idempotent, incremental:
  // O(new full blocks * (block_size + groups)). A block whose content is
  // already cached elsewhere stays private. No-op when prefix caching is off.
  void register_full_blocks(request_id rid, const std::vector<int32_t>& tokens, int32_t n_tokens_computed);

  // rid's block table of group 0 (every group's has its length); empty for
  // an unknown sequence.
  const std::vector<int32_t>& block_table(request_id rid) const { return block_table(rid, 0); }
  // rid's table of `group`: entries of released blocks are kv_block_released.
  const std::vector<int32_t>& block_table(request_id rid, int32_t group) const;

  kv_cache_stats stats() const;

  // Empty when consistent; otherwise what is wrong: the pool's own checks,
  // plus ref counts equal table uses, no block twice in one table, each
  // group's tables hold blocks of that group, a sequence's tables have one
  // length, released entries only at the start of windowed groups' tables
  // and counted, cached blocks of a table carry the sequence's hash chain.
  // O(n_blocks + table entries).
  std::string check_invariants() const;

 private:
  struct group_table {
    std::vector<int32_t> table;  // the first n_released entries are kv_block_released
    int32_t n_released = 0;
  };
  struct seq_blocks {
    std::vector<group_table> groups;  // (n_groups,), tables of one length
    std::vector<uint64_t> hashes;     // chain hashes of the first hashes.size() full blocks (tokens only: every group's)
    size_t n_rows() const { return groups.empty() ? 0 : groups[0].table.size(); }
  };
  seq_blocks& seq(request_id rid);
  // Entries of a table of `group` no query from position n_tokens on sees.
  int32_t n_rows_out_of_window(int32_t group, int32_t n_tokens) const;

  std::vector<int32_t> windows_;  // (n_groups,)
  std::vector<int32_t> group_layers_;
  uint64_t kv_bytes_per_block_;
  block_pool pool_;
  bool enable_prefix_caching_;
  std::string kv_type_;
  uint32_t kv_bytes_per_token_;
  std::unordered_map<request_id, seq_blocks> seqs_;
  uint64_t generation_ = 0;  // bumped by every mutation; stale plans are refused
  uint64_t n_tokens_queried_ = 0;
  uint64_t n_tokens_hit_ = 0;
  std::vector<int32_t> n_released_;  // (n_groups,) released entries over live tables
};

}  // namespace cortex
