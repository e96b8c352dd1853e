#include "actors/intake/intake_actor.hpp"

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/intake/admission_groups.hpp"
#include "actors/session/session_actor.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

namespace {

struct intake_state {
  std::shared_ptr<const model> mdl;
  scheduler_actor sched;
  std::shared_ptr<const chat_setup> chat;
  std::unique_ptr<request_validator> validator;
  std::unique_ptr<admission_limits> admission;
  std::shared_ptr<auth::access_policy> access;
  std::unique_ptr<admission_groups> groups;  // with access control
  uint64_t next_rid = 1;
  uint64_t fault_session_crash_rid = 0;  // injected fault; 0: off (rids start at 1)
  bool draining = false;
  static inline const char* name = "cortex.intake";
};

using self_ptr = intake_actor::stateful_pointer<intake_state>;

void reject(self_ptr self, const request_sink_actor& sink, const std::string& client_id, error_report err) {
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

intake_actor::behavior_type intake_fn(self_ptr self, std::shared_ptr<const model> m, scheduler_actor sched,
                                      intake_config cfg) {
  auto& st = self->state;
  st.mdl = std::move(m);
  st.sched = std::move(sched);
  const uint64_t seed = cfg.seed ? cfg.seed : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  st.validator = std::make_unique<request_validator>(cfg.limits, st.mdl->tokenizer(), seed);
  st.chat = cfg.chat;
  st.access = cfg.access;
  st.fault_session_crash_rid = cfg.fault_session_crash_rid;
  if (st.access) st.groups = std::make_unique<admission_groups>(st.access);
  st.validator->set_chat(st.chat.get());
  st.admission = std::make_unique<admission_limits>(cfg.max_waiting, cfg.max_queued_tokens);
  return {
      [self](submit_atom, generation_request& req, request_sink_actor sink) {
        auto& st = self->state;
        if (st.draining) {
          reject(self, sink, req.client_id, {errc::draining, "the server is shutting down; submit to another instance", 1000});
          return;
        }
        if (st.access) {
          if (req.key_id.empty()) {
            reject(self, sink, req.client_id, {errc::unauthenticated, "this server requires an API key (auth.md)", 0});
            return;
          }
          // A tier's cap bounds the default max_tokens; an explicit larger ask is 403 (admit below).
          if (auto cap = st.access->max_tokens_cap(req.key_id); cap && !req.params.max_tokens_given)
            req.params.max_tokens = std::min(req.params.max_tokens, *cap);
        }
        auto v = st.validator->validate(req);
        if (!v.ok()) {
          reject(self, sink, req.client_id, std::move(v.error));
          return;
        }
        const auto n_tokens_prompt = static_cast<uint32_t>(v.request.tokens_prompt.size());
        std::shared_ptr<auth::admission_ticket> ticket;
        if (st.groups) {
          auto a = st.groups->admit(req, n_tokens_prompt, v.request.max_tokens);
          if (a.error.code != errc::none) {
            reject(self, sink, req.client_id, std::move(a.error));
            return;
          }
          ticket = std::move(a.ticket);
        }
        if (auto err = st.admission->try_admit(n_tokens_prompt); err.code != errc::none) {
          if (st.groups) st.groups->undo(req, ticket, err);
          reject(self, sink, req.client_id, std::move(err));
          return;
        }
        const uint64_t rid = st.next_rid++;
        req.params.max_tokens = v.request.max_tokens;
        req.params.grammar = std::move(v.request.grammar);  // json_schema resolved into it
        req.params.json_schema.clear();
        req.output = v.request.output;
        auto& stops = req.params.stop_token_ids;
        stops.insert(stops.end(), v.request.chat_stop_ids.begin(), v.request.chat_stop_ids.end());
        spdlog::info("[rid {}] accepted '{}'{}: {} prompt tokens, max_tokens {}, priority {}", rid, req.client_id,
                     req.key_id.empty() ? std::string() : " of key '" + req.key_id + "'", n_tokens_prompt, v.request.max_tokens,
                     req.priority);
        sequence_admission adm;
        adm.rid = rid;
        adm.tokens_prompt = std::move(v.request.tokens_prompt);
        adm.params = req.params;
        adm.seed = v.request.seed;
        adm.priority = req.priority;
        adm.n_logprobs = req.n_logprobs;
        adm.kind = req.kind;
        session_config scfg;
        scfg.rid = rid;
        scfg.request = std::move(req);
        scfg.n_tokens_prompt = n_tokens_prompt;
        scfg.fault_crash = rid == st.fault_session_crash_rid;
        const std::string client_id = scfg.request.client_id;
        session_links links{std::move(sink), st.sched, caf::actor_cast<intake_actor>(self), std::move(ticket)};
        auto session = spawn_session(self, st.mdl->tokenizer(), std::move(scfg), st.admission->n_waiting() - 1, links);
        guard_session(session, links, rid, client_id, n_tokens_prompt);
        self->send(st.sched, admit_atom_v, std::move(adm), std::move(session));
      },
      [self](cancel_atom, uint64_t rid, finish_reason reason) { self->send(self->state.sched, cancel_atom_v, rid, reason); },
      [self](dequeued_atom, uint64_t, uint32_t n_tokens_prompt) { self->state.admission->release(n_tokens_prompt); },
      [self](group_done_atom, const std::string& group) {
        if (auto& g = self->state.groups) g->close(group);
      },
      [self](drain_atom) { self->state.draining = true; },
      [self](shutdown_atom) {
        self->state.draining = true;
        self->send(self->state.sched, shutdown_atom_v);
      },
      [self](stats_atom) { return self->delegate(self->state.sched, stats_atom_v); },
  };
}

}  // namespace

intake_actor spawn_intake(caf::actor_system& sys, std::shared_ptr<const model> m, scheduler_actor sched,
                          const intake_config& cfg) {
  return sys.spawn(intake_fn, std::move(m), std::move(sched), cfg);
}

}  // namespace cortex
