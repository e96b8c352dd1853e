#include "actors/scheduler/scheduler_actor.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/scheduler/request_slots.hpp"
#include "kernels/cpu_features.hpp"
#include "messages/caf_status.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

namespace {

struct scheduler_state {
  std::shared_ptr<const tokenizer> tok;  // the model's: its end-of-generation tokens
  executor_actor exec;
  std::unique_ptr<kv_cache_manager> kv;
  std::unique_ptr<scheduler_core> core;
  request_slots<session_actor> slots;
  step_observer on_step;
  uint64_t next_step_id = 1;
  // Statistics.
  uint64_t steps = 0, failed_steps = 0, batch_tokens = 0, batch_seqs = 0, tokens_prefilled = 0;
  uint32_t step_seqs_max = 0;
  std::vector<uint64_t> finished_by_reason = std::vector<uint64_t>(7, 0);
  static inline const char* name = "cortex.scheduler";
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

void report_finished(self_ptr self) {
  auto& st = self->state;
  const std::vector<seq_finished> records = st.core->take_finished();
  for (const auto& f : records) {
    st.finished_by_reason[static_cast<size_t>(f.reason)]++;
    spdlog::debug("[rid {}] scheduler: finished ({}), {} generated, {} preemptions", f.rid, finish_reason_name(f.reason),
                  f.n_tokens_generated, f.n_preemptions);
  }
  // A session ignores this when it has already ended (it decides stop,
  // length and deadline itself from the same data).
  for (auto& n : st.slots.finish(records)) {
    if (n.session) self->send(n.session, finish_atom_v, n.reason, std::move(n.error));
  }
}

void kick(self_ptr self);
void count_step(scheduler_state& st, const sched_plan& plan, uint64_t step_id);
void send_step(self_ptr self, std::shared_ptr<sched_plan> plan, engine_step step);

void on_step_done(self_ptr self, const sched_plan& plan, engine_step_result& res) {
  auto& st = self->state;
  const tokenizer& tok = *st.tok;
  if (res.failed()) {
    st.failed_steps++;
    spdlog::error("scheduler: step {} failed: {} ({}); its {} requests end with an error", res.step_id, res.error.message,
                  errc_name(res.error.code), plan.entries.size());
    st.core->abort_step(plan);
  } else {
    // The session applies the same rule; stopping here saves the next step.
    const auto ends_by_token = [&st, &tok](request_id rid, int32_t token, uint32_t n_generated) {
      const sequence_admission* a = st.slots.admission(rid);
      return a && stop_by_token(a->params, tok.is_eog(token), token, n_generated) != token_stop::none;
    };
    const std::vector<sched_sampled> sampled = st.core->cut_sampled(res, ends_by_token);
    for (const auto& e : plan.entries) {
      if (!e.is_decode && st.core->find(e.rid) && st.slots.contains(e.rid)) st.tokens_prefilled += static_cast<uint64_t>(e.n_tokens());
    }
    // Requests the executor refused on their own (before update(): the first
    // reason recorded for a sequence is the one it ends with).
    for (auto& f : res.failures) st.core->finish(f.rid, finish_reason::error, std::move(f.error));
    // Progress notes for the sessions, taken before update() may end sequences.
    auto notes = st.slots.progress(plan, res.outputs, res.embeddings, *st.core);
    st.core->update(plan, sampled);
    for (auto& [session, u] : notes) self->send(session, std::move(u));
  }
  report_finished(self);
  kick(self);
}

void kick(self_ptr self) {
  auto& st = self->state;
  if (st.core->step_in_flight()) return;
  if (!st.core->has_work()) {
    // Idle: no step will carry the closes, so the executor gets them now
    // (a recurrent model's state slots are freed when the streams end).
    for (request_id rid : st.slots.take_closes()) self->send(st.exec, cancel_atom_v, rid);
    return;
  }
  auto plan = std::make_shared<sched_plan>(st.core->schedule());
  report_finished(self);  // sequences the plan could not fit at all end with an error
  if (plan->empty()) return;
  auto start = st.slots.begin_step(*plan, *st.core);
  // Told at planning time, so the session's queue and prefill times are right.
  for (auto& [session, u] : start.started) self->send(session, std::move(u));
  for (auto& o : start.opens) self->send(st.exec, std::move(o));
  start.step.step_id = st.next_step_id++;
  count_step(st, *plan, start.step.step_id);
  send_step(self, plan, std::move(start.step));
}

void count_step(scheduler_state& st, const sched_plan& plan, uint64_t step_id) {
  st.steps++;
  st.batch_tokens += static_cast<uint64_t>(plan.stats.n_tokens_batch);
  st.batch_seqs += static_cast<uint64_t>(plan.stats.n_seqs);
  st.step_seqs_max = std::max(st.step_seqs_max, static_cast<uint32_t>(plan.stats.n_seqs));
  spdlog::trace("scheduler: step {}: {} seqs, {} tokens ({} decode, {} prefill), {}/{} blocks, {} preempted", step_id,
                plan.stats.n_seqs, plan.stats.n_tokens_batch, plan.stats.n_tokens_decode, plan.stats.n_tokens_prefill,
                plan.stats.n_blocks_used, plan.stats.n_blocks_total, plan.stats.n_preemptions);
}

// The step to the executor; its result (or the executor's loss) comes back to on_step_done.
void send_step(self_ptr self, std::shared_ptr<sched_plan> plan, engine_step step) {
  const auto sent = std::chrono::steady_clock::now();
  auto& st = self->state;
  self->request(st.exec, caf::infinite, std::move(step))
      .then([self, plan, sent](engine_step_result& res) {
              const double round_trip_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
              if (self->state.on_step) self->state.on_step(round_trip_ms / 1000, static_cast<uint32_t>(plan->stats.n_tokens_batch));
              // The step cost model learns from the forward pass alone (what prefill chunk sizes change);
              // the rest of the round trip is the per-step overhead the draft governor adds to it.
              if (!res.failed()) self->state.core->observe_step(*plan, res.compute_ms > 0 ? res.compute_ms : round_trip_ms, round_trip_ms);
              spdlog::trace("scheduler: step {} done: compute {:.2f} ms (predicted {:.2f}, target {:.2f}), round trip {:.2f} ms",
                            res.step_id, res.compute_ms, plan->stats.predicted_ms, plan->stats.target_ms, round_trip_ms);
              on_step_done(self, *plan, res);
            },
            [self, plan](caf::error& err) {
              engine_step_result res;
              res.error = to_status(err, "executor unreachable");
              on_step_done(self, *plan, res);
            });
}

engine_stats make_stats(const scheduler_state& st) {
  engine_stats s;
  const auto kv = st.kv->stats();
  s.running = static_cast<uint32_t>(st.core->n_running());
  s.waiting = static_cast<uint32_t>(st.core->n_waiting());
  s.kv_blocks_used = static_cast<uint32_t>(kv.n_blocks_used);
  s.kv_blocks_total = static_cast<uint32_t>(kv.n_blocks_total);
  s.kv_blocks_cached = static_cast<uint32_t>(kv.n_blocks_cached);
  s.kv_type = st.kv->kv_type();
  s.kernel_isa = kernels::isa_name(kernels::active_isa());
  s.kv_bytes_per_token = st.kv->kv_bytes_per_token();
  s.kv_bytes_used = kv.n_bytes_used();
  s.kv_bytes_full = kv.n_bytes_full();
  s.kv_bytes_total = static_cast<uint64_t>(kv.n_blocks_total) * kv.n_bytes_per_block;
  for (const kv_group_stats& g : kv.groups) {
    s.kv_group_windows.push_back(static_cast<uint32_t>(g.window));
    s.kv_group_layers.push_back(static_cast<uint32_t>(g.n_layers));
    s.kv_group_blocks_used.push_back(static_cast<uint32_t>(g.n_blocks_used));
    s.kv_group_blocks_released.push_back(static_cast<uint32_t>(g.n_blocks_released));
  }
  s.prefix_cache_hit_rate = kv.hit_rate();
  s.prefix_cache_enabled = st.kv->prefix_caching();
  if (const uint64_t state = st.core->config().recurrent_state_bytes; state > 0) {
    s.state_slots_used = static_cast<uint32_t>(st.slots.n_held_by_executor());
    s.state_bytes_per_slot = state;
  }
  s.prefix_tokens_queried = kv.n_tokens_queried;
  s.prefix_tokens_hit = kv.n_tokens_hit;
  s.tokens_generated = st.core->totals().n_tokens_generated;
  s.tokens_prefilled = st.tokens_prefilled;
  s.steps = st.steps;
  s.preemptions = st.core->totals().n_preemptions;
  s.failed_steps = st.failed_steps;
  s.spec_drafted_tokens = st.core->totals().n_tokens_drafted;
  s.spec_accepted_tokens = st.core->totals().n_tokens_accepted;
  s.step_batch_tokens_mean = st.steps ? double(st.batch_tokens) / double(st.steps) : 0;
  s.step_seqs_mean = st.steps ? double(st.batch_seqs) / double(st.steps) : 0;
  s.step_seqs_max = st.step_seqs_max;
  s.finished_by_reason = st.finished_by_reason;
  return s;
}

void on_admit(self_ptr self, sequence_admission& a, const session_actor& session) {
  auto& st = self->state;
  status s = st.core->add(seq_request_of(a, st.core->config().speculative, st.core->config().recurrent_state_bytes > 0));  // duplicate_id, invalid_param
  if (s) s = st.slots.add(a.rid, session, std::move(a));  // in step with the core: cannot fail then
  if (!s) {
    self->send(session, finish_atom_v, finish_reason::error, s);
    return;
  }
  kick(self);
}

// A request ends before the scheduler ended it: cancelled, or its session is gone.
void end_early(self_ptr self, request_id rid, finish_reason reason) {
  if (self->state.core->finish(rid, reason)) {
    report_finished(self);
    kick(self);
  }
}

scheduler_actor::behavior_type scheduler_fn(self_ptr self, std::shared_ptr<const tokenizer> tok, executor_actor exec,
                                            scheduler_config cfg, kv_cache_config kv_cfg, step_observer on_step) {
  auto& st = self->state;
  st.on_step = std::move(on_step);
  st.tok = std::move(tok);
  st.exec = std::move(exec);
  if (cfg.recurrent_state_bytes > 0) {
    // Recurrent layers: a cached prefix's K/V would not restore their state
    // (a wrong hit is a wrong answer), and drafts would advance it past
    // tokens that may be rejected. Both off; stats says prefix_cache_enabled false.
    kv_cfg.enable_prefix_caching = false;
    cfg.speculative = {};
  }
  st.kv = std::make_unique<kv_cache_manager>(kv_cfg);
  st.core = std::make_unique<scheduler_core>(cfg, *st.kv);
  return {
      [self](admit_atom, sequence_admission& a, session_actor session) { on_admit(self, a, session); },
      [self](cancel_atom, request_id rid, finish_reason reason) { end_early(self, rid, reason); },
      [self](finish_atom, request_id rid, finish_reason reason) {
        self->state.slots.forget_session(rid);  // it has ended already: it is not told again
        end_early(self, rid, reason);
      },
      [self](shutdown_atom) {
        auto& st = self->state;
        for (const request_id rid : st.slots.ids()) st.core->finish(rid, finish_reason::shutdown);
        report_finished(self);
      },
      [self](stats_atom) -> engine_stats { return make_stats(self->state); },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, std::shared_ptr<const tokenizer> tok, executor_actor exec,
                                const scheduler_config& cfg, const kv_cache_config& kv_cfg, step_observer on_step) {
  return sys.spawn(scheduler_fn, std::move(tok), std::move(exec), cfg, kv_cfg, std::move(on_step));
}

}  // namespace cortex
