// One actor per request: feeds engine updates to session_core and sends the
// resulting events (accepted, chunks, exactly one finished) to the sink.
// All of a request's events come from this one actor, so they arrive in order.
#pragma once

#include <caf/fwd.hpp>

#include "actors/session/session_core.hpp"
#include "messages/actors.hpp"
#include "messages/session_start.hpp"

namespace cortex {

// Spawned by intake (through the session_spawner the runtime gives it).
// `tok` must outlive the actor (the runtime's model).
// Sends `accepted` at once.
session_actor spawn_session(caf::local_actor* parent, const tokenizer& tok, session_config cfg, uint32_t queue_pos,
                            session_links links);

}  // namespace cortex
