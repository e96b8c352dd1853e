// The project's error vocabulary on the wire side: the codes (errc, defined
// with status in base/status.hpp so CAF-free model code uses the same
// codes) as protocol.md numbers and names them. An error travels to a
// client as a status (base/status.hpp); actors carry errc as caf::error
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

// The error a request ends with when its finish reason is `error`: `s`,
// except that one naming no code becomes internal and one without a message
// says the request failed in the engine (a client always gets both).
inline status as_request_error(status s) {
  if (s.is_ok()) s.code = errc::internal;
  if (s.message.empty()) s.message = "the request failed in the engine";
  return s;
}

}  // namespace cortex
