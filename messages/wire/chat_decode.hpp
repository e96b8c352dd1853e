// Internal to messages/wire: the chat fields of `submit` (protocol.md
// `messages`, `chat_template_kwargs`), checked for shape and passed on as
// JSON text (generation_request::messages_json and
// chat_template_kwargs_json) for intake to render with the chat template.
//
// `messages`: an array of 1..max_messages turns (more: 413 too_large), each
// a map with
//   role     a string, one of system | user | assistant | tool (anything
//            else, or missing: 400 invalid_param naming messages[i].role)
//   content  a string, or an array of text parts {type: "text", text: str}
//            (other part types, a part without text, any other value: 400
//            invalid_param naming the part). It may be missing or nil only
//            on an assistant turn that carries tool_calls (OpenAI's rule).
//   ...      every other key (tool_calls, tool_call_id, name, ...) is kept
//            as given: the template decides what it means.
// Values are converted by msgpack_to_json (binary is refused); key order is
// kept. `chat_template_kwargs`: a map with string keys, converted likewise.
// REQUIRES: `o` is not nil (nil means absent, handled by the caller).
#pragma once

#include <string>

#include "messages/wire/field_reader.hpp"

namespace cortex::wire::detail {

bool decode_messages(field_reader& r, const msgpack::object& o, std::string& messages_json);
bool decode_chat_template_kwargs(field_reader& r, const msgpack::object& o, std::string& kwargs_json);
// `tools`: an array (of OpenAI function tools; intake checks each), as JSON text.
bool decode_tools(field_reader& r, const msgpack::object& o, std::string& tools_json);
// `tool_choice`: "none" | "auto" | "required", or {type: "function",
// function: {name}} (choice "function", name set).
bool decode_tool_choice(field_reader& r, const msgpack::object& o, std::string& choice, std::string& name);

}  // namespace cortex::wire::detail
