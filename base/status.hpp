// The project's error vocabulary for plain code: an error code (`errc`, the
// codes of protocol.md) and a message saying what is wrong and, where
// possible, what to fix. Errors are values: functions that can fail on
// outside input return status (or expected<T>, base/expected.hpp); nothing
// throws across an API.
//
// Why here: base/ is below every folder that can fail (model/, text/,
// chat/, grammar/, messages/, the sockets and the auth file reader), so each
// includes it without including model/ (design.md's layering, checked by
// tests/docs/include_layers.py); messages/ (errors.hpp: wire codes and
// names, status; type_ids.hpp: errc registered as caf::error;
// caf_status.hpp: the one status <-> caf::error conversion) and every actor
// include it, so one code travels unchanged from a model function to a
// client. It includes only the standard library.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

namespace cortex {

// The codes of a failure. No code means success: 0 is left unnamed (CAF
// reads an error enum's 0 as "no error"), and only status::is_ok() looks at
// it.
enum class errc : uint8_t {
  malformed = 1,        // 400: not msgpack, not a map, wrong types; a corrupt file
  invalid_param,      // 400: out-of-range values, token id >= vocab
  unknown_type,       // 400: unknown message type
  unknown_model,      // 404
  duplicate_id,       // 409: id still active on this connection
  too_large,          // 413: too many stop strings / bias entries, over-long id
  context_overflow,   // 422: prompt longer than the context allows
  overloaded,         // 429: queue full; retryable
  internal,           // 500: a bug; the request ends, the server keeps serving
  unsupported,        // 501
  not_ready,          // 503: model loading; retryable
  draining,           // 503: shutting down; retryable
  unsupported_version, // 505
  unauthenticated,    // 401: --auth is on and the key is missing or unknown (auth.md)
  forbidden,          // 403: the key's tier does not allow this request
  rate_limited,       // 429: the key's tier limit; retryable
  worker_lost         // 503: (router) the worker serving a streaming request died; retryable
};

// The one error value of the project: success (the default, status::ok()),
// or a failure with its code, a message that says what is wrong and what to
// fix, and for retryable codes how long to wait. Plain code returns it (or
// expected<T>); results carry it as their `error`; the wire, HTTP and
// actor messages send it as it is (messages/type_ids.hpp). One convention:
// is_ok() (or its bool), never a comparison of `code`.
struct status {
  errc code{};                  // set only on failure
  std::string message;          // empty when ok
  uint32_t retry_after_ms = 0;  // a failure with a retryable code: the wait to suggest

  status() = default;
  status(errc c, std::string m, uint32_t retry_ms = 0) : code(c), message(std::move(m)), retry_after_ms(retry_ms) {}

  static status ok() { return {}; }
  bool is_ok() const { return code == errc{}; }
  explicit operator bool() const { return is_ok(); }
};

// The message (for logs and test output; errc_name in messages/errors.hpp
// names the code).
inline std::ostream& operator<<(std::ostream& os, const status& s) { return os << s.message; }

// A failure (status's constructor, named for reading at return sites).
inline status fail(errc code, std::string message) { return status{code, std::move(message)}; }

}  // namespace cortex
