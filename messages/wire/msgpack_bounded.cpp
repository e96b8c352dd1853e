#include "messages/wire/msgpack_bounded.hpp"

#include <exception>

namespace cortex::wire {
namespace {

// Walks the structure without allocating; stops the parse (returns false)
// at the first bound it finds broken. See the header for why.
struct bound_checker : msgpack::null_visitor {
  size_t size;
  uint32_t max_depth;
  uint64_t n_declared = 0;  // elements (map entries count twice) declared so far
  uint32_t depth = 0;
  std::string why;

  bound_checker(size_t size_, uint32_t max_depth_) : size(size_), max_depth(max_depth_) {}

  bool open(uint64_t n_elements) {
    if (++depth > max_depth) {
      why = "nesting deeper than " + std::to_string(max_depth) + " levels";
      return false;
    }
    n_declared += n_elements;
    if (n_declared > size) {
      why = "a length header declares more elements than the " + std::to_string(size) + "-byte message holds";
      return false;
    }
    return true;
  }
  bool start_array(uint32_t n) { return open(n); }
  bool start_map(uint32_t n) { return open(2ull * n); }
  bool end_array() { return --depth, true; }
  bool end_map() { return --depth, true; }
  void parse_error(size_t, size_t) { why = "not msgpack (invalid byte)"; }
  void insufficient_bytes(size_t, size_t) { why = "truncated"; }
};

}  // namespace

bool unpack_bounded(const uint8_t* data, size_t size, uint32_t max_depth, msgpack::object_handle& out,
                    std::string& why) {
  if (size == 0) {
    why = "empty message";
    return false;
  }
  const char* bytes = reinterpret_cast<const char*>(data);
  try {
    bound_checker check(size, max_depth);
    size_t off = 0;
    if (!msgpack::parse(bytes, size, off, check)) {
      why = check.why.empty() ? std::string("not msgpack") : check.why;
      return false;
    }
    if (off != size) {
      why = std::to_string(size - off) + " trailing bytes after the msgpack value";
      return false;
    }
    off = 0;
    const msgpack::unpack_limit limit(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, max_depth + 1);
    out = msgpack::unpack(bytes, size, off, nullptr, nullptr, limit);
    return true;
  } catch (const std::exception& e) {
    // Not expected after the walk above; kept so that no exception escapes.
    why = std::string("not msgpack (") + e.what() + ")";
  } catch (...) {
    why = "not msgpack";
  }
  return false;
}

const char* msgpack_type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "string";
    case msgpack::type::BIN: return "binary";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown";
}

const msgpack::object* map_find(const msgpack::object& map, std::string_view key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && str_view(kv.key) == key) return &kv.val;
  }
  return nullptr;
}

double number_value(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
    default: return o.via.f64;  // msgpack-c widens FLOAT32 into f64
  }
}

}  // namespace cortex::wire
