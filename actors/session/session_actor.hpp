// One actor per request: feeds engine updates to session_core and sends the
// resulting events (accepted, chunks, exactly one finished) to the sink.
// All of a request's events come from this one actor, so they arrive in order.
#pragma once

#include <atomic>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/auth/access_policy.hpp"
#include "actors/session/session_core.hpp"
#include "messages/actors.hpp"

namespace cortex {

struct session_links {
  request_sink_actor sink;
  scheduler_actor scheduler;  // told when the session ends a request itself
  intake_actor intake;        // told when the request leaves the waiting queue
  // The request's hold on its API key (access control on), finished with
  // the completion tokens at the terminal event; released at the latest
  // when the session is destroyed. Null: access control off.
  std::shared_ptr<auth::admission_ticket> ticket;
  // Set once the request has left the waiting queue (its admission slot
  // released), by whoever releases it first: the session, or intake's
  // guard when the session dies before (intake_actor.cpp). Never null.
  std::shared_ptr<std::atomic<bool>> dequeued = std::make_shared<std::atomic<bool>>(false);
};

// Spawned by intake. `tok` must outlive the actor (the runtime's model).
// Sends `accepted` at once.
session_actor spawn_session(caf::local_actor* parent, const tokenizer& tok, session_config cfg, uint32_t queue_pos,
                            session_links links);

}  // namespace cortex
