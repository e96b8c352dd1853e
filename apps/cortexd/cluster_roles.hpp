// cortexd's cluster roles (issue 14, README "Several machines"): the CAF
// modules they load, a worker publishing its intake, a router's cluster
// intake. CAF's middleman carries typed actor messages between nodes over
// TCP (or TLS with caf::openssl); see actors/cluster/.
#pragma once

#include <functional>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/gateway_core/metrics_registry.hpp"
#include "apps/cortexd/daemon_options.hpp"
#include "messages/actors.hpp"

namespace cortex {

// Loads the middleman (and the OpenSSL manager with the node's certificate,
// key and CA) for a worker or router; nothing for a plain node.
void load_cluster_modules(caf::actor_system_config& cfg, const daemon_options& o);

// Publishes the worker's face (hello: intake and model; stats) on
// --cluster-bind:--cluster-port and returns it (the caller ends it before
// the actor system goes, which waits for every actor). Fails with a
// message naming the port.
expected<worker_actor> publish_worker(caf::actor_system& sys, const daemon_options& o, intake_actor intake,
                                      const model_info& info);

// Spawns the router's cluster intake over the --workers list. `ready` runs
// once the first worker has joined (with the intake to give the gateways
// and the worker's model); `serving` when none is up any more (false) and
// when one is again (true); per-worker gauges go
// to `metrics`.
cluster_intake_actor start_router(caf::actor_system& sys, const daemon_options& o,
                                  std::function<void(const intake_actor&, const model_info&)> ready,
                                  std::function<void(bool)> serving,
                                  std::shared_ptr<metrics_registry> metrics);

}  // namespace cortex
