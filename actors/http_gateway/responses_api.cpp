#include "actors/http_gateway/responses_api.hpp"

#include <utility>

#include "actors/http_gateway/api_request.hpp"
#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

using nlohmann::ordered_json;

namespace {

using detail::at;
using detail::field;
using detail::json;

// Fields that mean the same in a chat completions body, copied as sent
// (parse_openai_request checks them and its errors name them alike).
constexpr const char* same_fields[] = {"model", "temperature", "top_p", "stream", "parallel_tool_calls", "seed",
                                       "top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
                                       "min_tokens", "ignore_eos", "stop_token_ids", "priority", "deadline_ms",
                                       "grammar", "speculative", "reasoning_format", "chat_template_kwargs", "user",
                                       "logit_bias"};

// A chat parser error named in the Responses API's words.
void rename_param(openai_error& e) {
  static const std::pair<const char*, const char*> names[] = {
      {"response_format.json_schema", "text.format"}, {"response_format", "text.format"},
      {"max_tokens", "max_output_tokens"}, {"reasoning_effort", "reasoning.effort"}};
  for (const auto& [chat, ours] : names) {
    const std::string from = chat;
    if (e.param.compare(0, from.size(), from) != 0) continue;
    e.param = ours + e.param.substr(from.size());
    for (size_t p; (p = e.report.message.find(from)) != std::string::npos;) e.report.message.replace(p, from.size(), ours);
    return;
  }
}

class responses_mapper {
 public:
  responses_mapper(const detail::api_body& b, responses_request& out, openai_error& err)
      : doc_(b.doc), ordered_(b.ordered), out_(out), r_(err) {}

  bool map(ordered_json& chat) {
    chat = ordered_json::object();
    for (const char* k : same_fields)
      if (field(doc_, k)) chat[k] = ordered_[k];
    return stateless() && map_instructions() && map_input() && map_tools(chat) && map_tool_choice(chat) &&
           map_text(chat) && map_limits(chat) && (chat["messages"] = std::move(messages_), true);
  }

 private:
  bool stateless() {
    if (const json* v = field(doc_, "store")) {
      bool store = false;
      if (!r_.read_bool(*v, "store", store)) return false;
      if (store)
        return r_.fail(errc::invalid_param, "store", "store must be false or absent: this server keeps no responses (send the whole input each time)");
    }
    if (field(doc_, "previous_response_id"))
      return r_.fail(errc::invalid_param, "previous_response_id",
                     "previous_response_id is not supported: this server keeps no responses; send the earlier items in input");
    if (field(doc_, "conversation"))
      return r_.fail(errc::invalid_param, "conversation", "conversation is not supported: this server keeps no conversations; send the items in input");
    if (const json* v = field(doc_, "background"); v && !(v->is_boolean() && !v->get<bool>()))
      return r_.fail(errc::invalid_param, "background", "background must be false or absent: responses are answered while the request is open");
    return true;
  }

  bool map_instructions() {
    const json* v = field(doc_, "instructions");
    if (!v) return true;
    std::string s;
    if (!r_.read_string(*v, "instructions", s)) return false;
    out_.instructions = s;
    messages_.push_back({{"role", "system"}, {"content", s}});
    return true;
  }

  bool map_input() {
    const json* v = field(doc_, "input");
    if (!v) return r_.fail(errc::invalid_param, "input", "input is required: a string or an array of items");
    if (v->is_string()) {
      messages_.push_back({{"role", "user"}, {"content", v->get<std::string>()}});
      return true;
    }
    if (!v->is_array()) return r_.expected("input", "a string or an array of items", *v);
    if (v->empty()) return r_.fail(errc::invalid_param, "input", "input is empty; give at least one item");
    for (size_t i = 0; i < v->size(); ++i)
      if (!map_item((*v)[i], at("input", i))) return false;
    return true;
  }

  bool read_required_string(const json& obj, const std::string& param, const char* key, std::string& out) {
    return detail::read_required_string(r_, obj, param, key, out);
  }

  // The assistant message a call joins: the last message when it is an
  // assistant turn (text then calls, or calls in a row), else a new one.
  ordered_json& assistant_turn() {
    if (messages_.empty() || messages_.back()["role"] != "assistant" || !pending_reasoning_.empty())
      messages_.push_back({{"role", "assistant"}, {"content", ""}});  // "": templates test `in content`
    take_reasoning(messages_.back());
    return messages_.back();
  }

  void take_reasoning(ordered_json& m) {
    if (pending_reasoning_.empty()) return;
    m["reasoning_content"] = std::move(pending_reasoning_);
    pending_reasoning_.clear();
  }

