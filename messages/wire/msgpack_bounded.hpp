// Bounded msgpack parsing and small accessors over msgpack::object, shared by
// the client and server decoders. Nothing here throws.
//
// Why a bound is needed: msgpack-c allocates an array's or map's elements as
// soon as it reads the length header, before the elements arrive, so a
// 5-byte message declaring 2^32 elements would ask for 64 GiB. We first walk
// the bytes with a visitor that allocates nothing and refuses (a) more
// declared elements in total than the buffer has bytes (each element takes
// at least one byte, so such a message is truncated or hostile) and (b)
// nesting deeper than `max_depth`. Only then is the object tree built: its
// size is then O(size) (at most one msgpack::object per input byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <msgpack.hpp>

namespace cortex::wire {

// Parses `data[0, size)` as exactly one msgpack value (trailing bytes are an
// error) into `out`. On failure returns false and says why in `why` (for an
// error message: "truncated", "nesting deeper than 32"...); `out` is then
// unspecified. REQUIRES: data non-null when size > 0. The object references
// no memory of `data` (strings are copied into the handle's zone).
bool unpack_bounded(const uint8_t* data, size_t size, uint32_t max_depth, msgpack::object_handle& out,
                    std::string& why);

// "nil", "bool", "integer", "float", "string", "binary", "array", "map", "ext".
const char* msgpack_type_name(const msgpack::object& o);

// The value of the first entry whose key is the string `key`, or nullptr
// (also when `map` is not a map).
const msgpack::object* map_find(const msgpack::object& map, std::string_view key);

// REQUIRES: o.type == STR.
inline std::string_view str_view(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

inline bool is_integer(const msgpack::object& o) {
  return o.type == msgpack::type::POSITIVE_INTEGER || o.type == msgpack::type::NEGATIVE_INTEGER;
}
inline bool is_number(const msgpack::object& o) {
  return is_integer(o) || o.type == msgpack::type::FLOAT32 || o.type == msgpack::type::FLOAT64;
}
// The value of an integer or float object as a double. REQUIRES: is_number(o).
double number_value(const msgpack::object& o);

}  // namespace cortex::wire
