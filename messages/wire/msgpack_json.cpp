#include "messages/wire/msgpack_json.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "messages/wire/utf8.hpp"

namespace cortex::wire::detail {
namespace {

// The shortest "%.Ng" text (N = 6..9; 9 always round-trips a float32) that
// reads back as `f`, read as a double: what the client wrote before its
// encoder narrowed it.
double widen_float32(float f) {
  char buf[32];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  return std::strtod(buf, nullptr);
}

// `path` + ".key" while in scope (or `path` + "[i]"), restored after.
class path_guard {
 public:
  path_guard(std::string& path, const std::string& suffix) : path_(path), size_(path.size()) { path_ += suffix; }
  ~path_guard() { path_.resize(size_); }
  path_guard(const path_guard&) = delete;
  path_guard& operator=(const path_guard&) = delete;

 private:
  std::string& path_;
  size_t size_;
};

// ".role" for a plain key, `["odd key"]` (quoted safely) for others.
std::string key_suffix(std::string_view key) {
  bool plain = !key.empty() && key.size() <= 64;
  for (char c : key) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return plain ? "." + std::string(key) : "[" + quote_for_message(key) + "]";
}

bool convert(field_reader& r, const msgpack::object& o, std::string& path, uint32_t depth_left,
             nlohmann::ordered_json& out) {
  switch (o.type) {
    case msgpack::type::NIL: out = nullptr; return true;
    case msgpack::type::BOOLEAN: out = o.via.boolean; return true;
    case msgpack::type::POSITIVE_INTEGER: out = o.via.u64; return true;
    case msgpack::type::NEGATIVE_INTEGER: out = o.via.i64; return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      if (!std::isfinite(o.via.f64))
        return r.range_error(path, "a finite number (JSON has no NaN or infinity)", format_number(o.via.f64));
      out = o.type == msgpack::type::FLOAT32 ? widen_float32(static_cast<float>(o.via.f64)) : o.via.f64;
      return true;
    case msgpack::type::STR:
      if (!is_valid_utf8(str_view(o))) return r.fail(errc::invalid_param, path + " is not valid UTF-8; send UTF-8 text");
      out = std::string(str_view(o));
      return true;
    case msgpack::type::ARRAY:
    case msgpack::type::MAP: break;
    default:  // BIN, EXT
      return r.type_error(path, "a JSON-like value (string, number, bool, nil, array or map; not binary)", o);
  }
  if (depth_left == 0)
    return r.fail(errc::too_large, path + " nests too deeply; flatten the value");
  if (o.type == msgpack::type::ARRAY) {
    out = nlohmann::ordered_json::array();
    for (uint32_t i = 0; i < o.via.array.size; ++i) {
      path_guard in(path, "[" + std::to_string(i) + "]");
      nlohmann::ordered_json item;
      if (!convert(r, o.via.array.ptr[i], path, depth_left - 1, item)) return false;
      out.push_back(std::move(item));
    }
    return true;
  }
  if (!r.check_keys(o, path)) return false;
  out = nlohmann::ordered_json::object();
  for (uint32_t i = 0; i < o.via.map.size; ++i) {
    const msgpack::object_kv& kv = o.via.map.ptr[i];
    const std::string_view key = str_view(kv.key);
    if (!is_valid_utf8(key)) return r.fail(errc::invalid_param, path + " has a key that is not valid UTF-8");
    path_guard in(path, key_suffix(key));
    nlohmann::ordered_json value;
    if (!convert(r, kv.val, path, depth_left - 1, value)) return false;
    out[std::string(key)] = std::move(value);
  }
  return true;
}

}  // namespace

bool msgpack_to_json(field_reader& r, const msgpack::object& o, std::string& path, uint32_t max_depth,
                     nlohmann::ordered_json& out) {
  return convert(r, o, path, max_depth, out);
}

bool decode_json_map(field_reader& r, const msgpack::object& o, const char* field, const char* what, std::string& out) {
  if (o.type != msgpack::type::MAP) return r.type_error(field, what, o);
  std::string path = field;
  nlohmann::ordered_json j;
  if (!msgpack_to_json(r, o, path, r.lim.max_depth, j)) return false;
  out = j.dump();
  return true;
}

}  // namespace cortex::wire::detail
