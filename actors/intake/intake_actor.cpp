#include "actors/intake/intake_actor.hpp"

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/session/session_actor.hpp"
#include "model/tokenizer.hpp"

namespace cortex {

namespace {

struct intake_state {
  std::shared_ptr<const model> mdl;
  scheduler_actor sched;
  std::shared_ptr<const chat_setup> chat;
  std::unique_ptr<request_validator> validator;
  std::unique_ptr<admission_limits> admission;
  std::shared_ptr<auth::access_policy> access;
  uint64_t next_rid = 1;
  bool draining = false;
  static inline const char* name = "cortex.intake";
};

using self_ptr = intake_actor::stateful_pointer<intake_state>;

void reject(self_ptr self, const request_sink_actor& sink, const std::string& client_id, error_report err) {
  spdlog::info("rejected request '{}': {} {}", client_id, errc_name(err.code), err.message);
  self->send(sink, request_rejected{client_id, std::move(err)});
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
        if (st.access) {
          // An embedding generates nothing: only its prompt is charged (auth.md "tokens_per_minute").
          const uint32_t charged_max = req.kind == request_kind::embed ? 0 : v.request.max_tokens;
          auto a = st.access->admit({req.key_id, n_tokens_prompt, charged_max,
                                     req.params.max_tokens_given ? req.params.max_tokens : 0, req.priority});
          if (a.error.code != errc::none) {
            reject(self, sink, req.client_id, std::move(a.error));
            return;
          }
          ticket = std::move(a.ticket);
        }
        if (auto err = st.admission->try_admit(n_tokens_prompt); err.code != errc::none) {
          if (ticket) ticket->revert();
          reject(self, sink, req.client_id, std::move(err));
          return;
        }
        const uint64_t rid = st.next_rid++;
        req.params.max_tokens = v.request.max_tokens;
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
        auto session = spawn_session(self, st.mdl->tokenizer(), std::move(scfg), st.admission->n_waiting() - 1,
                                     session_links{std::move(sink), st.sched, caf::actor_cast<intake_actor>(self), std::move(ticket)});
        self->send(st.sched, admit_atom_v, std::move(adm), std::move(session));
      },
      [self](cancel_atom, uint64_t rid, finish_reason reason) { self->send(self->state.sched, cancel_atom_v, rid, reason); },
      [self](dequeued_atom, uint64_t, uint32_t n_tokens_prompt) { self->state.admission->release(n_tokens_prompt); },
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
