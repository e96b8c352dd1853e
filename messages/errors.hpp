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

}  // namespace cortex
