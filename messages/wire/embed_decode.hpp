// Internal to messages/wire: the bodies of `embed` and `rerank`, the
// encoder requests of docs/wire-protocol.md (additions to protocol.md).
// Each is one engine request of kind embed, answered by one `finished`
// that carries `embedding` (embed) or `score` (rerank). REQUIRES and
// errors as decode_submit's (submit_decode.hpp).
#pragma once

#include <string>

#include "messages/request.hpp"
#include "messages/wire/field_reader.hpp"

namespace cortex::wire::detail {

// embed: exactly one of `prompt` (text, framed as the model's vocabulary
// says: [CLS] text [SEP] for WordPiece) / `tokens` (ids used as given).
bool decode_embed(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth);
// rerank: `query` and `document`, both non-empty text; the score of the
// document against the query (out.prompt = query, out.document).
bool decode_rerank(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth);

}  // namespace cortex::wire::detail
