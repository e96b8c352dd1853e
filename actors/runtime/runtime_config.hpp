// Settings of the engine graph, CAF-free. Filled from configs/cortexstream.ini
// and the command line by resolve_daemon_options (apps/cortexd/daemon_options.hpp),
// or field by field by an embedding program.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/runtime/fault_plan.hpp"
#include "kernels/kv_type.hpp"
#include "base/expected.hpp"

namespace cortex {

namespace auth {
class access_policy;
}

struct runtime_config {
  std::string model_path;
  std::string chat_template_path;  // overrides the model's chat template (empty: the model's, else ChatML)
  std::string tool_format;         // tool-call syntax (chat::tool_format_names()); empty: detected from the template
  std::string reasoning_format = "auto";  // default of requests' reasoning_format: auto | none
  // Told after every engine step (duration, tokens): cortexd feeds /metrics'
  // step histograms with it. Empty: nobody listens.
  std::function<void(double duration_s, uint32_t n_tokens)> on_step;
  // Access control (auth.md): when set, every request must carry the key id
  // its gateway authenticated, and intake admits it against the key's tier.
  // Null: off (embedded programs, tests).
  std::shared_ptr<auth::access_policy> access;
  int threads = 0;              // compute threads; 0 = one per core
  int block_size = 16;          // tokens per KV block
  int kv_memory_mb = 1024;      // K/V arena size; the block count follows from the model
  int kv_blocks = 0;            // > 0 overrides kv_memory_mb (tests)
  // Element type of the K/V cache (kernels/kv_type.hpp), llama.cpp's default.
  // kv_memory_mb is bytes, so f16 holds twice the tokens of f32 in the same
  // memory and q8_0 (34 bytes per 32 values) 3.8x; kv_blocks is tokens.
  kernels::kv_type kv_type = kernels::kv_type::f16;
  int max_batch_tokens = 512;   // tokens computed per engine step
  int max_running = 64;         // sequences decoding at once
  int max_prefill_chunk = 0;    // prefill tokens of one sequence per step; 0 = up to the budget
  int max_prefill_with_decode = 128;  // prefill tokens per step while sequences decode; 0 = up to the budget
  // Time budget of a step carrying decode tokens (scheduler_config::itl_target_ms):
  // < 0 off (max_prefill_with_decode only), 0 auto (2x the step's decode part), > 0 ms.
  int itl_target_ms = 0;
  int min_prefill_with_decode = 16;  // prefill tokens such a step gets at least (>= 1)
  // Speculative decoding by prompt lookup for requests without
  // params.speculative (scheduler_config::speculative): off when spec_max_draft == 0.
  int spec_ngram = 3;           // [1, 16]
  int spec_max_draft = 0;       // [0, 32]
  // Drafts sized by acceptance and step cost (scheduler_config::adaptive_drafts);
  // false verifies every draft found (tests of the mechanics).
  bool spec_adaptive = true;
  int max_waiting = 256;        // admission: requests waiting to start (429 beyond)
  int max_queued_tokens = 262144;  // admission: prompt tokens waiting to start (429 beyond)
  bool prefix_cache = true;
  double aging_per_step = 0.01;  // priority a waiting request gains per step
  int n_ctx = 0;                // context per request; 0 = the model's training context
  std::string log_level = "info";
  fault_plan faults;            // tests only (fault_plan.hpp); all off by default

  // Checks ranges; the message names the option and what to fix.
  status validate() const;
};

}  // namespace cortex
