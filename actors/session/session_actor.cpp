#include "actors/session/session_actor.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/auth/access_policy.hpp"

namespace cortex {

namespace {

// The session's clock is the actor system's clock (steady_clock in
// production), so its timings and its deadline check agree with the timer
// that delayed_send sets, also under CAF's test coordinator, whose clock
// moves only when a test advances it.
double ms_of(caf::actor_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

struct session_state {
  std::unique_ptr<session_core> core;
  session_links links;
  uint32_t n_tokens_prompt = 0;
  bool fault_crash = false;  // injected fault: throw on the first update
  static inline const char* name = "cortex.session";
};

using self_ptr = session_actor::stateful_pointer<session_state>;

void release_admission(self_ptr self) {
  auto& st = self->state;
  if (st.links.dequeued->exchange(true)) return;
  self->send(st.links.intake, dequeued_atom_v, st.core->rid(), st.n_tokens_prompt);
}

void emit(self_ptr self, session_events& ev, bool tell_scheduler) {
  auto& st = self->state;
  if (ev.chunk) self->send(st.links.sink, std::move(*ev.chunk));
  if (!ev.finished) return;
  const auto reason = ev.finished->reason;
  spdlog::info("[rid {}] finished: {} ({} prompt, {} cached, {} generated tokens, {:.1f} ms, {:.1f} tok/s, {} preemptions)",
               st.core->rid(), finish_reason_name(reason), ev.finished->prompt_tokens, ev.finished->cached_tokens,
               ev.finished->completion_tokens, ev.finished->timings.total_ms, ev.finished->timings.tokens_per_s,
               ev.finished->preemptions);
  // The key's slot and the admission slot are released before the terminal
  // is sent: a client that submits again on seeing it must find them free.
  if (st.links.ticket) st.links.ticket->finish(ev.finished->completion_tokens);
  release_admission(self);
  self->send(st.links.sink, std::move(*ev.finished));
  if (tell_scheduler) self->send(st.links.scheduler, finish_atom_v, st.core->rid(), reason);
  self->quit();
}

request_accepted accepted_of(const session_config& cfg, uint32_t queue_pos) {
  request_accepted acc;
  acc.rid = cfg.rid;
  acc.client_id = cfg.request.client_id;
  acc.prompt_tokens = cfg.n_tokens_prompt;
  acc.queue_pos = queue_pos;
  acc.tags = cfg.request.tags;
  return acc;
}

// A sink on another node (a router, issue 14) may vanish with its node:
// then nobody reads this request, which ends as a gone client's would,
// freeing its KV blocks. (A local sink lives as long as its process.)
void watch_remote_sink(self_ptr self) {
  if (self->state.links.sink.node() == self->node()) return;
  self->monitor(self->state.links.sink);
  self->set_down_handler([self](caf::down_msg&) {
    spdlog::info("[rid {}] its sink's node is gone: cancelling", self->state.core->rid());
    self->send(self->state.links.scheduler, cancel_atom_v, self->state.core->rid(), finish_reason::client_gone);
  });
}

session_actor::behavior_type session_fn(self_ptr self, const tokenizer* tok, session_config cfg, uint32_t queue_pos,
                                        session_links links) {
  auto& st = self->state;
  st.links = std::move(links);
  st.n_tokens_prompt = cfg.n_tokens_prompt;
  st.fault_crash = cfg.fault_crash;
  request_accepted acc = accepted_of(cfg, queue_pos);
  auto now_ms = [self] { return ms_of(self->clock().now()); };
  st.core = std::make_unique<session_core>(*tok, std::move(cfg), now_ms);
  self->send(st.links.sink, std::move(acc));
  watch_remote_sink(self);
  if (auto at = st.core->deadline_at_ms()) {
    const auto in = std::chrono::microseconds(static_cast<int64_t>((std::max(0.0, *at - now_ms()) + 1.0) * 1000.0));
    self->delayed_send(self, in, deadline_atom_v);
  }
  return {
      [self](session_update& u) {
        if (self->state.fault_crash) throw std::runtime_error("injected fault: session crash");
        auto ev = self->state.core->on_update(u);
        if (u.started) release_admission(self);
        // A stop the session decided (stop string; EOS and length the
        // scheduler sees too) must reach the scheduler.
        emit(self, ev, true);
      },
      [self](finish_atom, finish_reason reason, status& err) {
        auto ev = self->state.core->finish(reason, std::move(err));
        emit(self, ev, false);
      },
      [self](deadline_atom) {
        auto ev = self->state.core->check_deadline();
        emit(self, ev, true);
      },
  };
}

}  // namespace

session_actor spawn_session(caf::local_actor* parent, const tokenizer& tok, session_config cfg, uint32_t queue_pos,
                            session_links links) {
  return parent->spawn(session_fn, &tok, std::move(cfg), queue_pos, std::move(links));
}

}  // namespace cortex
