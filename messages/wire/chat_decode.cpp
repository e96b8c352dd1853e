#include "messages/wire/chat_decode.hpp"

#include <nlohmann/json.hpp>

#include "messages/wire/msgpack_json.hpp"

namespace cortex::wire::detail {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr const char* role_list = "one of \"system\", \"user\", \"assistant\", \"tool\"";
constexpr const char* content_shape = "a string or an array of text parts {type: \"text\", text: \"...\"}";

bool is_nil(const msgpack::object* o) { return !o || o->type == msgpack::type::NIL; }

// What a client sent, for an error message: a short string quoted, else
// its type ("an integer", "a map").
std::string shown(const msgpack::object& o) {
  if (o.type == msgpack::type::STR) return quote_for_message(str_view(o));
  const std::string type = msgpack_type_name(o);
  return (std::string("aeiou").find(type[0]) != std::string::npos ? "an " : "a ") + type;
}

bool check_role(field_reader& r, const msgpack::object* role, const std::string& field, std::string_view& out) {
  if (is_nil(role)) return r.fail(errc::invalid_param, field + " is missing; give " + role_list);
  if (role->type == msgpack::type::STR) {
    out = str_view(*role);
    if (out == "system" || out == "user" || out == "assistant" || out == "tool") return true;
  }
  return r.range_error(field, role_list, shown(*role));
}

// One element of an array content: {type: "text", text: str, ...}.
bool check_text_part(field_reader& r, const msgpack::object& part, const std::string& field) {
  if (part.type != msgpack::type::MAP)
    return r.fail(errc::invalid_param, field + " must be a text part {type: \"text\", text: \"...\"}, got " + shown(part));
  if (!r.check_keys(part, field)) return false;
  const msgpack::object* type = map_find(part, "type");
  if (is_nil(type) || type->type != msgpack::type::STR || str_view(*type) != "text")
    return r.fail(errc::invalid_param, field + ".type must be \"text\" (only text parts are supported), got " +
                                           (is_nil(type) ? std::string("nothing") : shown(*type)));
  const msgpack::object* text = map_find(part, "text");
  if (is_nil(text) || text->type != msgpack::type::STR)
    return r.fail(errc::invalid_param, field + ".text must be a string, got " +
                                           (is_nil(text) ? std::string("nothing") : shown(*text)));
  return true;
}

bool check_content(field_reader& r, const msgpack::object& turn, std::string_view role, const std::string& field) {
  const msgpack::object* content = map_find(turn, "content");
  if (is_nil(content)) {
    if (role == "assistant" && !is_nil(map_find(turn, "tool_calls"))) return true;
    return r.fail(errc::invalid_param, field + " is missing; give " + content_shape +
                                           " (only an assistant turn with tool_calls may leave it out)");
  }
  if (content->type == msgpack::type::STR) return true;
  if (content->type != msgpack::type::ARRAY) return r.range_error(field, content_shape, shown(*content));
  for (uint32_t j = 0; j < content->via.array.size; ++j)
    if (!check_text_part(r, content->via.array.ptr[j], field + "[" + std::to_string(j) + "]")) return false;
  return true;
}

}  // namespace

bool decode_messages(field_reader& r, const msgpack::object& o, std::string& messages_json) {
  if (o.type != msgpack::type::ARRAY) return r.type_error("messages", "an array of turns {role, content}", o);
  const uint32_t n = o.via.array.size;
  if (n == 0) return r.fail(errc::invalid_param, "messages is empty; give at least one turn {role, content}");
  if (n > r.lim.max_messages)
    return r.fail(errc::too_large, "messages has " + std::to_string(n) + " turns; at most " +
                                       std::to_string(r.lim.max_messages) + " are allowed");
  ordered_json turns = ordered_json::array();
  std::string path;
  for (uint32_t i = 0; i < n; ++i) {
    const msgpack::object& turn = o.via.array.ptr[i];
    path = "messages[" + std::to_string(i) + "]";
    if (turn.type != msgpack::type::MAP) return r.type_error(path, "a map {role, content, ...}", turn);
    if (!r.check_keys(turn, path)) return false;
    std::string_view role;
    if (!check_role(r, map_find(turn, "role"), path + ".role", role)) return false;
    if (!check_content(r, turn, role, path + ".content")) return false;
    ordered_json converted;
    if (!msgpack_to_json(r, turn, path, r.lim.max_depth, converted)) return false;
    turns.push_back(std::move(converted));
  }
  messages_json = turns.dump();
  return true;
}

bool decode_chat_template_kwargs(field_reader& r, const msgpack::object& o, std::string& kwargs_json) {
  return decode_json_map(r, o, "chat_template_kwargs", "a map of template variable names to values", kwargs_json);
}

bool decode_tools(field_reader& r, const msgpack::object& o, std::string& tools_json) {
  if (o.type != msgpack::type::ARRAY) return r.type_error("tools", "an array of {type: \"function\", function: {name, parameters}}", o);
  std::string path = "tools";
  nlohmann::ordered_json j;
  if (!msgpack_to_json(r, o, path, r.lim.max_depth, j)) return false;
  tools_json = j.dump();
  return true;
}

bool decode_tool_choice(field_reader& r, const msgpack::object& o, std::string& choice, std::string& name) {
  constexpr const char* what = "\"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}";
  if (o.type == msgpack::type::STR) {
    choice.assign(o.via.str.ptr, o.via.str.size);
    if (choice != "none" && choice != "auto" && choice != "required")
      return r.fail(errc::invalid_param, std::string("tool_choice must be ") + what + ", got \"" + choice + "\"");
    return true;
  }
  if (o.type != msgpack::type::MAP) return r.type_error("tool_choice", what, o);
  std::string path = "tool_choice";
  nlohmann::ordered_json j;
  if (!msgpack_to_json(r, o, path, r.lim.max_depth, j)) return false;
  const auto fn = j.find("function");
  if (fn == j.end() || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
    return r.fail(errc::invalid_param, std::string("tool_choice must be ") + what);
  choice = "function";
  name = (*fn)["name"].get<std::string>();
  return true;
}

}  // namespace cortex::wire::detail
