#include "actors/http_gateway/anthropic_messages.hpp"

#include <utility>

#include "actors/http_gateway/api_request.hpp"
#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

using nlohmann::ordered_json;

namespace {

using detail::at;
using detail::field;
using detail::json;

// Fields that mean the same in a chat completions body, copied as sent.
constexpr const char* same_fields[] = {"model", "temperature", "top_p", "top_k", "stream", "seed", "min_p",
                                       "repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens",
                                       "ignore_eos", "stop_token_ids", "priority", "deadline_ms", "grammar",
                                       "speculative", "reasoning_format", "logit_bias"};

void rename_param(openai_error& e) {
  if (e.param.compare(0, 4, "stop") != 0 || e.param.compare(0, 14, "stop_token_ids") == 0) return;
  e.param = "stop_sequences" + e.param.substr(4);
  if (e.report.message.compare(0, 4, "stop") == 0) e.report.message = "stop_sequences" + e.report.message.substr(4);
}

class anthropic_mapper {
 public:
  anthropic_mapper(const detail::api_body& b, bool count_tokens, openai_error& err)
      : doc_(b.doc), ordered_(b.ordered), count_tokens_(count_tokens), r_(err) {}

  bool map(ordered_json& chat) {
    chat = ordered_json::object();
    for (const char* k : same_fields)
      if (field(doc_, k)) chat[k] = ordered_[k];
    if (!map_max_tokens(chat) || !map_system() || !map_messages() || !map_tools(chat) || !map_tool_choice(chat) ||
        !map_thinking(chat))
      return false;
    if (const json* v = field(doc_, "stop_sequences")) {
      if (!v->is_array()) return r_.expected("stop_sequences", "an array of strings", *v);
      chat["stop"] = ordered_["stop_sequences"];
    }
    if (count_tokens_) {
      chat["stream"] = false;
      chat["max_tokens"] = 1;
    }
    chat["messages"] = std::move(messages_);
    return true;
  }

 private:
  bool map_max_tokens(ordered_json& chat) {
    const json* v = field(doc_, "max_tokens");
    if (!v) {
      if (count_tokens_) return true;
      return r_.fail(errc::invalid_param, "max_tokens", "max_tokens is required: the most tokens to generate (an integer >= 1)");
    }
    int64_t n = 0;
    if (!r_.read_int(*v, "max_tokens", 1, INT64_MAX, "an integer >= 1", n)) return false;
    chat["max_tokens"] = n;
    return true;
  }

  bool map_system() {
    const json* v = field(doc_, "system");
    if (!v) return true;
    std::string s;
    if (!detail::read_text_or_parts(r_, *v, "system", {"text"}, s)) return false;
    messages_.push_back({{"role", "system"}, {"content", s}});
    return true;
  }

  bool read_required_string(const json& obj, const std::string& param, const char* key, std::string& out) {
    return detail::read_required_string(r_, obj, param, key, out);
  }

  bool map_messages() {
    const json* v = field(doc_, "messages");
    if (!v) return r_.fail(errc::invalid_param, "messages", "messages is required: an array of {role, content}");
    if (!v->is_array()) return r_.expected("messages", "an array of {role: \"user\" | \"assistant\", content}", *v);
    if (v->empty()) return r_.fail(errc::invalid_param, "messages", "messages is empty; give at least one message");
    for (size_t i = 0; i < v->size(); ++i) {
      const json& m = (*v)[i];
      const std::string p = at("messages", i);
      if (!m.is_object()) return r_.expected(p, "an object {role, content}", m);
      std::string role;
      if (!read_required_string(m, p, "role", role)) return false;
      if (role != "user" && role != "assistant") return r_.expected(p + ".role", "\"user\" or \"assistant\"", *field(m, "role"));
      const json* c = field(m, "content");
      if (!c) return r_.fail(errc::invalid_param, p + ".content", p + ".content is required: a string or an array of blocks");
      if (c->is_string()) {
        messages_.push_back({{"role", role}, {"content", c->get<std::string>()}});
        continue;
      }
      if (!c->is_array()) return r_.expected(p + ".content", "a string or an array of content blocks", *c);
      if (!(role == "user" ? map_user_blocks(*c, i, p + ".content") : map_assistant_blocks(*c, i, p + ".content"))) return false;
    }
    return true;
  }

