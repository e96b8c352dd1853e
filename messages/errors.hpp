// The project's error vocabulary: one enum shared by actors (as caf::error,
// see messages/type_ids.hpp), the wire codec and clients. Codes and names
// are protocol.md's.
#pragma once

#include <cstdint>
#include <string>

namespace cortex {

enum class errc : uint8_t {
  none = 0,
  malformed,          // 400: not msgpack, not a map, wrong types
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
  unsupported_version // 505
};

// Wire code (400, 409...) and name ("invalid_param") of an error.
uint16_t errc_code(errc e);
const char* errc_name(errc e);
bool errc_retryable(errc e);

// An error as it travels to a client: what went wrong and what to fix.
struct error_report {
  errc code = errc::internal;
  std::string message;
  uint32_t retry_after_ms = 0;  // when retryable
};

}  // namespace cortex
