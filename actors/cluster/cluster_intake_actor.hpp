// The router's intake (cortexd --role router, issue 14): the same typed
// front door as the local intake (submit / cancel / stats / drain /
// shutdown), so the gateways do not change, over worker nodes reached
// through CAF's middleman.
//
// - Membership: it connects to every listed worker ("host:port", through
//   the given middleman actor: plain TCP or caf::openssl), asks it for its
//   intake and model (hello), monitors it, and polls its stats every tick.
//   A worker that goes down is removed at once; the tick reconnects to it
//   (a restarted worker rejoins without restarting the router); a new list
//   (workers_atom, e.g. a reloaded workers file) adds and removes workers.
// - Routing: routing_policy over the live workers; the key is computed from
//   what the request carries, without a tokenizer (see prefix_key_of).
// - Events: a worker's sessions send each request's events here (the sink of
//   the submit it got); they are relayed to the gateway with the router's
//   rid and the gateway's client_id (routed_requests).
// - Faults: a request on a lost worker that produced no chunk is resubmitted
//   to another worker; one that did ends with 503 worker_lost (retryable).
//   Every request the router accepted ends with exactly one terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>

#include "actors/cluster/routing_policy.hpp"
#include "messages/actors.hpp"

namespace cortex {

// Per-worker figures for /metrics and logs (a snapshot).
struct cluster_worker_view {
  std::string name;      // "host:port"
  bool up = false;
  engine_stats stats;    // its last stats
  uint32_t in_flight = 0;
  uint64_t routed = 0;   // requests sent to it since the router started
};

struct cluster_intake_config {
  std::vector<std::string> workers;  // "host:port" of each worker's --cluster-port
  cluster::routing_mode routing = cluster::routing_mode::affinity;
  uint32_t balance_threshold = 4;    // waiting requests past the least loaded before affinity yields
  size_t affinity_blocks = 4;        // the routing key covers at most this many full blocks
  size_t block_tokens = 16;          // tokens per block (the workers' --block-size)
  size_t block_bytes = 64;           // text: bytes per block (about 4 bytes per token)
  std::chrono::milliseconds tick{250};  // stats poll and reconnect period
  // Connects to workers: sys.middleman().actor_handle(), or the OpenSSL
  // manager's for TLS. REQUIRES: valid.
  caf::io::middleman_actor connector;
  // Called once, on the actor's thread, when the first worker has joined:
  // the intake to hand the gateways (this actor) and the worker's model.
  std::function<void(const intake_actor&, const model_info&)> on_first_worker;
  // Called on the actor's thread when the last worker went down (false) and
  // when one is up again (true), after on_first_worker.
  std::function<void(bool any_up)> on_serving;
  // Called on the actor's thread after every stats poll round: per-worker
  // gauges, and how many keyed picks followed affinity or yielded to load.
  std::function<void(const std::vector<cluster_worker_view>&, uint64_t affinity_followed, uint64_t affinity_overridden)>
      on_workers;
};

// The routing key of a request (routing_policy.hpp): the first full blocks
// of its token ids when it carries ids, else of its prompt text or chat
// messages as bytes. The router has no tokenizer (it needs no model file):
// two requests sharing a text prefix share its tokens too (except at the
// boundary), which is all affinity needs.
std::optional<uint64_t> prefix_key_of(const generation_request& r, const cluster_intake_config& cfg);

cluster_intake_actor spawn_cluster_intake(caf::actor_system& sys, cluster_intake_config cfg);

}  // namespace cortex
