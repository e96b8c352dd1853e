// The plain data crossing the scheduler/executor boundary: what one step
// computes, and what the executor sampled.
#pragma once

#include <cstdint>
#include <vector>

namespace cortex {

// One sequence's share of a step; maps onto model/forward.hpp's batch_seq.
struct sched_entry {
  int64_t seq_id = 0;
  std::vector<int32_t> tokens;       // (n_tokens,) ids to compute, positions [pos0, pos0 + n_tokens)
  int32_t pos0 = 0;                  // K/V of [0, pos0) are already in the blocks
  std::vector<int32_t> block_table;  // covers [0, pos0 + n_tokens)
  bool completes = false;            // reaches the last known token: sample one token for it
  bool is_decode = false;            // a running sequence's single next token (not prefill or recompute)
  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
};

struct sched_stats {
  uint64_t step = 0;              // index of this step (1-based)
  int32_t n_seqs = 0;             // sequences in the step
  int32_t n_tokens_batch = 0;     // tokens computed in the step
  int32_t n_tokens_decode = 0;
  int32_t n_tokens_prefill = 0;   // prompt chunks and recomputation
  int32_t n_blocks_used = 0;      // after the step's allocation
  int32_t n_blocks_total = 0;
  int32_t n_preemptions = 0;      // sequences preempted while planning this step
  int32_t n_running = 0;          // after planning
  int32_t n_waiting = 0;          // after planning (includes preempted)
};

struct sched_plan {
  std::vector<sched_entry> entries;  // order of the forward pass batch
  sched_stats stats;
  bool empty() const { return entries.empty(); }
};

// The executor's answer for one entry with completes == true. `finished`
// carries the session's stop decision when it is already known; otherwise
// the session calls finish() later. For an embed sequence the answer only
// says the executor returned its embedding (token and finished unused).
struct sched_sampled {
  int64_t seq_id = 0;
  int32_t token = 0;
  bool finished = false;
};

}  // namespace cortex
