// Internal to messages/wire: the `submit` body (see client_decode.hpp for
// the rules). REQUIRES: `root` is the message map, keys checked, `v` and
// `t` already validated. On false the error is recorded in `r`.
#pragma once

#include "messages/request.hpp"
#include "messages/wire/field_reader.hpp"

namespace cortex::wire::detail {

// `auth` receives the submit's `auth` field (the API key secret; "" when absent).
bool decode_submit(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth);

}  // namespace cortex::wire::detail