  // The block's type, after checking it is an object with one.
  bool block_type(const json& b, const std::string& p, std::string& type) {
    if (!b.is_object()) return r_.expected(p, "a content block {type, ...}", b);
    return read_required_string(b, p, "type", type);
  }

  bool unsupported_block(const std::string& p, const std::string& type, const char* known) {
    if (type == "image" || type == "document" || type == "search_result" || type == "container_upload")
      return r_.fail(errc::unsupported, p + ".type", p + " is a " + type + " block; only text blocks are supported");
    return r_.fail(errc::invalid_param, p + ".type", p + ".type must be " + std::string(known) + ", got " + json(type).dump());
  }

  // Tool results become `tool` turns (in order), the text one user turn after them.
  bool map_user_blocks(const json& blocks, size_t i, const std::string& param) {
    std::string text;
    bool has_text = false;
    for (size_t k = 0; k < blocks.size(); ++k) {
      const std::string p = at(param, k);
      std::string type, s;
      if (!block_type(blocks[k], p, type)) return false;
      if (type == "text") {
        if (!read_required_string(blocks[k], p, "text", s)) return false;
        text += s;
        has_text = true;
      } else if (type == "tool_result") {
        std::string id, content;
        if (!read_required_string(blocks[k], p, "tool_use_id", id)) return false;
        if (const json* c = field(blocks[k], "content"); c && !detail::read_text_or_parts(r_, *c, p + ".content", {"text"}, content))
          return false;
        bool is_error = false;
        if (const json* e = field(blocks[k], "is_error"); e && !r_.read_bool(*e, p + ".is_error", is_error)) return false;
        messages_.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", is_error ? "Error: " + content : content}});
      } else {
        return unsupported_block(p, type, "\"text\" or \"tool_result\" in a user turn");
      }
    }
    if (has_text || blocks.empty()) messages_.push_back({{"role", "user"}, {"content", text}});
    return true;
  }

  bool map_assistant_blocks(const json& blocks, size_t i, const std::string& param) {
    ordered_json m = {{"role", "assistant"}, {"content", ""}};  // "" with only calls: templates test `in content`
    std::string text, thinking;
    ordered_json calls = ordered_json::array();
    for (size_t k = 0; k < blocks.size(); ++k) {
      const std::string p = at(param, k);
      std::string type, s;
      if (!block_type(blocks[k], p, type)) return false;
      if (type == "text") {
        if (!read_required_string(blocks[k], p, "text", s)) return false;
        text += s;
      } else if (type == "thinking") {
        if (!read_required_string(blocks[k], p, "thinking", s)) return false;
        thinking += s;
      } else if (type == "redacted_thinking") {
        continue;  // opaque: nothing a template can show
      } else if (type == "tool_use") {
        std::string id, name;
        if (!read_required_string(blocks[k], p, "id", id) || !read_required_string(blocks[k], p, "name", name)) return false;
        const json* input = field(blocks[k], "input");
        if (!input || !input->is_object())
          return r_.fail(errc::invalid_param, p + ".input", p + ".input is required: the call's arguments as an object");
        calls.push_back({{"id", id}, {"type", "function"},
                         {"function", {{"name", name}, {"arguments", dump_json(ordered_["messages"][i]["content"][k]["input"])}}}});
      } else {
        return unsupported_block(p, type, "\"text\", \"thinking\" or \"tool_use\" in an assistant turn");
      }
    }
    m["content"] = text;
    if (!thinking.empty()) m["reasoning_content"] = thinking;
    if (!calls.empty()) m["tool_calls"] = std::move(calls);
    messages_.push_back(std::move(m));
    return true;
  }

  bool map_tools(ordered_json& chat) {
    const json* v = field(doc_, "tools");
    if (!v) return true;
    if (!v->is_array()) return r_.expected("tools", "an array of {name, description, input_schema}", *v);
    ordered_json tools = ordered_json::array();
    for (size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      const std::string p = at("tools", i);
      if (!t.is_object()) return r_.expected(p, "an object {name, description, input_schema}", t);
      std::string type = "custom";
      if (const json* ty = field(t, "type"); ty && !r_.read_string(*ty, p + ".type", type)) return false;
      if (type != "custom")
        return r_.fail(errc::unsupported, p + ".type", p + " is a " + type + " tool; only client tools {name, description, input_schema} are supported");
      ordered_json tool;
      if (!detail::read_function_tool(r_, t, ordered_["tools"][i], p, "input_schema", true, tool)) return false;
      tools.push_back(std::move(tool));
    }
    if (!tools.empty()) chat["tools"] = std::move(tools);
    return true;
  }

