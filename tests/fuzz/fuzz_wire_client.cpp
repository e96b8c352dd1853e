// Fuzz target: client -> server wire messages (messages/wire/client_decode.hpp),
// every message type (submit with prompt / tokens / messages, cancel, ping,
// stats, health, models). Input: one msgpack frame as a client sends it.
#include <cstddef>
#include <cstdint>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/utf8.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const wire::decode_limits lim = [] {
    wire::decode_limits l;
    l.model_names = {"stories260K"};
    return l;
  }();
  const wire::decode_result d = wire::decode_client_message(data, size, lim);
  // client_decode.hpp: an id read is 1..max_id_bytes of valid UTF-8, and a
  // submit's request carries it.
  if (!d.id.empty()) {
    FUZZ_CHECK(d.id.size() <= lim.max_id_bytes);
    FUZZ_CHECK(wire::is_valid_utf8(d.id));
  }
  if (d.ok()) {
    FUZZ_CHECK(d.type != wire::client_message_type::none);
    if (wire::starts_request(d.type)) FUZZ_CHECK(d.request.client_id == d.id);
    FUZZ_CHECK(d.cancel_ids.size() <= lim.max_cancel_ids + 1);
  } else {
    FUZZ_CHECK(!d.error.message.empty());
  }
  FUZZ_CHECK(d.ignored.size() <= lim.max_ignored + 1);
  return 0;
}
