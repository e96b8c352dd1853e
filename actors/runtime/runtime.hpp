// The embedded API: spawns and wires the engine graph (executor, scheduler,
// intake; sessions come per request) inside the caller's actor system.
//
//   caf::actor_system_config cfg;
//   cortex::register_types(cfg);
//   caf::actor_system sys{cfg};
//   auto rt = cortex::runtime::start(sys, settings);   // loads the model
//   send rt->intake: (submit_atom, generation_request, sink) / (cancel_atom, rid, reason) / stats_atom
//
// Events of a request go to the sink actor named in its submit.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/runtime/runtime_config.hpp"
#include "messages/actors.hpp"
#include "base/expected.hpp"
#include "model/model.hpp"

namespace cortex {

// Registers CortexStream's message types (call before creating the system).
void register_types(caf::actor_system_config& cfg);

class runtime {
 public:
  // Loads the model and spawns the graph. Errors (bad model file, invalid
  // settings) come back as a message; nothing is left running then.
  static expected<std::unique_ptr<runtime>> start(caf::actor_system& sys, const runtime_config& cfg);
  // Same with a model already loaded (shared read-only).
  static expected<std::unique_ptr<runtime>> start(caf::actor_system& sys, const runtime_config& cfg,
                                                  std::shared_ptr<const model> m);
  // Stops the actors (in-flight requests end with `shutdown` first if
  // shutdown() was sent; otherwise they are abandoned).
  ~runtime();

  intake_actor intake() const { return intake_; }
  scheduler_actor scheduler() const { return scheduler_; }
  executor_actor executor() const { return executor_; }
  const model& loaded_model() const { return *model_; }
  std::shared_ptr<const model> shared_model() const { return model_; }
  int kv_blocks() const { return kv_blocks_; }
  int n_ctx() const { return n_ctx_; }

 private:
  runtime() = default;
  std::shared_ptr<const model> model_;
  executor_actor executor_;
  scheduler_actor scheduler_;
  intake_actor intake_;
  int kv_blocks_ = 0;
  int n_ctx_ = 0;
};

}  // namespace cortex
