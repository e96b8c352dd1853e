// The scheduler actor: runs the step loop (schedule -> executor -> update)
// around scheduler_core, and tells each request's session what its steps
// produced. One step is in flight at a time; the loop idles when there is
// no work and wakes on admit, cancel or finish.
#pragma once

#include <functional>

#include <memory>

#include <caf/fwd.hpp>

#include "actors/kv_cache/kv_cache_manager.hpp"
#include "actors/scheduler/scheduler_core.hpp"
#include "messages/actors.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

// Told after every engine step: its wall time (plan sent -> result back)
// and the tokens it computed. Called on the scheduler's thread; must be
// cheap and thread-safe (e.g. a metrics registry's observe_step).
using step_observer = std::function<void(double duration_s, uint32_t n_tokens)>;

// `tok`: the model's tokenizer (its end-of-generation tokens end sequences).
scheduler_actor spawn_scheduler(caf::actor_system& sys, std::shared_ptr<const tokenizer> tok, executor_actor exec,
                                const scheduler_config& cfg, const kv_cache_config& kv_cfg, step_observer on_step = {});

}  // namespace cortex
