// A worker node's published face (cortexd --role worker, issue 14): answers
// a router's hello with the node's intake and the model it serves, and its
// stats (the intake's). The router sends submits and cancels to that intake
// directly; the sessions send each request's events to the sink named in
// its submit (the router's cluster intake), across the middleman.
#pragma once

#include <caf/fwd.hpp>

#include "messages/actors.hpp"

namespace cortex {

worker_actor spawn_worker_actor(caf::actor_system& sys, intake_actor intake, model_info info);

}  // namespace cortex
