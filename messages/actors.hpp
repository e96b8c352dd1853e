// The typed actor interfaces of CortexStream. Actors include this header,
// never each other.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

#include "messages/type_ids.hpp"

namespace cortex {

// Receives one request's events: accepted, then chunks, then exactly one
// finished; or only rejected. The gateway is one; any embedding actor can be.
using request_sink_actor = caf::typed_actor<caf::reacts_to<request_accepted>, caf::reacts_to<request_chunk>,
                                            caf::reacts_to<request_finished>, caf::reacts_to<request_rejected>>;

// One per request: turns engine updates into events for its sink.
using session_actor = caf::typed_actor<
    caf::reacts_to<session_update>,
    // An end decided outside the session (cancel, shutdown, executor failure).
    caf::reacts_to<finish_atom, finish_reason, status>,
    // Its own deadline timer.
    caf::reacts_to<deadline_atom>>;

// Runs steps on the model. Detached: its own thread, never a CAF worker.
using executor_actor = caf::typed_actor<caf::reacts_to<sequence_open>, caf::replies_to<engine_step>::with<engine_step_result>,
                                        // Drops a finished sequence's sampler and state now (the scheduler
                                        // sends it when idle; otherwise closes ride on the next step).
                                        caf::reacts_to<cancel_atom, request_id>,
                                        // Test hook: the next n steps fail as if the model had thrown.
                                        caf::reacts_to<fail_atom, uint32_t>>;

// The step loop over the KV cache.
using scheduler_actor = caf::typed_actor<
    caf::reacts_to<admit_atom, sequence_admission, session_actor>,
    // Ends a sequence (cancel, client gone, shutdown): its session gets finish.
    caf::reacts_to<cancel_atom, request_id, finish_reason>,
    // The session ended the sequence itself (stop string, deadline): free it.
    caf::reacts_to<finish_atom, request_id, finish_reason>,
    // Ends every sequence with `shutdown`.
    caf::reacts_to<shutdown_atom>,
    caf::replies_to<stats_atom>::with<engine_stats>>;

// The runtime's front door (the embedded API): submit, cancel, stats.
// Events of a submit go to the given sink; `accepted` carries the rid that
// cancel takes.
using intake_actor = caf::typed_actor<
    caf::reacts_to<submit_atom, generation_request, request_sink_actor>,
    caf::reacts_to<cancel_atom, request_id, finish_reason>,
    // A session left the waiting queue (or ended before starting): frees its admission slot.
    caf::reacts_to<dequeued_atom, request_id, uint32_t>,
    // No more members of this admission group will be submitted (the client request ended).
    caf::reacts_to<group_done_atom, std::string>,
    // New submits are refused with `draining`; running ones go on.
    caf::reacts_to<drain_atom>,
    // Refuses new submits and ends running ones with `shutdown`.
    caf::reacts_to<shutdown_atom>,
    caf::replies_to<stats_atom>::with<engine_stats>>;

// What a worker node publishes over CAF's middleman (cortexd --role worker,
// issue 14): a router asks it once for its intake and the model it serves,
// then polls its stats for load and /metrics.
using worker_actor = caf::typed_actor<caf::replies_to<hello_atom>::with<intake_actor, model_info>,
                                      caf::replies_to<stats_atom>::with<engine_stats>>;

// The router's intake (cortexd --role router): intake_actor's messages,
// which it routes to workers, plus the events of the requests it routed,
// which the workers' sessions send to it and it relays to their sinks.
using cluster_intake_actor = intake_actor::extend_with<request_sink_actor>::extend<
    // The worker addresses ("host:port"), e.g. after a SIGHUP reloaded the workers file.
    caf::reacts_to<workers_atom, std::vector<std::string>>,
    // Its own timer: poll stats, reconnect to workers that are down.
    caf::reacts_to<tick_atom>>;

// What every gateway (ZeroMQ, HTTP) answers besides its requests' events:
// cortexd tells it when the model is ready and when to drain, and asks how
// many requests it still has open before exiting.
using gateway_actor = request_sink_actor::extend<
    // The model is loaded: submits go to `intake`; `model_info` is what `models` reports.
    caf::reacts_to<ready_atom, intake_actor, model_info>,
    // Health says draining; new submits get 503.
    caf::reacts_to<drain_atom>,
    // After ready: whether it can serve (false on a router with no worker
    // up: health says starting, submits get 503 not_ready; true: ready again).
    caf::reacts_to<ready_atom, bool>,
    // Requests opened and not yet terminated.
    caf::replies_to<active_atom>::with<uint64_t>>;

// The ZeroMQ gateway: its I/O thread hands it frames and peer events.
using zmq_gateway_actor = gateway_actor::extend<caf::reacts_to<gateway_inbound>,
                                                caf::reacts_to<peer_gone_atom, std::string>,
                                                caf::reacts_to<blocked_atom, std::string, bool>>;

// The HTTP gateway: its I/O thread hands it requests and connection events.
using http_gateway_actor = gateway_actor::extend<caf::reacts_to<http_inbound>,
                                                 caf::reacts_to<peer_gone_atom, uint64_t>,
                                                 caf::reacts_to<blocked_atom, uint64_t, bool>>;

}  // namespace cortex