  bool map_item(const json& item, const std::string& param) {
    if (!item.is_object()) return r_.expected(param, "an item object ({role, content} or {type, ...})", item);
    std::string type = "message";
    if (const json* t = field(item, "type"); t && !r_.read_string(*t, param + ".type", type)) return false;
    if (type == "message") return map_message(item, param);
    if (type == "function_call") {
      std::string call_id, name, arguments;
      if (!read_required_string(item, param, "call_id", call_id) || !read_required_string(item, param, "name", name) ||
          !read_required_string(item, param, "arguments", arguments))
        return false;
      ordered_json& turn = assistant_turn();
      if (!turn.contains("tool_calls")) turn["tool_calls"] = ordered_json::array();
      turn["tool_calls"].push_back(
          {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}});
      return true;
    }
    if (type == "function_call_output") {
      std::string call_id, output;
      if (!read_required_string(item, param, "call_id", call_id)) return false;
      const json* o = field(item, "output");
      if (!o) return r_.fail(errc::invalid_param, param + ".output", param + ".output is required");
      if (!detail::read_text_or_parts(r_, *o, param + ".output", {"input_text", "output_text", "text"}, output)) return false;
      messages_.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}});
      return true;
    }
    if (type == "reasoning") {  // its text goes back with the next assistant turn (templates that show past thinking)
      if (const json* c = field(item, "content")) {
        std::string text;
        if (!detail::read_text_or_parts(r_, *c, param + ".content", {"reasoning_text"}, text)) return false;
        pending_reasoning_ += text;
      }
      return true;
    }
    if (type == "item_reference")
      return r_.fail(errc::invalid_param, param + ".type",
                     param + " is an item_reference; this server keeps no items: send the item itself");
    return r_.expected(param + ".type", "\"message\", \"function_call\", \"function_call_output\" or \"reasoning\"",
                       *field(item, "type"));
  }

  bool map_message(const json& item, const std::string& param) {
    std::string role;
    if (!read_required_string(item, param, "role", role)) return false;
    if (role == "developer") role = "system";
    if (role != "user" && role != "assistant" && role != "system")
      return r_.expected(param + ".role", "\"user\", \"assistant\", \"system\" or \"developer\"", *field(item, "role"));
    const json* c = field(item, "content");
    if (!c) return r_.fail(errc::invalid_param, param + ".content", param + ".content is required");
    std::string text;
    if (!detail::read_text_or_parts(r_, *c, param + ".content", {"input_text", "output_text", "text", "refusal"}, text))
      return false;
    ordered_json m = {{"role", role}, {"content", text}};
    if (role == "assistant") take_reasoning(m);
    messages_.push_back(std::move(m));
    return true;
  }

  bool map_tools(ordered_json& chat) {
    const json* v = field(doc_, "tools");
    if (!v) return true;
    if (!v->is_array()) return r_.expected("tools", "an array of {type: \"function\", name, description, parameters}", *v);
    ordered_json tools = ordered_json::array();
    for (size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      const std::string p = at("tools", i);
      if (!t.is_object()) return r_.expected(p, "an object {type: \"function\", name, description, parameters}", t);
      std::string type;
      if (!read_required_string(t, p, "type", type)) return false;
      if (type != "function")
        return r_.fail(errc::unsupported, p + ".type", p + " is a " + type + " tool; only function tools are supported");
      ordered_json tool;
      if (!detail::read_function_tool(r_, t, ordered_["tools"][i], p, "parameters", false, tool)) return false;
      if (const json* st = field(t, "strict")) {
        bool strict = false;
        if (!r_.read_bool(*st, p + ".strict", strict)) return false;
        tool["function"]["strict"] = strict;
      }
      tools.push_back(std::move(tool));
    }
    out_.tools = ordered_["tools"];
    chat["tools"] = std::move(tools);
    return true;
  }

  bool map_tool_choice(ordered_json& chat) {
    const json* v = field(doc_, "tool_choice");
    if (!v) return true;
    out_.tool_choice = ordered_["tool_choice"];
    if (v->is_string()) {
      const std::string c = v->get<std::string>();
      if (c != "none" && c != "auto" && c != "required")
        return r_.expected("tool_choice", "\"none\", \"auto\", \"required\" or {type: \"function\", name}", *v);
      chat["tool_choice"] = c;
      return true;
    }
    if (!v->is_object()) return r_.expected("tool_choice", "a string or {type: \"function\", name}", *v);
    std::string type, name;
    if (!read_required_string(*v, "tool_choice", "type", type)) return false;
    if (type != "function")
      return r_.fail(errc::unsupported, "tool_choice.type", "tool_choice.type is " + type + "; only \"function\" (with name) is supported");
    if (!read_required_string(*v, "tool_choice", "name", name)) return false;
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    return true;
  }

  bool map_text(ordered_json& chat) {
    const json* v = field(doc_, "text");
    if (!v) return true;
    if (!v->is_object()) return r_.expected("text", "an object {format: {type}}", *v);
    out_.text = ordered_["text"];
    const json* f = field(*v, "format");
    if (!f) return true;
    if (!f->is_object()) return r_.expected("text.format", "an object {type: \"text\" | \"json_object\" | \"json_schema\"}", *f);
    std::string type;
    if (!read_required_string(*f, "text.format", "type", type)) return false;
    if (type == "text") return true;
    if (type == "json_object") {
      chat["response_format"] = {{"type", "json_object"}};
      return true;
    }
    if (type != "json_schema")
      return r_.expected("text.format.type", "\"text\", \"json_object\" or \"json_schema\"", *field(*f, "type"));
    ordered_json js = ordered_json::object();  // the chat parser checks name / schema / strict under response_format
    for (const char* k : {"name", "schema", "strict"})
      if (field(*f, k)) js[k] = ordered_["text"]["format"][k];
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
    return true;
  }

  bool map_limits(ordered_json& chat) {
    if (const json* v = field(doc_, "max_output_tokens")) {
      int64_t n = 0;
      if (!r_.read_int(*v, "max_output_tokens", 1, INT64_MAX, "an integer >= 1", n)) return false;
      chat["max_tokens"] = n;
      out_.max_output_tokens = n;
    }
    if (const json* v = field(doc_, "reasoning")) {
      if (!v->is_object()) return r_.expected("reasoning", "an object {effort}", *v);
      if (const json* e = field(*v, "effort")) {
        std::string effort;
        if (!r_.read_string(*e, "reasoning.effort", effort)) return false;
        chat["reasoning_effort"] = effort;
      }
    }
    if (field(doc_, "temperature")) out_.temperature = ordered_["temperature"];
    if (field(doc_, "top_p")) out_.top_p = ordered_["top_p"];
    if (const json* v = field(doc_, "parallel_tool_calls"); v && v->is_boolean()) out_.parallel_tool_calls = v->get<bool>();
    return true;
  }

  const json& doc_;
  const ordered_json& ordered_;
  responses_request& out_;
  detail::json_field_reader r_;
  ordered_json messages_ = ordered_json::array();
  std::string pending_reasoning_;
};

}  // namespace

