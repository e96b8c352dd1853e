// The paths of http.md's endpoint table, with their methods; a query string
// and a trailing slash are ignored; /v1/models/{id} is percent-decoded.
#include "actors/http_gateway/http_routes.hpp"

#include <gtest/gtest.h>

namespace cortex::http {
namespace {

TEST(http_routes, every_endpoint_of_http_md_with_its_method) {
  EXPECT_EQ(classify_http_route("POST", "/v1/chat/completions").kind, http_route_kind::chat_completions);
  EXPECT_EQ(classify_http_route("POST", "/v1/completions").kind, http_route_kind::completions);
  EXPECT_EQ(classify_http_route("POST", "/v1/embeddings").kind, http_route_kind::embeddings);
  EXPECT_EQ(classify_http_route("POST", "/v1/rerank").kind, http_route_kind::rerank);
  EXPECT_EQ(classify_http_route("POST", "/rerank").kind, http_route_kind::rerank);
  EXPECT_EQ(classify_http_route("GET", "/v1/rerank").kind, http_route_kind::wrong_method);
  EXPECT_EQ(classify_http_route("GET", "/v1/models").kind, http_route_kind::models);
  EXPECT_EQ(classify_http_route("POST", "/v1/responses").kind, http_route_kind::responses);
  EXPECT_EQ(classify_http_route("POST", "/v1/messages").kind, http_route_kind::messages);
  EXPECT_EQ(classify_http_route("POST", "/v1/messages/count_tokens?beta=true").kind, http_route_kind::messages_count_tokens);
  EXPECT_EQ(classify_http_route("GET", "/v1/messages").kind, http_route_kind::wrong_method);
  EXPECT_EQ(classify_http_route("GET", "/health/live").kind, http_route_kind::health_live);
  EXPECT_EQ(classify_http_route("GET", "/health/ready").kind, http_route_kind::health_ready);
  EXPECT_EQ(classify_http_route("GET", "/health/startup").kind, http_route_kind::health_startup);
  EXPECT_EQ(classify_http_route("GET", "/metrics").kind, http_route_kind::metrics);
  EXPECT_EQ(classify_http_route("HEAD", "/health/live").kind, http_route_kind::health_live);
}

TEST(http_routes, queries_and_trailing_slashes_are_ignored) {
  EXPECT_EQ(classify_http_route("GET", "/metrics?x=1").kind, http_route_kind::metrics);
  EXPECT_EQ(classify_http_route("POST", "/v1/completions/").kind, http_route_kind::completions);
}

TEST(http_routes, other_methods_and_paths) {
  EXPECT_EQ(classify_http_route("GET", "/v1/chat/completions").kind, http_route_kind::wrong_method);
  EXPECT_EQ(classify_http_route("POST", "/v1/models").kind, http_route_kind::wrong_method);
  EXPECT_EQ(classify_http_route("DELETE", "/v1/models/x").kind, http_route_kind::wrong_method);
  EXPECT_EQ(classify_http_route("GET", "/v1/chat").kind, http_route_kind::unknown);
  EXPECT_EQ(classify_http_route("GET", "/").kind, http_route_kind::unknown);
  EXPECT_EQ(classify_http_route("GET", "/v1/models/").kind, http_route_kind::models);
}

TEST(http_routes, a_model_id_is_percent_decoded) {
  auto m = classify_http_route("GET", "/v1/models/org%2Fname%20x");
  EXPECT_EQ(m.kind, http_route_kind::model);
  EXPECT_EQ(m.model_id, "org/name x");
  EXPECT_EQ(classify_http_route("GET", "/v1/models/a%2").model_id, "a%2") << "a broken escape stays as sent";
}

}  // namespace
}  // namespace cortex::http
