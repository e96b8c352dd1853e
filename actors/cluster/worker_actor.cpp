#include "actors/cluster/worker_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace cortex {

namespace {

struct worker_state {
  intake_actor intake;
  model_info info;
  static inline const char* name = "cortex.worker";
};

worker_actor::behavior_type worker_fn(worker_actor::stateful_pointer<worker_state> self, intake_actor intake, model_info info) {
  self->state.intake = std::move(intake);
  self->state.info = std::move(info);
  return {
      [self](hello_atom) -> caf::result<intake_actor, model_info> { return {self->state.intake, self->state.info}; },
      [self](stats_atom) { return self->delegate(self->state.intake, stats_atom_v); },
  };
}

}  // namespace

worker_actor spawn_worker_actor(caf::actor_system& sys, intake_actor intake, model_info info) {
  return sys.spawn(worker_fn, std::move(intake), std::move(info));
}

}  // namespace cortex
