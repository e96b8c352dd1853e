// The intake actor: the runtime's front door. Admits a submit (intake_core:
// validation, tokenizing, admission limits), spawns the request's session and
// hands the sequence to the scheduler. Rejections go to the sink as
// request_rejected (the only event such a submit gets).
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/intake/intake_core.hpp"
#include "messages/actors.hpp"
#include "messages/session_start.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

// spawn starts each admitted request's session (actors/runtime passes
// actors/session's spawn_session).
intake_actor spawn_intake(caf::actor_system& sys, std::shared_ptr<const tokenizer> tok, scheduler_actor sched,
                          const intake_config& cfg, session_spawner spawn);

}  // namespace cortex
