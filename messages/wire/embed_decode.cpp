#include "messages/wire/embed_decode.hpp"

#include <string_view>

#include "messages/wire/submit_decode.hpp"

namespace cortex::wire::detail {
namespace {

// An encoder request: no text generated, only the finished event.
void make_embed_request(generation_request& out) {
  out.kind = request_kind::embed;
  out.stream = false;
  out.want_text = false;
}

// A non-empty text field `key`, into `out`.
field_status read_nonempty_text(field_reader& r, const msgpack::object& val, const char* key, std::string& out) {
  if (!r.read_text(val, key, out)) return field_status::failed;
  if (out.empty()) return field_reader::status(r.fail(errc::invalid_param, std::string(key) + " is an empty string"));
  return field_status::known;
}

}  // namespace

bool decode_embed(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth) {
  make_embed_request(out);
  bool has_prompt = false, has_tokens = false;
  const bool ok = r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    const field_status common = decode_request_field(r, key, val, out, auth);
    if (common != field_status::unknown) return common;
    if (key != "v" && key != "t" && key != "prompt" && key != "tokens") return field_status::unknown;
    if (val.type == msgpack::type::NIL || key == "v" || key == "t") return field_status::known;
    if (key == "prompt") return has_prompt = true, read_nonempty_text(r, val, "prompt", out.prompt);
    has_tokens = true;
    return field_reader::status(r.read_token_ids(val, "tokens", r.lim.max_prompt_tokens, out.tokens));
  });
  if (!ok || !require_id(r, "embed", out)) return false;
  if (has_prompt == has_tokens)
    return r.fail(errc::invalid_param, has_prompt ? "give exactly one of prompt / tokens, not both"
                                                  : "embed needs prompt (a string) or tokens (an array of token ids)");
  if (has_tokens && out.tokens.empty()) return r.fail(errc::invalid_param, "tokens is empty; give at least one token id");
  out.use_tokens = has_tokens;
  return true;
}

bool decode_rerank(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth) {
  make_embed_request(out);
  const bool ok = r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    const field_status common = decode_request_field(r, key, val, out, auth);
    if (common != field_status::unknown) return common;
    if (key != "v" && key != "t" && key != "query" && key != "document") return field_status::unknown;
    if (val.type == msgpack::type::NIL || key == "v" || key == "t") return field_status::known;
    return read_nonempty_text(r, val, key == "query" ? "query" : "document", key == "query" ? out.prompt : out.document);
  });
  if (!ok || !require_id(r, "rerank", out)) return false;
  if (out.prompt.empty()) return r.fail(errc::invalid_param, "rerank needs query: the text the document is scored against");
  if (out.document.empty()) return r.fail(errc::invalid_param, "rerank needs document: the text scored against the query");
  return true;
}

}  // namespace cortex::wire::detail
