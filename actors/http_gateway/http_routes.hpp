// The HTTP gateway's paths (http.md "Endpoints"). CAF-free.
#pragma once

#include <string>

namespace cortex::http {

enum class http_route_kind : uint8_t {
  chat_completions, completions, embeddings, rerank, models, model,
  responses, messages, messages_count_tokens,
  health_live, health_ready, health_startup, metrics,
  wrong_method,  // a known path with another method (405-like; answered 400 invalid_param)
  unknown        // 404
};

struct http_route_match {
  http_route_kind kind = http_route_kind::unknown;
  std::string model_id;  // for `model`: the {id} of /v1/models/{id}, percent-decoded
};

// `target` is the request target as sent (a query string is ignored).
http_route_match classify_http_route(const std::string& method, const std::string& target);

}  // namespace cortex::http
