#include "messages/caf_status.hpp"

#include <string>

namespace cortex {

caf::error to_caf_error(const status& s) { return caf::make_error(s.code, s.message); }

status to_status(const caf::error& e, const std::string& what) {
  if (!e) return status::ok();
  if (e.category() == caf::atom("cortex")) {
    std::string message = what;
    if (e.context().match_elements<std::string>()) message += ": " + e.context().get_as<std::string>(0);
    return fail(static_cast<errc>(e.code()), std::move(message));
  }
  return fail(errc::internal, what + ": " + caf::to_string(e));
}

}  // namespace cortex
