// Decoding server -> client messages for tests and the C++ CLI client: a
// generic view over the msgpack map, not typed structs (clients read the
// few keys they need). Nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <msgpack.hpp>

namespace cortex::wire {

class server_message {
 public:
  // False when the bytes were not one msgpack map with a string `t`;
  // error() says why.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // REQUIRES for all below: ok().
  const msgpack::object& root() const { return handle_.get(); }
  std::string type() const { return get_string("t"); }
  std::string id() const { return get_string("id"); }     // "" when absent
  bool has(std::string_view key) const { return get(key) != nullptr; }
  // The value under a top-level key, or nullptr.
  const msgpack::object* get(std::string_view key) const;

  // Typed reads of a top-level key; `fallback` when absent or of another type.
  std::string get_string(std::string_view key, const std::string& fallback = "") const;
  uint64_t get_uint(std::string_view key, uint64_t fallback = 0) const;
  double get_double(std::string_view key, double fallback = 0) const;  // ints too
  bool get_bool(std::string_view key, bool fallback = false) const;

 private:
  friend server_message decode_server_message(const uint8_t* data, size_t size);
  msgpack::object_handle handle_;
  std::string error_;
};

server_message decode_server_message(const uint8_t* data, size_t size);

// The same typed reads on any map object (nested values: usage, timings...).
const msgpack::object* object_get(const msgpack::object& map, std::string_view key);
std::string object_string(const msgpack::object& map, std::string_view key, const std::string& fallback = "");
uint64_t object_uint(const msgpack::object& map, std::string_view key, uint64_t fallback = 0);
double object_double(const msgpack::object& map, std::string_view key, double fallback = 0);
bool object_bool(const msgpack::object& map, std::string_view key, bool fallback = false);

}  // namespace cortex::wire
