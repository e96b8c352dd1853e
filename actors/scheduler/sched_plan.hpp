// The plain data crossing the scheduler/executor boundary: what one step
// computes, and what the executor sampled.
#pragma once

#include <cstdint>
#include <vector>

#include "messages/engine.hpp"  // step_entry, request_id

namespace cortex {

struct sched_stats {
  uint64_t step = 0;              // index of this step (1-based)
  int32_t n_seqs = 0;             // sequences in the step
  int32_t n_tokens_batch = 0;     // tokens computed in the step
  int32_t n_tokens_decode = 0;
  int32_t n_tokens_prefill = 0;   // prompt chunks and recomputation
  int32_t n_tokens_draft = 0;     // of the decode tokens, speculative drafts
  int32_t n_blocks_used = 0;      // after the step's allocation
  int32_t n_blocks_total = 0;
  int32_t n_preemptions = 0;      // sequences preempted while planning this step
  int32_t n_running = 0;          // after planning
  int32_t n_waiting = 0;          // after planning (includes preempted)
  double predicted_ms = 0;        // the step cost model's forecast; 0 while uncalibrated
  double target_ms = 0;           // the time budget applied to this step; 0: none
};

struct sched_plan {
  std::vector<step_entry> entries;  // order of the forward pass batch
  sched_stats stats;
  bool empty() const { return entries.empty(); }
};

// The executor's answer for one entry with sample == true. `finished`
// carries the session's stop decision when it is already known; otherwise
// the session calls finish() later. For an embed sequence the answer only
// says the executor returned its embedding (token and finished unused).
// A speculative entry's answer carries its further accepted tokens in
// `more` (in order after `token`), already cut at a stop token or
// max_tokens by the caller; `finished` then applies to the last of them.
struct sched_sampled {
  request_id rid = 0;
  int32_t token = 0;
  bool finished = false;
  std::vector<int32_t> more;
};

}  // namespace cortex
