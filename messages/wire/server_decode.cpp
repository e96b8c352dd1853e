#include "messages/wire/server_decode.hpp"

#include "messages/wire/msgpack_bounded.hpp"

namespace cortex::wire {

namespace {
// Server replies nest at most 4 levels (stats -> percentiles; logprobs -> top -> pair).
constexpr uint32_t server_max_depth = 16;
}  // namespace

const msgpack::object* object_get(const msgpack::object& map, std::string_view key) { return map_find(map, key); }

std::string object_string(const msgpack::object& map, std::string_view key, const std::string& fallback) {
  const msgpack::object* o = map_find(map, key);
  return o && o->type == msgpack::type::STR ? std::string(str_view(*o)) : fallback;
}

uint64_t object_uint(const msgpack::object& map, std::string_view key, uint64_t fallback) {
  const msgpack::object* o = map_find(map, key);
  return o && o->type == msgpack::type::POSITIVE_INTEGER ? o->via.u64 : fallback;
}

double object_double(const msgpack::object& map, std::string_view key, double fallback) {
  const msgpack::object* o = map_find(map, key);
  return o && is_number(*o) ? number_value(*o) : fallback;
}

bool object_bool(const msgpack::object& map, std::string_view key, bool fallback) {
  const msgpack::object* o = map_find(map, key);
  return o && o->type == msgpack::type::BOOLEAN ? o->via.boolean : fallback;
}

const msgpack::object* server_message::get(std::string_view key) const { return map_find(root(), key); }
std::string server_message::get_string(std::string_view key, const std::string& fallback) const {
  return object_string(root(), key, fallback);
}
uint64_t server_message::get_uint(std::string_view key, uint64_t fallback) const {
  return object_uint(root(), key, fallback);
}
double server_message::get_double(std::string_view key, double fallback) const {
  return object_double(root(), key, fallback);
}
bool server_message::get_bool(std::string_view key, bool fallback) const { return object_bool(root(), key, fallback); }

server_message decode_server_message(const uint8_t* data, size_t size) {
  server_message m;
  std::string why;
  if (!unpack_bounded(data, size, server_max_depth, m.handle_, why))
    m.error_ = "not one msgpack value: " + why;
  else if (m.handle_.get().type != msgpack::type::MAP)
    m.error_ = std::string("not a msgpack map: ") + msgpack_type_name(m.handle_.get());
  else if (!map_find(m.handle_.get(), "t") || map_find(m.handle_.get(), "t")->type != msgpack::type::STR)
    m.error_ = "no string t (message type)";
  return m;
}

}  // namespace cortex::wire
