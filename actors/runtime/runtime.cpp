#include "actors/runtime/runtime.hpp"

#include <map>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/executor/executor_actor.hpp"
#include "actors/intake/intake_actor.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "actors/session/session_actor.hpp"
#include "model/kv_arena.hpp"

namespace cortex {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::cortex>();
  // Actor handles inside messages travel between nodes (the sink of a
  // submit, a worker's intake in its hello reply): they need a type name.
  cfg.add_message_type<request_sink_actor>("cortex::request_sink_actor");
  cfg.add_message_type<intake_actor>("cortex::intake_actor");
}

expected<std::unique_ptr<runtime>> runtime::start(caf::actor_system& sys, const runtime_config& cfg) {
  if (auto s = cfg.validate(); !s) return s;
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  spdlog::info("loading model {}", cfg.model_path);
  auto m = model::load(cfg.model_path);
  if (!m) return m.error();
  return start(sys, cfg, std::shared_ptr<const model>(std::move(*m)));
}

expected<std::unique_ptr<runtime>> runtime::start(caf::actor_system& sys, const runtime_config& cfg,
                                                  std::shared_ptr<const model> m) {
  runtime_config c = cfg;
  if (c.model_path.empty()) c.model_path = m->file().path();
  if (auto s = c.validate(); !s) return s;
  std::unique_ptr<runtime> rt(new runtime());
  rt->model_ = std::move(m);
  const auto& hp = rt->model_->hparams();
  for (const auto& note : hp.notes) spdlog::info("model: {}", note);
  if (const size_t state = hp.state_floats() * sizeof(float); state > 0) {
    int n_recurrent = 0;
    for (const auto& a : hp.attn) n_recurrent += a.recurrent ? 1 : 0;
    spdlog::info("model: {} of {} layers are recurrent (a {:.2f} MiB state per running sequence); prefix caching and "
                 "speculative decoding are off for this model (a cached prefix would not restore the state)",
                 n_recurrent, hp.n_layer, static_cast<double>(state) / 1048576.0);
  }
  rt->n_ctx_ = c.n_ctx > 0 ? std::min(c.n_ctx, hp.n_ctx_train) : hp.n_ctx_train;
  if (auto s = kv_type_fits(hp, c.kv_type); !s) return s;
  const size_t kv_bytes_per_token = kv_arena::bytes_per_token(hp, c.kv_type);
  // Memory kinds (model/kv_groups.hpp): the pool's blocks hold one group's
  // layers each. kv-blocks counts blocks of the whole model, so both options
  // give the same memory whatever the groups; a model without windows has
  // one group and the blocks it always had.
  const kv_group_layout groups = kv_group_layout::by_window(hp);
  const size_t kv_bytes_per_block = kv_arena::bytes_per_block(hp, groups, c.kv_type, c.block_size);
  rt->kv_blocks_ = c.kv_blocks > 0 ? groups.n_blocks_for_memory_of(c.kv_blocks)
                                   : static_cast<int>((static_cast<size_t>(c.kv_memory_mb) << 20) / kv_bytes_per_block);
  if (rt->kv_blocks_ < groups.n_groups()) {
    return fail(errc::invalid_param, "option kv-memory-mb is too small for one block of this model");
  }
  // One request may not need more blocks than the whole pool (windowed
  // groups hold only their windows' blocks, so a model with windows reaches
  // further in the same memory).
  rt->n_ctx_ = std::min(rt->n_ctx_, groups.max_context(rt->kv_blocks_, c.block_size));
  if (hp.encoder.enabled) {
    // An encoder keeps no K/V (its inputs are computed whole, one step each):
    // the arena is one block the pass holds but never reads, and an input
    // may be as long as the positions it was trained on and a step computes.
    rt->kv_blocks_ = 1;
    rt->n_ctx_ = std::min({c.n_ctx > 0 ? c.n_ctx : hp.n_ctx_train, hp.n_ctx_train, c.scheduler.max_batch_tokens});
    static const char* const pooling_names[] = {"none", "mean", "cls", "last", "rank"};
    spdlog::info("model: an encoder (pooling {}): it only {}; inputs of up to {} tokens, each computed whole in one "
                 "step, keep no K/V", pooling_names[static_cast<int>(hp.encoder.pooling)],
                 hp.encoder.pooling == pooling_kind::rank ? "ranks (/v1/rerank)" : "embeds", rt->n_ctx_);
  }
  if (rt->n_ctx_ < 1) return fail(errc::invalid_param, "option kv-memory-mb is too small for one token of this model's windows");
  const int threads = c.threads > 0 ? c.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // A bad --chat-template fails before anything is spawned.
  auto chat = load_chat_setup(rt->model_->file(), rt->model_->tokenizer(), c.chat_template_path, c.tool_format, c.reasoning_format);
  if (!chat) return chat.error();
  for (const auto& w : chat->tmpl.warnings()) spdlog::warn("chat template ({}): {}", chat->origin, w);
  spdlog::info("chat template: {}; {} end-of-turn token(s); tool calls: {}{}{}", chat->origin, chat->stop_ids.size(),
               chat->traits.format, c.tool_format.empty() ? " (detected)" : " (--tool-format)",
               chat->traits.think_tags ? "; <think> reasoning" : "");

  executor_config ec;
  ec.n_threads = threads;
  ec.n_kv_blocks = rt->kv_blocks_;
  ec.n_ctx_seq = rt->n_ctx_;  // LongRoPE picks its factors by the context a request may reach, as llama.cpp does
  ec.kv_groups_by_window = true;
  ec.block_size = c.block_size;
  ec.kv_type = c.kv_type;
  ec.fault_fail_step = c.faults.executor_fail_step;
  ec.fault_stall_step = c.faults.executor_stall_step;
  ec.fault_stall_ms = c.faults.executor_stall_ms;
  rt->executor_ = spawn_executor(sys, rt->model_, ec);
  scheduler_config sc = c.scheduler;  // what the model decides, added
  sc.whole_inputs = hp.encoder.enabled;
  sc.recurrent_state_bytes = hp.state_floats() * sizeof(float);
  kv_cache_config kc;
  kc.n_blocks = rt->kv_blocks_;
  kc.block_size = c.block_size;
  kc.enable_prefix_caching = c.prefix_cache;
  kc.kv_type = kernels::kv_type_name(c.kv_type);
  kc.kv_bytes_per_token = static_cast<uint32_t>(kv_bytes_per_token);
  kc.kv_bytes_per_block = kv_bytes_per_block;
  kc.group_windows = groups.windows();
  kc.group_layers = groups.layer_counts();
  kc.fault_pinned_blocks = c.faults.kv_pinned_blocks;
  // The actors past the executor see the model's tokenizer only (the
  // aliasing pointer keeps the whole model alive as long as they run).
  const std::shared_ptr<const tokenizer> tok(rt->model_, &rt->model_->tokenizer());
  rt->scheduler_ = spawn_scheduler(sys, tok, rt->executor_, sc, kc, c.on_step);
  intake_config ic = c.intake;  // what the model decides, added
  ic.limits.n_ctx = rt->n_ctx_;
  ic.limits.n_vocab = hp.n_vocab;
  ic.limits.embeds_only = hp.encoder.enabled;
  ic.limits.output = hp.encoder.pooling == pooling_kind::none   ? encoder_output::per_token
                    : hp.encoder.pooling == pooling_kind::rank ? encoder_output::score
                                                               : encoder_output::pooled_vector;
  ic.limits.model_name = rt->model_->name();
  ic.chat = std::make_shared<const chat_setup>(std::move(*chat));
  ic.fault_session_crash_rid = c.faults.session_crash_rid;
  if (c.faults.any()) spdlog::warn("fault injection is on (tests only): see actors/runtime/fault_plan.hpp");
  rt->intake_ = spawn_intake(sys, tok, rt->scheduler_, ic, spawn_session);
  spdlog::info("runtime ready: {} ({}), {} threads, {} KV blocks of {} tokens ({} KV, {} bytes per token, {:.0f} MiB), context {} per request",
               rt->model_->name(), rt->model_->quant_name(), threads, rt->kv_blocks_, c.block_size,
               kernels::kv_type_name(c.kv_type), kv_bytes_per_token,
               static_cast<double>(rt->kv_blocks_) * static_cast<double>(kv_bytes_per_block) / 1048576.0, rt->n_ctx_);
  if (groups.n_groups() > 1) {
    std::map<int, int> layers_by_window;  // memory kinds: window (0: full attention) -> layers
    for (const kv_group& g : groups.groups) layers_by_window[g.window] += static_cast<int>(g.layers.size());
    std::string kinds;
    for (const auto& [window, n] : layers_by_window) {
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + (window == 0 ? " full-attention" : " window-" + std::to_string(window)) +
               (n == 1 ? " layer" : " layers");
    }
    spdlog::info("K/V by memory kind: {}, in {} groups of {} layer slots ({} unused); windowed groups give their blocks "
                 "back once the window has passed them",
                 kinds, groups.n_groups(), groups.layers_per_group, groups.n_padding_slots());
  }
  return rt;
}

runtime::~runtime() {
  for (const auto& a : {caf::actor_cast<caf::actor>(intake_), caf::actor_cast<caf::actor>(scheduler_),
                        caf::actor_cast<caf::actor>(executor_)}) {
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
}

}  // namespace cortex
