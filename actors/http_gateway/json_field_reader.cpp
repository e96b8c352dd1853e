#include "actors/http_gateway/json_field_reader.hpp"

#include <cstdio>
#include <limits>
#include <utility>

namespace cortex::http::detail {

namespace {

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A client's string for a message: quoted when short, else its length
// (the parser already checked it is UTF-8).
std::string quote_for_message(const std::string& s) {
  return s.size() <= 64 ? json(s).dump() : "<" + std::to_string(s.size()) + "-byte string>";
}

}  // namespace

std::string describe_json(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer: return "the number " + std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned: return "the number " + std::to_string(v.get<uint64_t>());
    case json::value_t::number_float: return "the number " + format_number(v.get<double>());
    case json::value_t::string: return "the string " + quote_for_message(v.get_ref<const std::string&>());
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "a value of another type";
  }
}

uint32_t json_nesting_depth(const std::string& text, uint32_t limit) {
  uint32_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

bool json_field_reader::fail(errc code, const std::string& param, std::string message) {
  if (!failed()) {
    out_.report.code = code;
    out_.report.message = std::move(message);
    out_.param = param;
  }
  return false;
}

bool json_field_reader::expected(const std::string& param, const std::string& what, const json& v) {
  return fail(errc::invalid_param, param, param + " must be " + what + ", got " + describe_json(v));
}

bool json_field_reader::too_many(const std::string& param, size_t n, size_t max, const char* items) {
  return fail(errc::too_large, param,
              param + " has " + std::to_string(n) + " " + items + "; at most " + std::to_string(max) + " are allowed");
}

bool json_field_reader::read_bool(const json& v, const std::string& param, bool& out) {
  if (!v.is_boolean()) return expected(param, "true or false", v);
  out = v.get<bool>();
  return true;
}

bool json_field_reader::read_int(const json& v, const std::string& param, int64_t lo, int64_t hi,
                                 const std::string& range, int64_t& out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) return expected(param, range, v);
    out = static_cast<int64_t>(u);
    return true;
  }
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) return expected(param, range, v);
  out = v.get<int64_t>();
  return true;
}

bool json_field_reader::read_string(const json& v, const std::string& param, std::string& out) {
  if (!v.is_string()) return expected(param, "a string", v);
  out = v.get<std::string>();
  return true;
}

bool json_field_reader::read_token_id(const json& v, const std::string& param, int32_t& out) {
  int64_t i = 0;
  if (!read_int(v, param, 0, std::numeric_limits<int32_t>::max(), "a token id (an integer >= 0)", i)) return false;
  out = static_cast<int32_t>(i);
  return true;
}

bool json_field_reader::read_token_ids(const json& v, const std::string& param, size_t max, std::vector<int32_t>& out,
                                       bool allow_empty) {
  if (!v.is_array()) return expected(param, "an array of token ids", v);
  if (v.empty() && !allow_empty) return fail(errc::invalid_param, param, param + " is empty; give at least one token id");
  if (v.size() > max) return too_many(param, v.size(), max, "token ids");
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    if (!read_token_id(v[i], param + "[" + std::to_string(i) + "]", out[i])) return false;
  return true;
}

}  // namespace cortex::http::detail
