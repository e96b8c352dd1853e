#include "messages/wire/client_decode.hpp"

#include <algorithm>
#include <cstring>

#include "messages/wire/embed_decode.hpp"
#include "messages/wire/field_reader.hpp"
#include "messages/wire/msgpack_write.hpp"
#include "messages/wire/submit_decode.hpp"
#include "messages/wire/utf8.hpp"

namespace cortex::wire {

const char* client_message_type_name(client_message_type t) {
  switch (t) {
    case client_message_type::none: return "";
    case client_message_type::submit: return "submit";
    case client_message_type::cancel: return "cancel";
    case client_message_type::ping: return "ping";
    case client_message_type::stats: return "stats";
    case client_message_type::health: return "health";
    case client_message_type::models: return "models";
    case client_message_type::embed: return "embed";
    case client_message_type::rerank: return "rerank";
  }
  return "";
}

namespace {

using detail::field_reader;
using detail::field_status;

constexpr const char* type_list = "submit, cancel, ping, stats, health, models, embed, rerank";

client_message_type type_from_name(std::string_view name) {
  for (auto t : {client_message_type::submit, client_message_type::cancel, client_message_type::ping,
                 client_message_type::stats, client_message_type::health, client_message_type::models,
                 client_message_type::embed, client_message_type::rerank})
    if (name == client_message_type_name(t)) return t;
  return client_message_type::none;
}

bool is_envelope_key(std::string_view key) { return key == "v" || key == "t"; }

// An id the error reply can carry back: what read_id would accept.
bool addressable_id(const msgpack::object* o, const decode_limits& lim) {
  return o && o->type == msgpack::type::STR && o->via.str.size >= 1 && o->via.str.size <= lim.max_id_bytes &&
         is_valid_utf8(str_view(*o));
}

bool check_version(field_reader& r, const msgpack::object* v) {
  if (!v || v->type == msgpack::type::NIL)
    return r.fail(errc::malformed, "v (the protocol version) is missing; send v = 1");
  if (!is_integer(*v)) return r.type_error("v", "an integer (the protocol version, 1)", *v);
  if (v->type == msgpack::type::POSITIVE_INTEGER && v->via.u64 == protocol_version) return true;
  const std::string got = v->type == msgpack::type::POSITIVE_INTEGER ? std::to_string(v->via.u64)
                                                                     : std::to_string(v->via.i64);
  return r.fail(errc::unsupported_version,
                "protocol version " + got + " is not supported; this server speaks version 1: send v = 1");
}

bool read_type(field_reader& r, const msgpack::object* t, client_message_type& out) {
  if (!t || t->type == msgpack::type::NIL)
    return r.fail(errc::unknown_type, std::string("t (the message type) is missing; use one of ") + type_list);
  if (t->type != msgpack::type::STR) return r.type_error("t", "a string (the message type)", *t);
  out = type_from_name(str_view(*t));
  if (out == client_message_type::none)
    return r.fail(errc::unknown_type,
                  "unknown message type t = " + detail::quote_for_message(str_view(*t)) + "; use one of " + type_list);
  return true;
}

// cancel: `id` and/or `ids`; their union, first occurrences in order.
bool decode_cancel(field_reader& r, const msgpack::object& root, std::vector<std::string>& ids) {
  bool named = false;
  auto add = [&ids](std::string id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(std::move(id));
  };
  const bool ok = r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    if (is_envelope_key(key)) return field_status::known;
    if (key != "id" && key != "ids") return field_status::unknown;
    if (val.type == msgpack::type::NIL) return field_status::known;
    named = true;
    std::string id;
    if (key == "id") {
      if (!r.read_id(val, "id", id)) return field_status::failed;
      add(std::move(id));
      return field_status::known;
    }
    if (val.type != msgpack::type::ARRAY) return field_reader::status(r.type_error("ids", "an array of request ids", val));
    if (val.via.array.size > r.lim.max_cancel_ids)
      return field_reader::status(r.fail(errc::too_large, "ids has " + std::to_string(val.via.array.size) +
                                                      " entries; at most " + std::to_string(r.lim.max_cancel_ids) +
                                                      " are allowed: send several cancels"));
    for (uint32_t i = 0; i < val.via.array.size; ++i) {
      if (!r.read_id(val.via.array.ptr[i], "ids[" + std::to_string(i) + "]", id)) return field_status::failed;
      add(std::move(id));
    }
    return field_status::known;
  });
  if (!ok) return false;
  if (!named) return r.fail(errc::invalid_param, "cancel needs id (a request id) or ids (an array of request ids)");
  return true;
}

