// Decoding client -> server messages (protocol.md "Client to server") into
// the typed vocabulary of messages/request.hpp. CAF-free; nothing throws.
//
// Checked here: msgpack well-formedness, the envelope (`v`, `t`, `id`), the
// type and range of every field, the size limits of protocol.md, and `model`
// against the loaded model names. Not checked here (they need the model, so
// intake's request_validator does them): token ids < vocab, the prompt
// against the context, add_bos on an empty prompt.
//
// Error codes (exactly protocol.md's):
//   400 malformed      not msgpack, trailing bytes, not a map, a non-string
//                      or duplicate key, a field of the wrong msgpack type,
//                      `v` missing or not an integer
//   400 unknown_type   `t` missing (or nil) or naming no client message type
//   505 unsupported_version  `v` is an integer other than 1 (checked first
//                      after the map itself: the message is not processed)
//   400 invalid_param  a value out of range (message names field, range and
//                      the value sent), a negative or non-integer number where
//                      a uint is needed, invalid UTF-8 in a string, a missing
//                      or empty id where one is required, not exactly one
//                      of prompt / tokens / messages given, a chat turn of
//                      the wrong shape (chat_decode.hpp)
//   413 too_large      an id over max_id_bytes, more than max_stop_strings
//                      stop strings or a longer one than max_stop_bytes, more
//                      than max_logit_bias entries, more than max_messages
//                      turns, and the other array/map caps of decode_limits
//   404 unknown_model  `model` names none of decode_limits::model_names
//
// Type rules: uint fields take msgpack integers >= 0 (a negative integer or
// a float is invalid_param; any other type is malformed); int fields take
// integers; float fields take float32, float64 or integers and must be
// finite; bool fields take only bool. A nil value for an optional field means
// "absent" (the default applies), as clients commonly send null for "unset".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/errors.hpp"
#include "messages/request.hpp"
#include "messages/wire/protocol.hpp"

namespace cortex::wire {

// Bounds of what a client message may carry. Defaults are protocol.md's
// where it gives one; the others only bound memory (protocol.md leaves them
// open; the message bytes are also capped by ZMQ_MAXMSGSIZE).
struct decode_limits {
  std::vector<std::string> model_names;  // loaded models; empty: `model` is not checked
  uint32_t max_id_bytes = 64;            // protocol.md: ids are 1..64 bytes
  uint32_t max_stop_strings = 16;        // protocol.md
  uint32_t max_stop_bytes = 256;         // protocol.md, per stop string
  uint32_t max_logit_bias = 1024;        // entries (as intake's validation_limits)
  uint32_t max_logprobs = 20;            // protocol.md: want.logprobs in 0..20
  uint32_t max_prompt_tokens = 1u << 20; // `tokens` entries (the context is checked by intake)
  uint32_t max_stop_token_ids = 1024;
  uint32_t max_cancel_ids = 1024;        // `ids` entries
  uint32_t max_tags = 64;                // `tags` entries
  uint32_t max_tag_bytes = 1024;         // per tag key and per tag value
  uint32_t max_nonce_bytes = 1024;       // the ping nonce, re-encoded
  uint32_t max_messages = 1024;          // protocol.md: `messages` turns
  uint32_t max_depth = 16;               // protocol.md: msgpack nesting (chat turns nest deepest)
  uint32_t max_ignored = 32;             // unknown keys listed; further ones are summed up
};

struct decode_result {
  // The message type; also set on most errors (as soon as `t` was read), so
  // that the gateway can tell a rejected submit from a bad ping.
  client_message_type type = client_message_type::none;
  // The request id (1..max_id_bytes bytes, valid UTF-8) when the message
  // carried a readable one; "" otherwise. Set even when decoding failed
  // later, so that the error can be addressed to the request. For a
  // request (starts_request) it equals request.client_id.
  std::string id;
  // submit, embed, rerank (starts_request): fully populated, defaults applied
  generation_request request;
  std::string auth;                      // the request's `auth` field (API key secret), "" when absent; never logged
  std::vector<std::string> cancel_ids;   // cancel: `id` and/or `ids` (union, in order, no duplicates)
  std::vector<uint8_t> nonce;            // ping: the nonce as msgpack bytes; empty when absent
  // Unknown keys that were ignored, in message order: top-level as "foo",
  // nested as "params.foo" / "want.foo". At most max_ignored names; beyond
  // that the last entry reads "... and N more". A key longer than
  // max_id_bytes or not valid UTF-8 is listed as "<key of N bytes>".
  std::vector<std::string> ignored;
  status error;                    // error.is_ok() when ok()

  bool ok() const { return error.is_ok(); }
};

// Decodes one client message. `data` may be any bytes (hostile input is
// expected); memory use is O(size). Thread-safe (no shared state).
decode_result decode_client_message(const uint8_t* data, size_t size, const decode_limits& lim);

}  // namespace cortex::wire
