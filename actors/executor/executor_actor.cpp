#include "actors/executor/executor_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/spawn_options.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace cortex {

namespace {

struct executor_state {
  std::unique_ptr<step_runner> runner;
  static inline const char* name = "cortex.executor";
};

executor_actor::behavior_type executor_fn(executor_actor::stateful_pointer<executor_state> self,
                                          std::shared_ptr<const model> m, executor_config cfg) {
  self->state.runner = std::make_unique<step_runner>(std::move(m), cfg);
  return {
      [self](const sequence_open& o) { self->state.runner->open(o); },
      [self](const engine_step& step) -> engine_step_result { return self->state.runner->run(step); },
      [self](fail_atom, uint32_t n) { self->state.runner->fail_next(n); },
      [self](cancel_atom, request_id rid) { self->state.runner->close(rid); },
  };
}

}  // namespace

executor_actor spawn_executor(caf::actor_system& sys, std::shared_ptr<const model> m, const executor_config& cfg) {
  return sys.spawn<caf::detached>(executor_fn, std::move(m), cfg);
}

}  // namespace cortex
