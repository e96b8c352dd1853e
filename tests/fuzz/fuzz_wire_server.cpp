// Fuzz target: the generic server -> client decoder
// (messages/wire/server_decode.hpp) that the C++ client and the tests read
// server replies with, and its typed reads on the keys clients use.
#include <cstddef>
#include <cstdint>

#include "messages/wire/server_decode.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wire::server_message m = wire::decode_server_message(data, size);
  if (!m.ok()) {
    FUZZ_CHECK(!m.error().empty());
    return 0;
  }
  FUZZ_CHECK(m.root().type == msgpack::type::MAP);
  FUZZ_CHECK(m.get("t") != nullptr);  // ok() promises a string `t`
  (void)m.type();
  (void)m.id();
  for (const char* key : {"seq", "index", "v", "terminal", "text", "reason", "code", "message", "retry_after_ms"}) {
    (void)m.has(key);
    (void)m.get_string(key, "x");
    (void)m.get_uint(key, 7);
    (void)m.get_double(key, 0.5);
    (void)m.get_bool(key, true);
  }
  // Nested maps (usage, timings, error details...): the same reads on each.
  const msgpack::object& root = m.root();
  for (uint32_t i = 0; i < root.via.map.size; ++i) {
    const msgpack::object& v = root.via.map.ptr[i].val;
    if (v.type != msgpack::type::MAP) continue;
    for (const char* key : {"prompt_tokens", "completion_tokens", "total_ms", "name"}) {
      (void)wire::object_get(v, key);
      (void)wire::object_string(v, key);
      (void)wire::object_uint(v, key);
      (void)wire::object_double(v, key);
      (void)wire::object_bool(v, key);
    }
  }
  return 0;
}
