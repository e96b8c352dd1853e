// Messages inside the engine (intake -> scheduler -> executor -> sessions).
// Plain structs; the CAF registration is in messages/type_ids.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/request.hpp"

namespace cortex {

// intake -> scheduler: an admitted request, validated and tokenized.
struct sequence_admission {
  request_id rid = 0;
  std::vector<int32_t> tokens_prompt;  // token ids, each < n_vocab
  request_params params;        // validated; max_tokens capped to the context
  uint64_t seed = 0;            // resolved (random when the request had none)
  int32_t priority = 0;
  uint32_t n_logprobs = 0;
  request_kind kind = request_kind::generate;  // embed: prefill only, no sampling
};

// scheduler -> executor, before a sequence's first step: its sampler.
struct sequence_open {
  request_id rid = 0;
  request_params params;
  uint64_t seed = 0;
  uint32_t n_logprobs = 0;
  std::vector<int32_t> tokens_prompt;  // history for the penalties
};

// One sequence's share of a step, planned by the scheduler (scheduler_core)
// and run by the executor (step_runner), which maps it onto the model's
// borrowed view, model/forward.hpp's batch_seq (sample -> logits_mode::last).
struct step_entry {
  request_id rid = 0;
  std::vector<int32_t> tokens;       // (n_tokens,) ids to compute, positions [pos0, pos0 + n_tokens)
  int32_t pos0 = 0;                  // K/V of [0, pos0) are already in the blocks
  std::vector<int32_t> block_table;  // block ids covering [0, pos0 + n_tokens)
  // A model whose K/V live in several groups (model/kv_groups.hpp: full
  // attention, sliding windows): the tables of groups 1.. (block_table is
  // group 0's), each as long as block_table; a windowed group's entries
  // before its window are kv_block_released (-1). Empty: one group.
  std::vector<std::vector<int32_t>> more_block_tables;
  bool sample = false;               // reaches the last known token: sample one token for it
  bool is_decode = false;            // a running sequence's single next token (not prefill or recompute)
  // A prefill-only (embed) request: the executor adds these tokens' final
  // normed hidden rows to the request's pooled sum (starting afresh when
  // pos0 == 0, e.g. after a preemption); with `sample` set it returns the
  // embedding in engine_step_result::embeddings instead of sampling.
  bool embed = false;
  // Speculative decoding (a decode entry only, with sample set): the last
  // n_draft tokens are drafts (actors/scheduler/prompt_lookup.hpp) to
  // verify; the executor answers with 1..n_draft + 1 tokens, in order.
  int32_t n_draft = 0;
  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
};

// scheduler -> executor: one engine step.
struct engine_step {
  uint64_t step_id = 0;
  std::vector<step_entry> entries;
  std::vector<request_id> closed;  // sequences whose samplers can be dropped (before the step)
};

// One sampled token. A speculative entry (step_entry::n_draft > 0) gets
// several, consecutive and in order in engine_step_result::outputs.
struct sampled_output {
  request_id rid = 0;
  int32_t token = 0;
  token_logprob logprob;  // filled when n_logprobs > 0 (id and lp always)
};

// An embed request's result: its prompt's embedding, (n_embd,), L2-normalized.
struct embedding_output {
  request_id rid = 0;
  std::vector<float> embedding;
};

// A request the step could not serve for a reason of its own (its grammar
// keeps too many parses open): it gets no token and ends with `error`; the
// others in the step go on.
struct request_failure {
  request_id rid = 0;
  status error;
};

// executor -> scheduler: the step's sampled tokens (and embeddings of embed
// requests whose prompt completed), or a failure that ends exactly the
// sequences of this step.
struct engine_step_result {
  uint64_t step_id = 0;
  std::vector<sampled_output> outputs;
  std::vector<embedding_output> embeddings;
  std::vector<request_failure> failures;  // requests that end with their own error
  status error;  // not ok: the step failed (outputs and embeddings empty)
  double compute_ms = 0;
  bool failed() const { return !error.is_ok(); }
};

// scheduler -> session: what a step produced for this request.
struct session_update {
  request_id rid = 0;
  bool started = false;             // first time the sequence was scheduled
  uint32_t cached_tokens = 0;       // prompt tokens served from the prefix cache (with started)
  bool prefill_done = false;        // the prompt is fully computed
  std::vector<sampled_output> tokens;
  uint32_t preemptions = 0;
  uint32_t spec_drafted = 0;        // this step's draft tokens verified (speculative decoding)
  uint32_t spec_accepted = 0;       // of which accepted
  std::vector<float> embedding;     // embed requests: the result, once (the request is then done)
};

// Engine-wide statistics (protocol.md `stats`, engine part).
struct engine_stats {
  uint32_t running = 0;
  uint32_t waiting = 0;
  uint32_t kv_blocks_used = 0;
  uint32_t kv_blocks_total = 0;
  uint32_t kv_blocks_cached = 0;
  std::string kv_type;               // element type of the K/V cache ("f16")
  std::string kernel_isa;            // the kernels' path (kernels/cpu_features.hpp: "avx512", "amx")
  uint32_t kv_bytes_per_token = 0;   // K and V of one token over all layers
  // Memory kinds (model/kv_groups.hpp): what the blocks in use hold, what
  // the same sequences would hold with no block released out of a sliding
  // window, and the arena; equal used and full for a model without windows.
  uint64_t kv_bytes_used = 0;
  uint64_t kv_bytes_full = 0;
  uint64_t kv_bytes_total = 0;
  // Per K/V group, in order (one entry per group): its window (0: full
  // attention), the layers its blocks hold, the blocks it holds, and its
  // table entries released out of the window.
  std::vector<uint32_t> kv_group_windows;
  std::vector<uint32_t> kv_group_layers;
  std::vector<uint32_t> kv_group_blocks_used;
  std::vector<uint32_t> kv_group_blocks_released;
  double prefix_cache_hit_rate = 0;
  uint64_t prefix_tokens_queried = 0;  // prompt tokens looked up in the prefix cache (the rate's denominator)
  uint64_t prefix_tokens_hit = 0;      // of which served from it
  // Off for a model with recurrent layers (a cached prefix's K/V does not
  // restore their state), or by --no-prefix-cache.
  bool prefix_cache_enabled = true;
  // Recurrent models: sequences holding a state slot (from their first step
  // to their end), and the bytes of one slot; 0 for attention-only models.
  uint32_t state_slots_used = 0;
  uint64_t state_bytes_per_slot = 0;
  uint64_t tokens_generated = 0;
  uint64_t tokens_prefilled = 0;
  uint64_t steps = 0;
  uint64_t preemptions = 0;
  uint64_t failed_steps = 0;
  uint64_t spec_drafted_tokens = 0;   // speculative decoding: draft tokens verified
  uint64_t spec_accepted_tokens = 0;  // of which accepted
  double step_batch_tokens_mean = 0;
  double step_seqs_mean = 0;
  uint32_t step_seqs_max = 0;
  std::vector<uint64_t> finished_by_reason;  // indexed by finish_reason
};

}  // namespace cortex
