#include "actors/runtime/runtime_config.hpp"

namespace cortex {

status runtime_config::validate() const {
  auto bad = [](const std::string& opt, const std::string& what) { return fail(errc::invalid_param, "option " + opt + " " + what); };
  if (model_path.empty()) return bad("model", "is required: the path of a GGUF model file");
  if (threads < 0 || threads > 1024) return bad("threads", "must be in [0, 1024] (0 = one per core)");
  if (block_size < 1 || block_size > 1024) return bad("block-size", "must be in [1, 1024]");
  if (kv_memory_mb < 1 && kv_blocks < 1) return bad("kv-memory-mb", "must be >= 1");
  if (kv_blocks < 0) return bad("kv-blocks", "must be >= 0");
  const scheduler_config& s = scheduler;
  if (s.max_batch_tokens < 1) return bad("max-batch-tokens", "must be >= 1");
  if (s.max_running < 1) return bad("max-running", "must be >= 1");
  if (s.max_prefill_chunk < 0) return bad("max-prefill-chunk", "must be >= 0");
  if (s.max_prefill_with_decode < 0) return bad("max-prefill-with-decode", "must be >= 0 (0 = up to the budget)");
  if (s.itl_target_ms < -1) return bad("itl-target-ms", "must be off, auto or a number of ms >= 1");
  if (s.min_prefill_with_decode < 1) return bad("min-prefill-with-decode", "must be >= 1 (waiting prompts must progress)");
  if (s.speculative.ngram < 1 || s.speculative.ngram > 16 || s.speculative.max_draft < 0 || s.speculative.max_draft > 32)
    return bad("speculative", "must be off or NGRAM:MAX_DRAFT with NGRAM in [1, 16] and MAX_DRAFT in [1, 32]");
  if (intake.max_waiting < 1) return bad("max-waiting", "must be >= 1");
  if (intake.max_queued_tokens < 1) return bad("max-queued-tokens", "must be >= 1");
  if (s.aging_per_step < 0) return bad("aging-per-step", "must be >= 0");
  if (n_ctx < 0) return bad("ctx", "must be >= 0 (0 = the model's)");
  static const char* levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  bool ok = false;
  for (auto* l : levels) ok = ok || log_level == l;
  if (!ok) return bad("log-level", "must be one of trace, debug, info, warn, error, critical, off");
  return status::ok();
}

scheduler_config runtime_config::daemon_scheduler_defaults() {
  scheduler_config s;
  s.max_prefill_with_decode = 128;
  s.speculative = {3, 0};
  return s;
}

}  // namespace cortex
