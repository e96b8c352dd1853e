// The executor actor: runs engine steps on the model. Spawn it detached so
// its forward passes never occupy a CAF worker thread.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/executor/step_runner.hpp"
#include "messages/actors.hpp"

namespace cortex {

// Spawns the executor (detached). The model is shared read-only.
executor_actor spawn_executor(caf::actor_system& sys, std::shared_ptr<const model> m, const executor_config& cfg);

}  // namespace cortex
