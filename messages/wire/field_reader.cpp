#include "messages/wire/field_reader.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "messages/wire/utf8.hpp"

namespace cortex::wire::detail {

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string quote_for_message(std::string_view s) {
  bool printable = s.size() <= 64 && is_valid_utf8(s);
  for (char c : s) printable = printable && static_cast<unsigned char>(c) >= 0x20;
  if (printable) return "\"" + std::string(s) + "\"";
  return "<" + std::to_string(s.size()) + "-byte string>";
}

namespace {

// The value of a number object for a message ("-3", "2.5").
std::string value_text(const msgpack::object& o) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return std::to_string(o.via.u64);
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return std::to_string(o.via.i64);
  return format_number(o.via.f64);
}

}  // namespace

bool field_reader::fail(errc code, std::string message) {
  if (out_.ok()) {
    out_.error.code = code;
    out_.error.message = std::move(message);
  }
  return false;
}

bool field_reader::type_error(const std::string& field, const char* expected, const msgpack::object& o) {
  return fail(errc::malformed, field + " must be " + expected + ", got " + msgpack_type_name(o));
}

bool field_reader::range_error(const std::string& field, const std::string& range, const std::string& value) {
  return fail(errc::invalid_param, field + " must be " + range + ", got " + value);
}

bool field_reader::check_keys(const msgpack::object& map, const std::string& where) {
  std::unordered_set<std::string_view> seen;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object& key = map.via.map.ptr[i].key;
    if (key.type != msgpack::type::STR)
      return fail(errc::malformed, where + " has a key of type " + msgpack_type_name(key) + "; keys must be strings");
    if (!seen.insert(str_view(key)).second)
      return fail(errc::malformed, where + " has the key " + quote_for_message(str_view(key)) + " twice");
  }
  return true;
}

bool field_reader::read_bool(const msgpack::object& o, const std::string& field, bool& out) {
  if (o.type != msgpack::type::BOOLEAN) return type_error(field, "a bool (true or false)", o);
  out = o.via.boolean;
  return true;
}

bool field_reader::read_uint(const msgpack::object& o, const std::string& field, uint64_t max, const char* range,
                             uint64_t& out) {
  if (o.type == msgpack::type::NEGATIVE_INTEGER || o.type == msgpack::type::FLOAT32 ||
      o.type == msgpack::type::FLOAT64)
    return range_error(field, range, value_text(o));
  if (o.type != msgpack::type::POSITIVE_INTEGER) return type_error(field, "a non-negative integer", o);
  if (o.via.u64 > max) return range_error(field, range, value_text(o));
  out = o.via.u64;
  return true;
}

bool field_reader::read_int(const msgpack::object& o, const std::string& field, int64_t lo, int64_t hi,
                            const char* range, int64_t& out) {
  if (o.type == msgpack::type::FLOAT32 || o.type == msgpack::type::FLOAT64)
    return range_error(field, range, value_text(o));
  if (!is_integer(o)) return type_error(field, "an integer", o);
  const bool in_range = o.type == msgpack::type::POSITIVE_INTEGER
                            ? o.via.u64 <= static_cast<uint64_t>(hi) && static_cast<int64_t>(o.via.u64) >= lo
                            : o.via.i64 >= lo && o.via.i64 <= hi;
  if (!in_range) return range_error(field, range, value_text(o));
  out = o.type == msgpack::type::POSITIVE_INTEGER ? static_cast<int64_t>(o.via.u64) : o.via.i64;
  return true;
}

bool field_reader::read_float(const msgpack::object& o, const std::string& field, double& out) {
  if (!is_number(o)) return type_error(field, "a number", o);
  const double v = number_value(o);
  if (!std::isfinite(v) || std::fabs(v) > FLT_MAX) return range_error(field, "a finite number", value_text(o));
  out = v;
  return true;
}

bool field_reader::read_text(const msgpack::object& o, const std::string& field, std::string& out) {
  if (o.type != msgpack::type::STR) return type_error(field, "a string", o);
  const std::string_view s = str_view(o);
  if (!is_valid_utf8(s)) return fail(errc::invalid_param, field + " is not valid UTF-8; send UTF-8 text");
  out.assign(s);
  return true;
}

bool field_reader::read_id(const msgpack::object& o, const std::string& field, std::string& out) {
  if (o.type != msgpack::type::STR) return type_error(field, "a string (a request id)", o);
  const std::string_view s = str_view(o);
  if (s.empty())
    return fail(errc::invalid_param, field + " must be 1.." + std::to_string(lim.max_id_bytes) + " bytes, got an empty string");
  if (s.size() > lim.max_id_bytes)
    return fail(errc::too_large, field + " is " + std::to_string(s.size()) + " bytes; at most " +
                                     std::to_string(lim.max_id_bytes) + " are allowed");
  if (!is_valid_utf8(s)) return fail(errc::invalid_param, field + " is not valid UTF-8; send UTF-8 text");
  out.assign(s);
  return true;
}

bool field_reader::read_token_id(const msgpack::object& o, const std::string& field, int32_t& out) {
  uint64_t v = 0;
  if (!read_uint(o, field, static_cast<uint64_t>(std::numeric_limits<int32_t>::max()),
                 "a token id (an integer in [0, 2147483647])", v))
    return false;
  out = static_cast<int32_t>(v);
  return true;
}

bool field_reader::read_token_ids(const msgpack::object& o, const std::string& field, uint32_t max,
                                  std::vector<int32_t>& out) {
  if (o.type != msgpack::type::ARRAY) return type_error(field, "an array of token ids", o);
  const uint32_t n = o.via.array.size;
  if (n > max)
    return fail(errc::too_large, field + " has " + std::to_string(n) + " entries; at most " + std::to_string(max) +
                                     " are allowed");
  out.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    if (!read_token_id(o.via.array.ptr[i], field + "[" + std::to_string(i) + "]", out[i])) return false;
  return true;
}

void field_reader::note_ignored(const std::string& prefix, std::string_view key) {
  if (out_.ignored.size() >= lim.max_ignored) {
    ++n_ignored_unlisted_;
    return;
  }
  if (key.size() <= lim.max_id_bytes && is_valid_utf8(key))
    out_.ignored.push_back(prefix + std::string(key));
  else
    out_.ignored.push_back(prefix + "<key of " + std::to_string(key.size()) + " bytes>");
}

void field_reader::finish_ignored() {
  if (n_ignored_unlisted_ > 0) out_.ignored.push_back("... and " + std::to_string(n_ignored_unlisted_) + " more");
}

}  // namespace cortex::wire::detail
