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
// names, error_report; type_ids.hpp: errc registered as caf::error;
// caf_status.hpp: the one status <-> caf::error conversion) and every actor
// include it, so one code travels unchanged from a model function to a
// client. It includes only the standard library.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

namespace cortex {

enum class errc : uint8_t {
  none = 0,
  malformed,          // 400: not msgpack, not a map, wrong types; a corrupt file
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

// Success (code == errc::none, empty message) or an error with its code.
struct status {
  errc code = errc::none;
  std::string message;  // empty when ok

  static status ok() { return {}; }
  bool is_ok() const { return code == errc::none; }
  explicit operator bool() const { return is_ok(); }
};

// The message (for logs and test output; errc_name in messages/errors.hpp
// names the code).
inline std::ostream& operator<<(std::ostream& os, const status& s) { return os << s.message; }

// An error. REQUIRES: code != errc::none.
inline status fail(errc code, std::string message) { return status{code, std::move(message)}; }

}  // namespace cortex
