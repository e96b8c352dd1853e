// What the Responses API and Anthropic Messages API request parsers share.
// Both map their body onto a chat completions body (OpenAI's `messages`,
// `tools`, `tool_choice`, `response_format`...) and hand it to
// parse_openai_request: one path into the engine's chat request, so the
// template, tools, forced-call grammars and reasoning work as they do for
// /v1/chat/completions. Their own fields are checked first, here, so that
// errors name the field the client sent. CAF-free; nothing throws.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/json_field_reader.hpp"
#include "actors/http_gateway/openai_request.hpp"

namespace cortex::http::detail {

using ordered_json = nlohmann::ordered_json;

// A body read twice: `doc` for the typed checks of json_field_reader, `ordered`
// (the same tree, keys in the sender's order) for what is copied verbatim
// (JSON schemas: properties are generated in their order).
struct api_body {
  json doc;
  ordered_json ordered;
};

// Depth, JSON, object: false with `err` set (as parse_openai_request words them).
bool read_api_body(const std::string& body, const openai_limits& lim, api_body& out, openai_error& err);

// The value of `key` in `obj`, or nullptr when absent or null.
const json* field(const json& obj, const char* key);
// `param` + "[i]".
std::string at(const std::string& param, size_t i);

// The text of `v`: a string, or an array of parts {type, text} whose type is
// one of `types` (joined). Other part types are 501 unsupported naming the
// part (images, files, audio), or 400 when unknown.
bool read_text_or_parts(json_field_reader& r, const json& v, const std::string& param,
                        std::initializer_list<const char*> types, std::string& out);

// obj[key], a string that must be there: `param`.key names it.
bool read_required_string(json_field_reader& r, const json& obj, const std::string& param, const char* key,
                          std::string& out);

// Tool `t` (tools[i], named `param`; `ordered_t` the same in the sender's
// key order) as a chat completions function tool {type: "function",
// function: {name, description, parameters}}: `name` required, `description`
// a string, the schema under `schema_key` an object (required or not).
bool read_function_tool(json_field_reader& r, const json& t, const ordered_json& ordered_t, const std::string& param,
                        const char* schema_key, bool schema_required, ordered_json& out);

// Parses the chat completions body that a request was mapped to. The depth
// limit is the caller's plus 2 (the body was checked against it as sent,
// and the mapping nests schemas one or two levels deeper).
openai_parse_result parse_mapped_chat(const ordered_json& chat_body, const openai_limits& lim);

}  // namespace cortex::http::detail
