// What intake hands a new session: its config (messages/session_config.hpp),
// its links (where its events go), and the function that spawns one. Here so that
// intake starts sessions without including the session actor (actors never
// include each other); actors/runtime passes spawn_session as the spawner.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include <caf/fwd.hpp>

#include "messages/actors.hpp"
#include "messages/session_config.hpp"

namespace cortex {

class tokenizer;
namespace auth {
class admission_ticket;
}

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

// Spawns a request's session as a child of parent (actors/session's
// spawn_session). tok must outlive it.
using session_spawner = std::function<session_actor(caf::local_actor* parent, const tokenizer& tok,
                                                    session_config cfg, uint32_t queue_pos, session_links links)>;

}  // namespace cortex
