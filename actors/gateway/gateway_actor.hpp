// The ZeroMQ gateway actor: protocol v1 over the ZeroMQ server, a thin shell
// over the shared gateway core (actors/gateway_core). It decodes and
// validates client messages (messages/wire), opens a route per submit,
// submits to intake with itself as the sink, and encodes everything that
// goes back. Nothing past it sees wire types.
//
// Its interface (messages/actors.hpp, zmq_gateway_actor): the sink events,
// ready / drain / active from cortexd, and frames and peer events from its
// I/O thread.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/gateway/zmq_server.hpp"
#include "actors/gateway_core/gateway_core.hpp"
#include "messages/actors.hpp"

namespace cortex {

class metrics_registry;
namespace auth {
class access_policy;
class refusal_log;
}

struct gateway_config {
  gateway_core_limits core;  // slow-reader backlog
  std::shared_ptr<metrics_registry> metrics;  // shared with the HTTP gateway's /metrics; may be null
  // Access control (auth.md): each submit belongs to the key its CURVE
  // connection was bound to, or (no CURVE) the key its `auth` field names;
  // 401 otherwise. Null: off.
  std::shared_ptr<auth::access_policy> access;
  // Where refusals are logged (rate-limited); cortexd shares it with the ZAP
  // handler's refusals. Null with access: the gateway makes its own.
  std::shared_ptr<auth::refusal_log> refusals;
};

// `server` must outlive the actor; the actor starts its I/O thread.
zmq_gateway_actor spawn_gateway(caf::actor_system& sys, zmq_server& server, const gateway_config& cfg);

}  // namespace cortex
