// The in-process mode: the same load through the embedded API (an actor
// system of this process, runtime::start, one sink actor stamping every
// event on arrival). No socket, no codec: the difference to the wire mode is
// what the gateway costs.
#pragma once

#include <memory>

#include "actors/runtime/runtime_config.hpp"
#include "bench/load/load_run.hpp"
#include "base/expected.hpp"

namespace cortex::load {

class inprocess_transport : public load_transport {
 public:
  // Starts an actor system configured like cortexd's and the engine graph
  // on `cfg` (loads the model). The error is the runtime's message.
  static expected<std::unique_ptr<inprocess_transport>> start(const runtime_config& cfg);
  ~inprocess_transport() override;

  int n_vocab() const;
  int n_ctx() const;
  void submit(const planned_request& r) override;
  void poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) override;

  struct impl;

 private:
  inprocess_transport() = default;
  std::unique_ptr<impl> impl_;
};

}  // namespace cortex::load
