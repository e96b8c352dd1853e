// OpenAI-shaped errors for the HTTP gateway (http.md "Errors"): the HTTP
// status of a protocol v1 error code and the body
// {"error": {message, type, param, code}}. CAF-free; nothing throws.
//
// Status: protocol v1's code (errc_code), except 422 context_overflow, which
// is 400 with code "context_length_exceeded" (as OpenAI answers it). `type`
// follows the status: 400/404/413/422 (and any other 4xx)
// invalid_request_error, 401 authentication_error, 403 permission_error, 429
// rate_limit_error, 5xx server_error. `code` is the protocol v1 error name.
// 429 and 503 carry a Retry-After header: retry_after_ms rounded up to whole
// seconds, at least 1.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

#include "messages/errors.hpp"

namespace cortex::http {

// An error about a request, with the request field it concerns.
struct openai_error {
  status report;  // report.is_ok(): no error
  std::string param;    // the offending field as a JSON path ("messages[2].content"); "": null
};

// What the gateway sends for an error before any response bytes went out.
struct openai_error_response {
  uint16_t status = 500;
  std::string body;            // {"error": {...}} (application/json)
  uint32_t retry_after_s = 0;  // > 0: send `Retry-After: <retry_after_s>`
  bool authenticate = false;   // 401: send `WWW-Authenticate: Bearer` (RFC 7235 3.1)

  // The headers that go with it: Retry-After, WWW-Authenticate.
  std::vector<std::pair<std::string, std::string>> headers() const;
};

uint16_t openai_http_status(errc code);
// "invalid_request_error", "authentication_error", ... for an HTTP status.
const char* openai_error_type(uint16_t status);
// The body {"error": {"message", "type", "param", "code"}} (one line, no newline).
std::string openai_error_body(const status& e, std::string_view param = {});
openai_error_response make_openai_error(const status& e, std::string_view param = {});
inline openai_error_response make_openai_error(const openai_error& e) { return make_openai_error(e.report, e.param); }

}  // namespace cortex::http
