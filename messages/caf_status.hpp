// The one conversion between plain code's errors (status, base/status.hpp)
// and caf::error, used where an error crosses an actor boundary: a request
// handler's error reply, or an error arriving in a request's error handler.
#pragma once

#include <caf/error.hpp>

#include "messages/type_ids.hpp"  // CAF_ERROR_CODE_ENUM(cortex::errc, "cortex")
#include "base/status.hpp"

namespace cortex {

// Our code and message as caf::error (category "cortex"). REQUIRES: !s.is_ok().
caf::error to_caf_error(const status& s);

// Back: a "cortex" error keeps its code and message; any other caf::error
// (a dead actor, a timeout...) becomes internal, its text prefixed by `what`
// (e.g. "executor unreachable"). An empty caf::error is ok.
status to_status(const caf::error& e, const std::string& what);

}  // namespace cortex
