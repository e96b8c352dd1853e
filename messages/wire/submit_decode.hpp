// Internal to messages/wire: the `submit` body and the keys every request
// message shares (see client_decode.hpp for the rules). REQUIRES: `root`
// is the message map, keys checked, `v` and `t` already validated. On
// false the error is recorded in `r`.
#pragma once

#include <string_view>

#include "messages/request.hpp"
#include "messages/wire/field_reader.hpp"

namespace cortex::wire::detail {

// `auth` receives the submit's `auth` field (the API key secret; "" when absent).
// The keys every request message (submit, embed, rerank) shares: `id`,
// `priority`, `deadline_ms`, `tags`, `model`, `auth` (into `auth`; "" when
// absent). `unknown` for any other key; nil is absent (`known`).
field_status decode_request_field(field_reader& r, std::string_view key, const msgpack::object& val,
                                  generation_request& out, std::string& auth);
// After the fields: false (400, recorded in `r`) when the message of type
// `type` carried no id.
bool require_id(field_reader& r, const char* type, const generation_request& out);

bool decode_submit(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth);

}  // namespace cortex::wire::detail
