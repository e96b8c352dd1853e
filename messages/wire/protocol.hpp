// Constants of the wire protocol (../shared/docs/protocol.md, version 1)
// shared by the decoders and encoders of messages/wire. CAF-free.
#pragma once

#include <cstdint>

namespace cortex::wire {

// The only protocol major version this build speaks (envelope key `v`).
constexpr uint64_t protocol_version = 1;

// Client -> server message types (envelope key `t`). `none`: not known (the
// message could not be read far enough, or `t` named no type).
// `embed` and `rerank` are this server's additions (docs/wire-protocol.md):
// request messages like submit, each one engine request of kind embed.
enum class client_message_type : uint8_t { none, submit, cancel, ping, stats, health, models, embed, rerank };

// Whether messages of type `t` start a request (submit, embed, rerank):
// their rejection is the request's terminal event.
inline bool starts_request(client_message_type t) {
  return t == client_message_type::submit || t == client_message_type::embed || t == client_message_type::rerank;
}

// The wire name ("submit"...); "" for none.
const char* client_message_type_name(client_message_type t);

}  // namespace cortex::wire
