// What the scheduler keeps per live request besides scheduler_core's
// sequence: the session to tell, the admission (sampling parameters for the
// executor and the stop checks), and which one-time notes were already sent
// (the executor's sampler opened, the session told it started, prefill done).
// It turns one step's plan and result into the messages the scheduler actor
// sends, as plain data, so the bookkeeping is tested without an actor system.
//
// `Session` is the session handle (session_actor in the actor; any copyable
// value in tests); a default-constructed Session means "already ended, do not
// tell it". Not thread-safe: one owner (the scheduler actor).
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/scheduler/sched_plan.hpp"
#include "actors/scheduler/scheduler_core.hpp"
#include "messages/engine.hpp"
#include "messages/errors.hpp"

namespace cortex {

template <class Session>
class request_slots {
 public:
  // Messages for a planned step, in the order the actor sends them.
  struct step_start {
    std::vector<std::pair<Session, session_update>> started;  // first time scheduled
    std::vector<sequence_open> opens;                         // samplers the executor needs first
    engine_step step;                                         // entries, closed samplers (step_id unset)
  };
  struct finished_note {
    Session session;      // default-constructed: the session has ended already
    finish_reason reason = finish_reason::stop;
    status error;   // ok unless reason == error
  };

  // A new request. Fails (internal: rids are intake's, a duplicate is a bug) when `rid` is still live.
  status add(request_id rid, Session session, sequence_admission admission) {
    if (slots_.count(rid) != 0) {
      return fail(errc::internal, "scheduler: request " + std::to_string(rid) + " is already live");
    }
    slot s;
    s.session = std::move(session);
    s.admission = std::move(admission);
    slots_.emplace(rid, std::move(s));
    return status::ok();
  }

  bool contains(request_id rid) const { return slots_.count(rid) != 0; }
  // The ended requests whose samplers (and states) the executor still
  // holds, taken to be sent now (when no step is coming to carry them).
  std::vector<request_id> take_closes() { return std::exchange(to_close_, {}); }
  // Requests the executor holds a sampler, pooled sum or recurrent state for:
  // opened and not yet closed.
  size_t n_held_by_executor() const {
    size_t n = to_close_.size();
    for (const auto& [rid, s] : slots_) n += s.opened ? 1 : 0;
    return n;
  }
  size_t size() const { return slots_.size(); }
  std::vector<request_id> ids() const {
    std::vector<request_id> out;
    for (const auto& [rid, s] : slots_) out.push_back(rid);
    return out;
  }
  const sequence_admission* admission(request_id rid) const {
    const auto it = slots_.find(rid);
    return it == slots_.end() ? nullptr : &it->second.admission;
  }

  // The session ended the request itself: it is not told again.
  void forget_session(request_id rid) {
    if (auto it = slots_.find(rid); it != slots_.end()) it->second.session = Session{};
  }

  // Marks the plan's requests started and opened, and builds the step with
  // the samplers to close first. REQUIRES: every entry's rid was added.
  step_start begin_step(const sched_plan& plan, const scheduler_core& core) {
    step_start out;
    out.step.closed.swap(to_close_);
    for (const step_entry& e : plan.entries) {
      slot& s = slots_.at(e.rid);
      if (!s.started) {
        s.started = true;
        session_update u;
        u.rid = e.rid;
        u.started = true;
        if (const sequence* q = core.find(e.rid)) u.cached_tokens = static_cast<uint32_t>(q->n_tokens_cached);
        out.started.emplace_back(s.session, std::move(u));
      }
      // Embed requests (prefill only) get no sampler; they count as opened
      // so that their close still drops the executor's pooled sum.
      if (!s.opened && s.admission.kind != request_kind::embed) {
        sequence_open o;
        o.rid = e.rid;
        o.params = s.admission.params;
        o.seed = s.admission.seed;
        o.n_logprobs = s.admission.n_logprobs;
        o.tokens_prompt = s.admission.tokens_prompt;
        out.opens.push_back(std::move(o));
      }
      s.opened = true;
      out.step.entries.push_back(e);
    }
    return out;
  }

  // The session's progress notes for a step that ran (taken before
  // core.update() may end sequences): prefill done once, the sampled token
  // or an embed request's embedding (moved out of `embeddings`), preemptions
  // so far. Entries of unknown or finished requests are skipped.
  std::vector<std::pair<Session, session_update>> progress(const sched_plan& plan,
                                                          const std::vector<sampled_output>& outputs,
                                                          std::vector<embedding_output>& embeddings,
                                                          const scheduler_core& core) {
    std::unordered_map<request_id, std::vector<const sampled_output*>> by_rid;  // in order (speculative: several)
    for (const auto& o : outputs) by_rid[o.rid].push_back(&o);
    std::unordered_map<request_id, embedding_output*> embedding_of;
    for (auto& o : embeddings) embedding_of[o.rid] = &o;
    std::vector<std::pair<Session, session_update>> notes;
    for (const step_entry& e : plan.entries) {
      auto it = slots_.find(e.rid);
      const sequence* q = core.find(e.rid);
      if (it == slots_.end() || q == nullptr) continue;
      slot& s = it->second;
      session_update u;
      u.rid = e.rid;
      if (!s.prefill_done && e.sample) {
        s.prefill_done = true;
        u.prefill_done = true;
      }
      if (auto o = by_rid.find(e.rid); o != by_rid.end()) {
        for (const sampled_output* t : o->second) u.tokens.push_back(*t);
        if (e.n_draft > 0) {
          u.spec_drafted = static_cast<uint32_t>(e.n_draft);
          u.spec_accepted = static_cast<uint32_t>(std::min<size_t>(o->second.size() - 1, static_cast<size_t>(e.n_draft)));
        }
      }
      if (auto o = embedding_of.find(e.rid); o != embedding_of.end()) u.embedding = std::move(o->second->embedding);
      u.preemptions = static_cast<uint32_t>(q->n_preemptions);
      if (u.prefill_done || !u.tokens.empty()) notes.emplace_back(s.session, std::move(u));
    }
    return notes;
  }

  // A terminal record from the core: drops the slot and queues its sampler to
  // close with the next step. Empty when the request is unknown here.
  std::vector<finished_note> finish(const std::vector<seq_finished>& records) {
    std::vector<finished_note> out;
    for (const seq_finished& f : records) {
      auto it = slots_.find(f.rid);
      if (it == slots_.end()) continue;
      finished_note n;
      n.session = it->second.session;
      n.reason = f.reason;
      if (f.reason == finish_reason::error) {
        n.error = as_request_error(f.error);
      }
      if (it->second.opened) to_close_.push_back(f.rid);
      slots_.erase(it);
      out.push_back(std::move(n));
    }
    return out;
  }

 private:
  struct slot {
    Session session;
    sequence_admission admission;
    bool opened = false;        // the executor has its sampler
    bool started = false;       // scheduled at least once
    bool prefill_done = false;  // the session was told
  };
  std::unordered_map<request_id, slot> slots_;
  std::vector<request_id> to_close_;  // samplers to drop with the next step
};

}  // namespace cortex