responses_parse_result parse_responses_request(const std::string& body, const openai_limits& lim) {
  responses_parse_result res;
  detail::api_body b;
  if (!detail::read_api_body(body, lim, b, res.error)) return res;
  ordered_json chat;
  if (!responses_mapper(b, res.request, res.error).map(chat)) return res;
  auto parsed = detail::parse_mapped_chat(chat, lim);
  if (!parsed.ok()) {
    res.error = std::move(parsed.error);
    rename_param(res.error);
    return res;
  }
  res.request.chat = std::move(parsed.request);
  return res;
}

responses_encoder::responses_encoder(const responses_request& r, std::string id, int64_t created_at)
    : api_encoder(r.chat.stream), req_(r), id_(std::move(id)), created_at_(created_at) {
  req_.chat.request = {};  // the engine's copy is the one that runs
}

std::string responses_encoder::item_id(size_t block) const {
  const output_block& b = blocks().blocks()[block];
  const char* prefix = b.kind == block_kind::text ? "msg_" : b.kind == block_kind::reasoning ? "rs_" : "fc_";
  return prefix + id_.substr(id_.find('_') + 1) + "_" + std::to_string(block);
}

ordered_json responses_encoder::item_json(size_t block, bool finished) const {
  const output_block& b = blocks().blocks()[block];
  const bool complete = reason() == finish_reason::stop || !done();
  const char* status = !finished ? "in_progress" : complete ? "completed" : "incomplete";
  switch (b.kind) {
    case block_kind::reasoning: {
      ordered_json content = ordered_json::array();
      if (finished) content.push_back({{"type", "reasoning_text"}, {"text", b.text}});
      return {{"id", item_id(block)}, {"type", "reasoning"}, {"summary", ordered_json::array()}, {"content", std::move(content)}};
    }
    case block_kind::text: {
      ordered_json content = ordered_json::array();
      if (finished) content.push_back({{"type", "output_text"}, {"text", b.text}, {"annotations", ordered_json::array()}});
      return {{"id", item_id(block)}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
    }
    case block_kind::tool_call:
      return {{"id", item_id(block)}, {"type", "function_call"}, {"status", status}, {"call_id", b.call_id},
              {"name", b.name}, {"arguments", finished ? b.text : std::string()}};
  }
  return nullptr;
}

ordered_json responses_encoder::response_json(bool finished) const {
  const char* status = "in_progress";
  ordered_json incomplete = nullptr, err = nullptr, usage_json = nullptr;
  ordered_json output = ordered_json::array();
  if (finished && error()) {
    status = "failed";
    err = {{"code", failed_code_}, {"message", failed_message_}};
  } else if (finished) {
    status = reason() == finish_reason::stop ? "completed" : "incomplete";
    if (reason() != finish_reason::stop)
      incomplete = {{"reason", reason() == finish_reason::length ? "max_output_tokens" : finish_reason_name(reason())}};
    for (size_t i = 0; i < blocks().blocks().size(); ++i) output.push_back(item_json(i, true));
    const api_usage& u = usage();
    usage_json = {{"input_tokens", u.input_tokens},
                  {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
                  {"output_tokens", u.output_tokens},
                  {"total_tokens", u.input_tokens + u.output_tokens}};
  }
  return {{"id", id_},
          {"object", "response"},
          {"created_at", created_at_},
          {"status", status},
          {"error", std::move(err)},
          {"incomplete_details", std::move(incomplete)},
          {"instructions", req_.instructions},
          {"max_output_tokens", req_.max_output_tokens},
          {"model", req_.chat.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", req_.parallel_tool_calls},
          {"previous_response_id", nullptr},
          {"store", false},
          {"temperature", req_.temperature},
          {"text", req_.text.is_null() ? ordered_json{{"format", {{"type", "text"}}}} : req_.text},
          {"tool_choice", req_.tool_choice.is_null() ? ordered_json("auto") : req_.tool_choice},
          {"tools", req_.tools.is_null() ? ordered_json::array() : req_.tools},
          {"top_p", req_.top_p},
          {"usage", std::move(usage_json)}};
}

std::string responses_encoder::body() const { return dump_json(response_json(true)); }

openai_error_response responses_encoder::error_response(const status& e, std::string_view param) const {
  return make_openai_error(e, param);
}

std::string responses_encoder::event(const char* type, ordered_json fields) {
  ordered_json ev = {{"type", type}};
  for (auto& [k, v] : fields.items()) ev[k] = std::move(v);
  ev["sequence_number"] = sequence_++;
  return sse_named_event(type, dump_json(ev));
}

std::string responses_encoder::start_events(const request_accepted&) {
  std::string out = event("response.created", {{"response", response_json(false)}});
  return out + event("response.in_progress", {{"response", response_json(false)}});
}

std::string responses_encoder::block_events(const block_event& e) {
  const output_block& b = blocks().blocks()[e.block];
  const std::string item = item_id(e.block);
  const ordered_json where = {{"item_id", item}, {"output_index", e.block}};
  auto with = [&](ordered_json extra) {
    ordered_json f = where;
    for (auto& [k, v] : extra.items()) f[k] = std::move(v);
    return f;
  };
  const bool text = b.kind == block_kind::text, call = b.kind == block_kind::tool_call;
  const ordered_json part_type = text ? "output_text" : "reasoning_text";
  auto part = [&](const std::string& t) {
    ordered_json p = {{"type", part_type}, {"text", t}};
    if (text) p["annotations"] = ordered_json::array();
    return p;
  };
  switch (e.type) {
    case block_event::what::open: {
      std::string out = event("response.output_item.added", {{"output_index", e.block}, {"item", item_json(e.block, false)}});
      if (!call) out += event("response.content_part.added", with({{"content_index", 0}, {"part", part("")}}));
      return out;
    }
    case block_event::what::delta:
      if (call) return event("response.function_call_arguments.delta", with({{"delta", e.delta}}));
      if (text) return event("response.output_text.delta", with({{"content_index", 0}, {"delta", e.delta}, {"logprobs", ordered_json::array()}}));
      return event("response.reasoning_text.delta", with({{"content_index", 0}, {"delta", e.delta}}));
    case block_event::what::close: {
      std::string out;
      if (call) {
        out = event("response.function_call_arguments.done", with({{"name", b.name}, {"arguments", b.text}}));
      } else {
        ordered_json done = {{"content_index", 0}, {"text", b.text}};
        if (text) done["logprobs"] = ordered_json::array();
        out = event(text ? "response.output_text.done" : "response.reasoning_text.done", with(std::move(done)));
        out += event("response.content_part.done", with({{"content_index", 0}, {"part", part(b.text)}}));
      }
      return out + event("response.output_item.done", {{"output_index", e.block}, {"item", item_json(e.block, true)}});
    }
  }
  return {};
}

std::string responses_encoder::end_events(const request_finished&) {
  const char* type = reason() == finish_reason::stop ? "response.completed" : "response.incomplete";
  return event(type, {{"response", response_json(true)}});
}

std::string responses_encoder::error_events(const status& e, std::string_view) {
  failed_code_ = e.code == errc::context_overflow ? "context_length_exceeded" : errc_name(e.code);
  failed_message_ = e.message;
  return event("response.failed", {{"response", response_json(true)}});
}

}  // namespace cortex::http