// ping: `nonce` is any value, kept as its msgpack encoding; `id` optional.
bool decode_ping(field_reader& r, const msgpack::object& root, std::string& id, std::vector<uint8_t>& nonce) {
  return r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    if (is_envelope_key(key)) return field_status::known;
    if (key == "id") return val.type == msgpack::type::NIL ? field_status::known : field_reader::status(r.read_id(val, "id", id));
    if (key != "nonce") return field_status::unknown;
    nonce.clear();
    write_object(nonce, val);
    if (nonce.size() > r.lim.max_nonce_bytes)
      return field_reader::status(r.fail(errc::too_large, "nonce is " + std::to_string(nonce.size()) +
                                                              " bytes as msgpack; at most " +
                                                              std::to_string(r.lim.max_nonce_bytes) + " are allowed"));
    return field_status::known;
  });
}

// stats, health, models: only an optional `id`.
bool decode_bare(field_reader& r, const msgpack::object& root, std::string& id) {
  return r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    if (is_envelope_key(key)) return field_status::known;
    if (key != "id") return field_status::unknown;
    return val.type == msgpack::type::NIL ? field_status::known : field_reader::status(r.read_id(val, "id", id));
  });
}

void decode_body(field_reader& r, const msgpack::object& root, decode_result& out) {
  if (!r.check_keys(root, "the message")) return;
  // Read the id first, for addressing only: its rules are the type's (below).
  const msgpack::object* id = map_find(root, "id");
  if (addressable_id(id, r.lim)) out.id.assign(str_view(*id));
  if (!check_version(r, map_find(root, "v"))) return;
  if (!read_type(r, map_find(root, "t"), out.type)) return;
  std::string checked_id;
  switch (out.type) {
    case client_message_type::submit:
      if (decode_submit(r, root, out.request, out.auth)) checked_id = out.request.client_id;
      break;
    case client_message_type::embed:
      if (decode_embed(r, root, out.request, out.auth)) checked_id = out.request.client_id;
      break;
    case client_message_type::rerank:
      if (decode_rerank(r, root, out.request, out.auth)) checked_id = out.request.client_id;
      break;
    case client_message_type::cancel:
      decode_cancel(r, root, out.cancel_ids);
      if (addressable_id(id, r.lim)) checked_id.assign(str_view(*id));
      break;
    case client_message_type::ping: decode_ping(r, root, checked_id, out.nonce); break;
    default: decode_bare(r, root, checked_id); break;
  }
  if (r.failed()) return;
  out.id = checked_id;
}

}  // namespace

decode_result decode_client_message(const uint8_t* data, size_t size, const decode_limits& lim) {
  decode_result out;
  field_reader r(out, lim);
  msgpack::object_handle handle;
  std::string why;
  try {
    if (!unpack_bounded(data, size, lim.max_depth, handle, why)) {
      r.fail(errc::malformed, "the message is not one valid msgpack value (" + why + "); send one msgpack map per frame");
    } else if (handle.get().type != msgpack::type::MAP) {
      r.type_error("the message", "a msgpack map", handle.get());
    } else {
      decode_body(r, handle.get(), out);
    }
  } catch (const std::exception& e) {  // std::bad_alloc: keep the promise that nothing escapes
    out = decode_result();
    out.error.code = errc::internal;
    out.error.message = std::string("decoding failed: ") + e.what();
  }
  r.finish_ignored();
  return out;
}

}  // namespace cortex::wire
