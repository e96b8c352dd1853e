// The intake actor: the runtime's front door. Validates and tokenizes a
// submit, applies admission limits, spawns the request's session and hands
// the sequence to the scheduler. Rejections go to the sink as
// request_rejected (the only event such a submit gets).
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/auth/access_policy.hpp"
#include "actors/intake/request_validator.hpp"
#include "messages/actors.hpp"
#include "model/model.hpp"

namespace cortex {

struct intake_config {
  validation_limits limits;      // n_ctx: positions one request may use
  uint32_t max_waiting = 256;
  uint64_t max_queued_tokens = 262144;
  uint64_t seed = 0;             // for seeds of requests without one (0: from the clock)
  std::shared_ptr<const chat_setup> chat;  // renders `messages`; null: such requests are 501
  std::shared_ptr<auth::access_policy> access;  // null: access control off (see runtime_config)
  uint64_t fault_session_crash_rid = 0;  // injected fault (fault_plan.hpp): this request's session throws; 0: off
};

intake_actor spawn_intake(caf::actor_system& sys, std::shared_ptr<const model> m, scheduler_actor sched,
                          const intake_config& cfg);

}  // namespace cortex
