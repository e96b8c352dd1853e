// The project's error vocabulary on the wire side: the codes (errc, defined
// with status in base/status.hpp so CAF-free model code uses the same
// codes) as protocol.md numbers and names them, and error_report, an error
// as it travels to a client. Actors carry errc as caf::error
// (messages/type_ids.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.hpp"  // errc, status: CAF-free, shared with model/

namespace cortex {

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

// A status as it travels to a client. REQUIRES: !s.is_ok().
inline error_report to_error_report(const status& s, uint32_t retry_after_ms = 0) {
  return error_report{s.code, s.message, retry_after_ms};
}

}  // namespace cortex