  bool map_tool_choice(ordered_json& chat) {
    const json* v = field(doc_, "tool_choice");
    if (!v) return true;
    if (!v->is_object()) return r_.expected("tool_choice", "an object {type: \"auto\" | \"any\" | \"tool\" | \"none\"}", *v);
    std::string type, name;
    if (!read_required_string(*v, "tool_choice", "type", type)) return false;
    if (type == "auto" || type == "none") {
      chat["tool_choice"] = type;
    } else if (type == "any") {
      chat["tool_choice"] = "required";
    } else if (type == "tool") {
      if (!read_required_string(*v, "tool_choice", "name", name)) return false;
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    } else {
      return r_.expected("tool_choice.type", "\"auto\", \"any\", \"tool\" or \"none\"", *field(*v, "type"));
    }
    if (const json* d = field(*v, "disable_parallel_tool_use")) {
      bool off = false;
      if (!r_.read_bool(*d, "tool_choice.disable_parallel_tool_use", off)) return false;
      chat["parallel_tool_calls"] = !off;
    }
    return true;
  }

  bool map_thinking(ordered_json& chat) {
    ordered_json kwargs = ordered_json::object();
    if (const json* k = field(doc_, "chat_template_kwargs")) {
      if (!k->is_object()) return r_.expected("chat_template_kwargs", "an object of template variables", *k);
      kwargs = ordered_["chat_template_kwargs"];
    }
    if (const json* v = field(doc_, "thinking")) {
      if (!v->is_object()) return r_.expected("thinking", "an object {type: \"enabled\", budget_tokens} or {type: \"disabled\"}", *v);
      std::string type;
      if (!read_required_string(*v, "thinking", "type", type)) return false;
      if (type != "enabled" && type != "disabled")
        return r_.expected("thinking.type", "\"enabled\" or \"disabled\"", *field(*v, "type"));
      if (const json* b = field(*v, "budget_tokens")) {
        int64_t n = 0;
        if (!r_.read_int(*b, "thinking.budget_tokens", 1, INT64_MAX, "an integer >= 1", n)) return false;
      }
      kwargs["enable_thinking"] = type == "enabled";
    }
    if (!kwargs.empty()) chat["chat_template_kwargs"] = std::move(kwargs);
    return true;
  }

