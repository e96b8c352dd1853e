// OpenAI error bodies and HTTP statuses (http.md "Errors").
#include "actors/http_gateway/openai_error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cortex::http {
namespace {

using nlohmann::json;

status report(errc code, const std::string& message, uint32_t retry_after_ms = 0) {
  status e;
  e.code = code;
  e.message = message;
  e.retry_after_ms = retry_after_ms;
  return e;
}

TEST(OpenaiError, StatusAndType) {
  struct row { errc code; uint16_t status; const char* type; const char* name; };
  const row rows[] = {
      {errc::malformed, 400, "invalid_request_error", "malformed"},
      {errc::invalid_param, 400, "invalid_request_error", "invalid_param"},
      {errc::unknown_model, 404, "invalid_request_error", "unknown_model"},
      {errc::too_large, 413, "invalid_request_error", "too_large"},
      {errc::context_overflow, 400, "invalid_request_error", "context_length_exceeded"},
      {errc::overloaded, 429, "rate_limit_error", "overloaded"},
      {errc::internal, 500, "server_error", "internal"},
      {errc::unsupported, 501, "server_error", "unsupported"},
      {errc::not_ready, 503, "server_error", "not_ready"},
      {errc::draining, 503, "server_error", "draining"},
  };
  for (const row& r : rows) {
    SCOPED_TRACE(r.name);
    const openai_error_response resp = make_openai_error(report(r.code, "fix it"));
    EXPECT_EQ(resp.status, r.status);
    const json body = json::parse(resp.body);
    EXPECT_EQ(body, (json{{"error", {{"message", "fix it"}, {"type", r.type}, {"param", nullptr}, {"code", r.name}}}}));
  }
  EXPECT_STREQ(openai_error_type(401), "authentication_error");
  EXPECT_STREQ(openai_error_type(403), "permission_error");
}

TEST(OpenaiError, ParamIsNamed) {
  openai_error e;
  e.report = report(errc::invalid_param, "temperature must be a number in [0, 2], got the number 3");
  e.param = "temperature";
  const openai_error_response resp = make_openai_error(e);
  EXPECT_EQ(resp.status, 400);
  EXPECT_EQ(json::parse(resp.body)["error"]["param"], "temperature");
  EXPECT_EQ(resp.retry_after_s, 0u);
  EXPECT_EQ(resp.body.rfind(R"({"error":{"message":)", 0), 0u);
}

TEST(OpenaiError, RetryAfterInWholeSeconds) {
  EXPECT_EQ(make_openai_error(report(errc::overloaded, "full", 1500)).retry_after_s, 2u);
  EXPECT_EQ(make_openai_error(report(errc::overloaded, "full", 3000)).retry_after_s, 3u);
  EXPECT_EQ(make_openai_error(report(errc::draining, "bye", 0)).retry_after_s, 1u);  // never "0"
  EXPECT_EQ(make_openai_error(report(errc::not_ready, "loading", 1)).retry_after_s, 1u);
  EXPECT_EQ(make_openai_error(report(errc::internal, "bug", 5000)).retry_after_s, 0u);  // not retryable
}

}  // namespace
}  // namespace cortex::http
