// The HTTP gateway actor: OpenAI-compatible HTTP (../shared/docs/http.md)
// over the Beast server, a sibling of the ZeroMQ gateway on the same intake
// and a thin shell over the shared gateway core (actors/gateway_core). The
// OpenAI mapping (JSON in, JSON and SSE out) is CAF-free
// (actors/http_gateway/openai_*); this file routes paths, opens one core
// route per choice (or per embedding input), and writes what the mapping
// produces to the connection.
//
// Interface: messages/actors.hpp, http_gateway_actor.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/gateway_core/gateway_core.hpp"
#include "actors/http_gateway/http_server.hpp"
#include "messages/actors.hpp"

namespace cortex {

class metrics_registry;
namespace auth {
class access_policy;
}

// What the gateway learns about the model once it is loaded. cortexd fills
// it before sending `ready`; the actor reads it only after `ready`.
struct http_model_hooks {
  std::function<std::string(int32_t)> token_text;  // a token's raw bytes (logprobs)
  uint32_t n_embd = 0;
};

struct http_gateway_config {
  gateway_core_limits core;
  std::shared_ptr<http_model_hooks> hooks;  // REQUIRED
  std::shared_ptr<metrics_registry> metrics;  // shared with the other gateways; null: /metrics answers 501
  // Called before each /metrics answer (e.g. cortexd sets the ZeroMQ
  // connection gauge); may be empty.
  std::function<void(metrics_registry&)> before_scrape;
  // Access control (auth.md): every /v1 request needs `Authorization:
  // Bearer <key>` (checked on the head, before the body is read); /health/*
  // stay open, /metrics too unless auth_metrics. Null: off.
  std::shared_ptr<auth::access_policy> access;
  bool auth_metrics = false;
};

// `server` must outlive the actor; the actor starts its I/O thread.
http_gateway_actor spawn_http_gateway(caf::actor_system& sys, http_server& server, http_gateway_config cfg);

}  // namespace cortex
