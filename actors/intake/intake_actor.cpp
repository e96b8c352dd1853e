#include "actors/intake/intake_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "messages/session_start.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

namespace {

struct intake_state {
  std::shared_ptr<const tokenizer> tok;  // the model's
  scheduler_actor sched;
  std::unique_ptr<intake_core> core;
  session_spawner spawn_session;
  request_id fault_session_crash_rid = 0;  // injected fault; 0: off (rids start at 1)
  static inline const char* name = "cortex.intake";
};

using self_ptr = intake_actor::stateful_pointer<intake_state>;

void reject(self_ptr self, const request_sink_actor& sink, const std::string& client_id, status err) {
  spdlog::info("rejected request '{}': {} {}", client_id, errc_name(err.code), err.message);
  self->send(sink, request_rejected{client_id, std::move(err)});
}

// A session that dies without ending its request (an exception in a
// handler, a kill) would leave its client waiting forever and its sequence
// holding KV blocks. This guard, run when the session terminates, ends such
// a request in the session's place: the sink gets its terminal event (error
// internal), the scheduler frees the sequence, the admission slot is
// released if the session had not. A normal exit (the session sent its
// terminal) does nothing. Thread: runs on the dying actor's thread, so it
// only sends (anon_send is thread-safe).
void guard_session(const session_actor& session, const session_links& links, request_id rid, const std::string& client_id,
                   uint32_t n_tokens_prompt) {
  auto* a = caf::actor_cast<caf::abstract_actor*>(session);
  a->attach_functor([sink = links.sink, sched = links.scheduler, intake = links.intake, dequeued = links.dequeued, rid,
                     client_id, n_tokens_prompt](const caf::error& reason) {
    if (!reason || reason == caf::exit_reason::normal) return;
    spdlog::error("[rid {}] session died ({}): the request ends with an error", rid, caf::to_string(reason));
    request_finished f;
    f.rid = rid;
    f.client_id = client_id;
    f.reason = finish_reason::error;
    f.prompt_tokens = n_tokens_prompt;
    f.error = {errc::internal,
               "the request's session failed (" + caf::to_string(reason) +
                   "); this is a server bug: retry the request and report it",
               0};
    // The slot first: a client that submits again on seeing the terminal must find it free.
    if (!dequeued->exchange(true)) caf::anon_send(intake, dequeued_atom_v, rid, n_tokens_prompt);
    caf::anon_send(sched, finish_atom_v, rid, finish_reason::error);
    caf::anon_send(sink, std::move(f));
  });
}

// Starts an admitted request: its session (guarded), then its sequence.
void start(self_ptr self, intake_admission& a, request_sink_actor sink) {
  auto& st = self->state;
  spdlog::info("[rid {}] accepted '{}'{}: {} prompt tokens, max_tokens {}, priority {}", a.rid, a.request.client_id,
               a.request.key_id.empty() ? std::string() : " of key '" + a.request.key_id + "'", a.n_tokens_prompt,
               a.request.params.max_tokens, a.request.priority);
  session_config scfg;
  scfg.rid = a.rid;
  scfg.request = std::move(a.request);
  scfg.n_tokens_prompt = a.n_tokens_prompt;
  scfg.fault_crash = a.rid == st.fault_session_crash_rid;
  const std::string client_id = scfg.request.client_id;
  session_links links{std::move(sink), st.sched, caf::actor_cast<intake_actor>(self), std::move(a.ticket)};
  auto session = st.spawn_session(self, *st.tok, std::move(scfg), a.queue_pos, links);
  guard_session(session, links, a.rid, client_id, a.n_tokens_prompt);
  self->send(st.sched, admit_atom_v, std::move(a.sequence), std::move(session));
}

intake_actor::behavior_type intake_fn(self_ptr self, std::shared_ptr<const tokenizer> tok, scheduler_actor sched,
                                      intake_config cfg, session_spawner spawn) {
  auto& st = self->state;
  st.tok = std::move(tok);
  st.sched = std::move(sched);
  st.spawn_session = std::move(spawn);
  st.fault_session_crash_rid = cfg.fault_session_crash_rid;
  st.core = std::make_unique<intake_core>(cfg, *st.tok);
  return {
      [self](submit_atom, generation_request& req, request_sink_actor sink) {
        const std::string client_id = req.client_id;
        intake_decision d = self->state.core->admit(std::move(req));
        if (d.ok()) start(self, d.admitted, std::move(sink));
        else reject(self, sink, client_id, std::move(d.error));
      },
      [self](cancel_atom, request_id rid, finish_reason reason) { self->send(self->state.sched, cancel_atom_v, rid, reason); },
      [self](dequeued_atom, request_id, uint32_t n_tokens_prompt) { self->state.core->release(n_tokens_prompt); },
      [self](group_done_atom, const std::string& group) { self->state.core->close_group(group); },
      [self](drain_atom) { self->state.core->drain(); },
      [self](shutdown_atom) {
        self->state.core->drain();
        self->send(self->state.sched, shutdown_atom_v);
      },
      [self](stats_atom) { return self->delegate(self->state.sched, stats_atom_v); },
  };
}

}  // namespace

intake_actor spawn_intake(caf::actor_system& sys, std::shared_ptr<const tokenizer> tok, scheduler_actor sched,
                          const intake_config& cfg, session_spawner spawn) {
  return sys.spawn(intake_fn, std::move(tok), std::move(sched), cfg, std::move(spawn));
}

}  // namespace cortex
