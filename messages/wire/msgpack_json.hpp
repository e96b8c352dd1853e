// Internal to messages/wire: a client's msgpack value as JSON, for the parts
// of a submit that are passed on as JSON text (`messages`,
// `chat_template_kwargs`: intake renders them with the chat template).
//
// The conversion is faithful: strings (valid UTF-8 only), integers (signed
// and unsigned, all 64 bits), floats (a float32 becomes the shortest decimal
// that reads back as the same float32, so 0.1f is 0.1, not
// 0.10000000149011612), bools, nil (null), arrays, and maps with string keys
// in the client's order (ordered_json: `tojson` in a template must print
// keys as the client sent them, as Python dicts keep them). Refused, with
// the field path in the message: binary and ext values (400 malformed: JSON
// has no bytes), non-string or duplicate map keys (400 malformed), invalid
// UTF-8 and non-finite floats (400 invalid_param), arrays and maps nested
// more than `max_depth` levels (the value itself counts as one; 413
// too_large).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "messages/wire/field_reader.hpp"

namespace cortex::wire::detail {

// Converts `o` into `out`. `path` names `o` in error messages
// ("messages[3]"); it is extended while descending and restored on return.
// Returns false with the error recorded in `r`. Recursion is at most
// max_depth deep, so the caller's stack use is bounded.
bool msgpack_to_json(field_reader& r, const msgpack::object& o, std::string& path, uint32_t max_depth,
                     nlohmann::ordered_json& out);

// A field that must be a map (`what` describes it in the type error),
// converted as above and serialized as JSON text into `out`.
bool decode_json_map(field_reader& r, const msgpack::object& o, const char* field, const char* what, std::string& out);

}  // namespace cortex::wire::detail
