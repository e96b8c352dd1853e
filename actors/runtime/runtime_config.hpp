// Settings of the engine graph, CAF-free. Filled from configs/cortexstream.ini
// and the command line by resolve_daemon_options (apps/cortexd/daemon_options.hpp),
// or field by field by an embedding program. The scheduler's and intake's
// settings are their own configs, nested: the runtime passes them on whole,
// adding only what the model decides (whole inputs for encoders, a recurrent
// state's size, the context and vocabulary limits, the chat setup).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "actors/intake/intake_core.hpp"
#include "actors/runtime/fault_plan.hpp"
#include "actors/scheduler/scheduler_core.hpp"
#include "kernels/kv_type.hpp"
#include "base/expected.hpp"

namespace cortex {

struct runtime_config {
  std::string model_path;
  std::string chat_template_path;  // overrides the model's chat template (empty: the model's, else ChatML)
  std::string tool_format;         // tool-call syntax (chat::tool_format_names()); empty: detected from the template
  std::string reasoning_format = "auto";  // default of requests' reasoning_format: auto | none
  // Told after every engine step (duration, tokens): cortexd feeds /metrics'
  // step histograms with it. Empty: nobody listens.
  std::function<void(double duration_s, uint32_t n_tokens)> on_step;
  int threads = 0;              // compute threads; 0 = one per core
  int block_size = 16;          // tokens per KV block
  int kv_memory_mb = 1024;      // K/V arena size; the block count follows from the model
  int kv_blocks = 0;            // > 0 overrides kv_memory_mb (tests)
  // Element type of the K/V cache (kernels/kv_type.hpp), llama.cpp's default.
  // kv_memory_mb is bytes, so f16 holds twice the tokens of f32 in the same
  // memory and q8_0 (34 bytes per 32 values) 3.8x; kv_blocks is tokens.
  kernels::kv_type kv_type = kernels::kv_type::f16;
  // The scheduler (actors/scheduler/scheduler_core.hpp): batch budget,
  // running sequences, prefill chunks and their cap beside decodes, the ITL
  // target, priority aging, speculative decoding. cortexd's defaults.
  scheduler_config scheduler = daemon_scheduler_defaults();
  // Intake (actors/intake/intake_core.hpp): admission limits (max_waiting,
  // max_queued_tokens: 429 beyond), and access control: with `access` set,
  // every request must carry the key id its gateway authenticated, and
  // intake admits it against the key's tier (null: off; embedded programs,
  // tests).
  intake_config intake;
  bool prefix_cache = true;
  int n_ctx = 0;                // context per request; 0 = the model's training context
  std::string log_level = "info";
  fault_plan faults;            // tests only (fault_plan.hpp); all off by default

  // Checks ranges; the message names the option and what to fix.
  status validate() const;

  // scheduler_config's defaults, but prefill beside decodes capped at 128
  // tokens and prompt lookup matching 3-grams (drafts off until asked for).
  static scheduler_config daemon_scheduler_defaults();
};

}  // namespace cortex
