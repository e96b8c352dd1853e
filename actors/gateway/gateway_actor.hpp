// The gateway actor: protocol v1 over the ZeroMQ server. Decodes and
// validates client messages (messages/wire), maps (peer, client id) to
// requests, submits them to intake with itself as the sink, and encodes
// everything that goes back. Nothing past it sees wire types.
//
// Messages it takes besides the sink events:
//   (ready_atom, intake_actor, model_info)  the model is loaded: health ready
//   (drain_atom)                            health draining: submits get 503
//   (active_atom) -> uint64_t               requests not yet terminated
//   stats_atom -> engine_stats              (for cortexd's shutdown wait)
#pragma once

#include <caf/fwd.hpp>

#include "actors/gateway/zmq_server.hpp"
#include "messages/actors.hpp"

namespace cortex {

struct gateway_config {
  size_t max_pending_bytes = 1 << 20;  // merged text kept for a blocked reader before client_gone
};

// `server` must outlive the actor; the actor starts its I/O thread.
caf::actor spawn_gateway(caf::actor_system& sys, zmq_server& server, const gateway_config& cfg);

}  // namespace cortex
