#include "actors/scheduler/scheduler_actor.hpp"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "model/tokenizer.hpp"

namespace cortex {

namespace {

// What the actor keeps per live request besides the core's sequence.
struct request_slot {
  session_actor session;
  sequence_admission admission;  // params for stop checks and the executor's sampler
  bool opened = false;           // the executor has its sampler
  bool started = false;          // scheduled at least once
  bool prefill_done = false;
};

struct scheduler_state {
  std::shared_ptr<const model> mdl;
  executor_actor exec;
  std::unique_ptr<kv_cache_manager> kv;
  std::unique_ptr<scheduler_core> core;
  std::unordered_map<int64_t, request_slot> slots;
  std::vector<uint64_t> to_close;  // samplers to drop with the next step
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
  for (auto& f : st.core->take_finished()) {
    st.finished_by_reason[static_cast<size_t>(f.reason)]++;
    auto it = st.slots.find(f.seq_id);
    if (it == st.slots.end()) continue;
    error_report err;
    if (f.reason == finish_reason::error) {
      err.code = errc::internal;
      err.message = f.detail.empty() ? "the request failed in the engine" : f.detail;
    }
    // The session ignores this when it has already ended (it decides stop,
    // length and deadline itself from the same data).
    self->send(it->second.session, finish_atom_v, f.reason, err);
    if (it->second.opened) st.to_close.push_back(static_cast<uint64_t>(f.seq_id));
    spdlog::debug("[rid {}] scheduler: finished ({}), {} generated, {} preemptions", f.seq_id, finish_reason_name(f.reason),
                  f.n_tokens_generated, f.n_preemptions);
    st.slots.erase(it);
  }
}

void kick(self_ptr self);

void on_step_done(self_ptr self, const sched_plan& plan, engine_step_result& res) {
  auto& st = self->state;
  const auto& tok = st.mdl->tokenizer();
  if (res.failed) {
    st.failed_steps++;
    spdlog::error("scheduler: step {} failed: {}; its {} requests end with an error", res.step_id, res.error, plan.entries.size());
    st.core->abort_step(plan);
  } else {
    std::vector<sched_sampled> sampled;
    std::unordered_map<int64_t, const sampled_output*> by_seq;
    for (const auto& o : res.outputs) {
      const auto seq_id = static_cast<int64_t>(o.rid);
      by_seq[seq_id] = &o;
      auto* s = st.core->find(seq_id);
      auto it = st.slots.find(seq_id);
      // The session applies the same rule; stopping here saves the next step.
      const bool finished = s && it != st.slots.end() &&
                            stop_by_token(it->second.admission.params, tok.is_eog(o.token), o.token,
                                          static_cast<uint32_t>(s->n_tokens_generated() + 1)) != token_stop::none;
      sampled.push_back({seq_id, o.token, finished});
    }
    std::unordered_map<int64_t, embedding_output*> embedding_of;
    for (auto& o : res.embeddings) {  // an embed request's answer: it ends with stop
      sampled.push_back({static_cast<int64_t>(o.rid), 0, true});
      embedding_of[static_cast<int64_t>(o.rid)] = &o;
    }
    // Progress notes for the sessions, taken before update() may end sequences.
    std::vector<std::pair<session_actor, session_update>> notes;
    for (const auto& e : plan.entries) {
      auto it = st.slots.find(e.seq_id);
      auto* s = st.core->find(e.seq_id);
      if (it == st.slots.end() || !s) continue;
      auto& slot = it->second;
      session_update u;
      u.rid = static_cast<uint64_t>(e.seq_id);
      if (!e.is_decode) st.tokens_prefilled += static_cast<uint64_t>(e.n_tokens());
      if (!slot.prefill_done && e.completes) {
        slot.prefill_done = true;
        u.prefill_done = true;
      }
      if (auto o = by_seq.find(e.seq_id); o != by_seq.end()) u.tokens.push_back(*o->second);
      if (auto o = embedding_of.find(e.seq_id); o != embedding_of.end()) u.embedding = std::move(o->second->embedding);
      u.preemptions = static_cast<uint32_t>(s->n_preemptions);
      if (u.prefill_done || !u.tokens.empty()) notes.emplace_back(slot.session, std::move(u));
    }
    st.core->update(plan, sampled);
    for (auto& [session, u] : notes) self->send(session, std::move(u));
  }
  report_finished(self);
  kick(self);
}

void kick(self_ptr self) {
  auto& st = self->state;
  if (st.core->step_in_flight() || !st.core->has_work()) return;
  auto plan = std::make_shared<sched_plan>(st.core->schedule());
  report_finished(self);  // sequences the plan could not fit at all end with an error
  if (plan->empty()) return;
  engine_step step;
  step.step_id = st.next_step_id++;
  step.closed.swap(st.to_close);
  for (const auto& e : plan->entries) {
    auto& slot = st.slots.at(e.seq_id);
    if (!slot.started) {
      // Told at planning time, so the session's queue and prefill times are right.
      slot.started = true;
      session_update u;
      u.rid = static_cast<uint64_t>(e.seq_id);
      u.started = true;
      if (auto* s = st.core->find(e.seq_id)) u.cached_tokens = static_cast<uint32_t>(s->n_tokens_cached);
      self->send(slot.session, std::move(u));
    }
    if (!slot.opened) {
      slot.opened = true;
      sequence_open o;
      o.rid = static_cast<uint64_t>(e.seq_id);
      o.params = slot.admission.params;
      o.seed = slot.admission.seed;
      o.n_logprobs = slot.admission.n_logprobs;
      o.prompt = slot.admission.prompt;
      self->send(st.exec, std::move(o));
    }
    step.entries.push_back({static_cast<uint64_t>(e.seq_id), e.tokens, e.pos0, e.block_table, e.completes,
                            slot.admission.kind == request_kind::embed});
  }
  st.steps++;
  st.batch_tokens += static_cast<uint64_t>(plan->stats.n_tokens_batch);
  st.batch_seqs += static_cast<uint64_t>(plan->stats.n_seqs);
  st.step_seqs_max = std::max(st.step_seqs_max, static_cast<uint32_t>(plan->stats.n_seqs));
  spdlog::trace("scheduler: step {}: {} seqs, {} tokens ({} decode, {} prefill), {}/{} blocks, {} preempted", step.step_id,
                plan->stats.n_seqs, plan->stats.n_tokens_batch, plan->stats.n_tokens_decode, plan->stats.n_tokens_prefill,
                plan->stats.n_blocks_used, plan->stats.n_blocks_total, plan->stats.n_preemptions);
  const auto sent = std::chrono::steady_clock::now();
  self->request(st.exec, caf::infinite, std::move(step))
      .then([self, plan, sent](engine_step_result& res) {
              spdlog::trace("scheduler: step {} done: compute {:.2f} ms, round trip {:.2f} ms", res.step_id, res.compute_ms,
                            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
              on_step_done(self, *plan, res);
            },
            [self, plan](caf::error& err) {
              engine_step_result res;
              res.failed = true;
              res.error = "executor unreachable: " + self->system().render(err);
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
  s.prefix_cache_hit_rate = kv.hit_rate();
  s.tokens_generated = st.core->totals().n_tokens_generated;
  s.tokens_prefilled = st.tokens_prefilled;
  s.steps = st.steps;
  s.preemptions = st.core->totals().n_preemptions;
  s.failed_steps = st.failed_steps;
  s.step_batch_tokens_mean = st.steps ? double(st.batch_tokens) / double(st.steps) : 0;
  s.step_seqs_mean = st.steps ? double(st.batch_seqs) / double(st.steps) : 0;
  s.step_seqs_max = st.step_seqs_max;
  s.finished_by_reason = st.finished_by_reason;
  return s;
}

scheduler_actor::behavior_type scheduler_fn(self_ptr self, std::shared_ptr<const model> m, executor_actor exec,
                                            scheduler_config cfg, kv_cache_config kv_cfg) {
  auto& st = self->state;
  st.mdl = std::move(m);
  st.exec = std::move(exec);
  st.kv = std::make_unique<kv_cache_manager>(kv_cfg);
  st.core = std::make_unique<scheduler_core>(cfg, *st.kv);
  return {
      [self](admit_atom, sequence_admission& a, session_actor session) {
        auto& st = self->state;
        seq_request req;
        req.seq_id = static_cast<int64_t>(a.rid);
        req.priority = a.priority;
        req.tokens_prompt = a.prompt;
        req.max_tokens = static_cast<int32_t>(std::max<uint32_t>(1, a.params.max_tokens));
        req.embed = a.kind == request_kind::embed;
        if (auto s = st.core->add(std::move(req)); !s) {
          error_report err{errc::internal, "scheduler refused the request: " + s.message, 0};
          self->send(session, finish_atom_v, finish_reason::error, err);
          return;
        }
        request_slot slot;
        slot.session = std::move(session);
        slot.admission = std::move(a);
        st.slots.emplace(static_cast<int64_t>(slot.admission.rid), std::move(slot));
        kick(self);
      },
      [self](cancel_atom, uint64_t rid, finish_reason reason) {
        if (self->state.core->finish(static_cast<int64_t>(rid), reason)) {
          report_finished(self);
          kick(self);
        }
      },
      [self](finish_atom, uint64_t rid, finish_reason reason) {
        auto& st = self->state;
        // The session has ended already: drop the slot first so it is not told again.
        auto it = st.slots.find(static_cast<int64_t>(rid));
        if (it != st.slots.end()) it->second.session = nullptr;
        if (st.core->finish(static_cast<int64_t>(rid), reason)) {
          report_finished(self);
          kick(self);
        }
      },
      [self](shutdown_atom) {
        auto& st = self->state;
        std::vector<int64_t> ids;
        for (auto& [id, slot] : st.slots) ids.push_back(id);
        for (auto id : ids) st.core->finish(id, finish_reason::shutdown);
        report_finished(self);
      },
      [self](stats_atom) -> engine_stats { return make_stats(self->state); },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, std::shared_ptr<const model> m, executor_actor exec,
                                const scheduler_config& cfg, const kv_cache_config& kv_cfg) {
  return sys.spawn(scheduler_fn, std::move(m), std::move(exec), cfg, kv_cfg);
}

}  // namespace cortex