  const json& doc_;
  const ordered_json& ordered_;
  bool count_tokens_;
  detail::json_field_reader r_;
  ordered_json messages_ = ordered_json::array();
};

const char* anthropic_error_type(uint16_t status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

anthropic_parse_result parse_anthropic_request(const std::string& body, const openai_limits& lim, bool count_tokens) {
  anthropic_parse_result res;
  detail::api_body b;
  if (!detail::read_api_body(body, lim, b, res.error)) return res;
  ordered_json chat;
  if (!anthropic_mapper(b, count_tokens, res.error).map(chat)) return res;
  auto parsed = detail::parse_mapped_chat(chat, lim);
  if (!parsed.ok()) {
    res.error = std::move(parsed.error);
    rename_param(res.error);
    return res;
  }
  res.request = std::move(parsed.request);
  return res;
}

bool is_anthropic_target(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/v1/messages" || path.compare(0, 13, "/v1/messages/") == 0;
}

std::string anthropic_error_body(const status& e) {
  return dump_json(ordered_json{{"type", "error"},
                                {"error", {{"type", anthropic_error_type(openai_http_status(e.code))}, {"message", e.message}}}});
}

openai_error_response make_anthropic_error(const status& e) {
  openai_error_response r = make_openai_error(e);  // the same status and headers
  r.body = anthropic_error_body(e);
  return r;
}

anthropic_encoder::anthropic_encoder(bool streaming, std::string id, std::string model)
    : api_encoder(streaming), id_(std::move(id)), model_(std::move(model)) {}

ordered_json anthropic_encoder::stop_reason() const {
  switch (reason()) {
    case finish_reason::stop:
      if (blocks().has_tool_calls()) return "tool_use";
      return stop_string().empty() ? "end_turn" : "stop_sequence";
    case finish_reason::length: return "max_tokens";
    default: return finish_reason_name(reason());
  }
}

ordered_json anthropic_encoder::block_json(size_t block, bool finished) const {
  const output_block& b = blocks().blocks()[block];
  switch (b.kind) {
    case block_kind::reasoning:
      return {{"type", "thinking"}, {"thinking", finished ? b.text : std::string()}, {"signature", ""}};
    case block_kind::text: return {{"type", "text"}, {"text", finished ? b.text : std::string()}};
    case block_kind::tool_call: {
      ordered_json input = ordered_json::object();
      if (finished) {  // arguments the model cut short (max_tokens) are no object: {} then
        auto parsed = ordered_json::parse(b.text, nullptr, false);
        if (parsed.is_object()) input = std::move(parsed);
      }
      return {{"type", "tool_use"}, {"id", b.call_id}, {"name", b.name}, {"input", std::move(input)}};
    }
  }
  return nullptr;
}

ordered_json anthropic_encoder::message_json(bool finished) const {
  ordered_json content = ordered_json::array();
  if (finished)
    for (size_t i = 0; i < blocks().blocks().size(); ++i) content.push_back(block_json(i, true));
  const bool stop_seq = finished && !stop_string().empty() && stop_reason() == "stop_sequence";
  return {{"id", id_},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model_},
          {"content", std::move(content)},
          {"stop_reason", finished ? stop_reason() : ordered_json(nullptr)},
          {"stop_sequence", stop_seq ? ordered_json(stop_string()) : ordered_json(nullptr)},
          {"usage", {{"input_tokens", usage().input_tokens}, {"output_tokens", finished ? usage().output_tokens : 0u}}}};
}

std::string anthropic_encoder::body() const { return dump_json(message_json(true)); }

openai_error_response anthropic_encoder::error_response(const status& e, std::string_view) const {
  return make_anthropic_error(e);
}

std::string anthropic_encoder::start_events(const request_accepted&) {
  return sse_named_event("message_start", dump_json(ordered_json{{"type", "message_start"}, {"message", message_json(false)}})) +
         sse_named_event("ping", R"({"type":"ping"})");
}

std::string anthropic_encoder::block_events(const block_event& e) {
  const output_block& b = blocks().blocks()[e.block];
  switch (e.type) {
    case block_event::what::open:
      return sse_named_event("content_block_start", dump_json(ordered_json{{"type", "content_block_start"},
                                                                           {"index", e.block},
                                                                           {"content_block", block_json(e.block, false)}}));
    case block_event::what::delta: {
      ordered_json delta;
      if (b.kind == block_kind::text) delta = {{"type", "text_delta"}, {"text", e.delta}};
      else if (b.kind == block_kind::reasoning) delta = {{"type", "thinking_delta"}, {"thinking", e.delta}};
      else delta = {{"type", "input_json_delta"}, {"partial_json", e.delta}};
      return sse_named_event("content_block_delta",
                             dump_json(ordered_json{{"type", "content_block_delta"}, {"index", e.block}, {"delta", std::move(delta)}}));
    }
    case block_event::what::close:
      return sse_named_event("content_block_stop", dump_json(ordered_json{{"type", "content_block_stop"}, {"index", e.block}}));
  }
  return {};
}

std::string anthropic_encoder::end_events(const request_finished&) {
  const ordered_json done = message_json(true);
  return sse_named_event("message_delta",
                         dump_json(ordered_json{{"type", "message_delta"},
                                                {"delta", {{"stop_reason", done["stop_reason"]}, {"stop_sequence", done["stop_sequence"]}}},
                                                {"usage", {{"output_tokens", usage().output_tokens}}}})) +
         sse_named_event("message_stop", R"({"type":"message_stop"})");
}

std::string anthropic_encoder::error_events(const status& e, std::string_view) {
  return sse_named_event("error", anthropic_error_body(e));
}

}  // namespace cortex::http
