#include "actors/intake/chat_setup.hpp"

#include <fstream>
#include <sstream>

#include "chat/chat_prompt.hpp"
#include "chat/model_chat.hpp"
#include "chat/tool_grammar.hpp"

namespace cortex {

expected<chat_setup> load_chat_setup(const gguf::file& model_file, const tokenizer& tok, const std::string& override_path,
                                     const std::string& tool_format, const std::string& reasoning_format) {
  const auto& v = tok.vocabulary();
  auto defaults = model_chat_defaults(model_file, v);
  std::string text = defaults.template_text;
  std::string origin = defaults.template_from_model ? "the model's tokenizer.chat_template" : "ChatML (the model has no chat template)";
  if (!override_path.empty()) {
    std::ifstream in(override_path, std::ios::binary);
    if (!in) return fail(errc::invalid_param, "cannot read the chat template file '" + override_path + "' (--chat-template)");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    origin = override_path;
  }
  auto tmpl = chat_template::parse(text);
  if (!tmpl) return fail(tmpl.error().code, "chat template from " + origin + ": " + tmpl.error().message);
  chat_setup out{std::move(*tmpl), chat_stop_tokens(text, v), origin, chat::detect_template_traits(text), reasoning_format};
  if (!tool_format.empty()) {
    if (!chat::make_tool_format(tool_format)) {
      std::string names;
      for (const auto& n : chat::tool_format_names()) names += (names.empty() ? "" : ", ") + n;
      return fail(errc::invalid_param, "--tool-format '" + tool_format + "' is not one of " + names);
    }
    out.traits.format = tool_format;
  }
  return out;
}

namespace {

// A turn's content given as text parts ([{type: "text", text}], checked by
// the gateways) becomes one string, as OpenAI servers render it: the one
// place both gateways' requests are normalized, so the same conversation
// renders the same prompt whichever way it came.
void join_text_parts(nlohmann::ordered_json& messages) {
  for (auto& m : messages) {
    if (!m.is_object()) continue;
    auto c = m.find("content");
    if (c == m.end() || !c->is_array()) continue;
    std::string text;
    for (const auto& part : *c) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
    }
    *c = std::move(text);
  }
}

}  // namespace

namespace {

using ordered_json = nlohmann::ordered_json;

status bad(const std::string& message) { return {errc::invalid_param, message, 0}; }

// The Hermes convention (http.md) for a template that does not read
// `tools`: the tools and the call syntax in a system preamble.
// (A family with a syntax of its own whose template leaves tools out, such
// as the R1 distills', gets the list without the Hermes call syntax.)
void add_tools_preamble(ordered_json& messages, const ordered_json& tools, bool hermes_syntax) {
  std::string text =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>";
  for (const auto& t : tools) text += "\n" + t.dump();
  text += "\n</tools>";
  if (hermes_syntax)
    text +=
      "\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
      "</tool_call>";
  if (!messages.empty() && messages[0].is_object() && messages[0].value("role", "") == "system" &&
      messages[0].contains("content") && messages[0]["content"].is_string()) {
    messages[0]["content"] = messages[0]["content"].get<std::string>() + "\n\n" + text;
  } else {
    messages.insert(messages.begin(), ordered_json{{"role", "system"}, {"content", text}});
  }
}

// Whether `text` is written with ordinary tokens of this vocabulary: a
// grammar can only produce those (a control token renders as no text).
bool plain_text(const tokenizer& tok, const std::string& text) {
  for (int32_t id : tok.encode(text, /*add_special=*/false, /*parse_special=*/true))
    if (tok.rendered_piece(id).empty()) return false;
  return true;
}

}  // namespace

status chat_prompt_tokens(const chat_setup& chat, const tokenizer& tok, const generation_request& r,
                                const std::string& request_grammar, chat_render_result& out) {
  chat_prompt_request req;
  req.add_generation_prompt = r.add_generation_prompt;
  req.messages = nlohmann::ordered_json::parse(r.messages_json, nullptr, /*allow_exceptions=*/false);
  if (req.messages.is_discarded() || !req.messages.is_array())
    return {errc::invalid_param, "messages must be a JSON array of {role, content} objects", 0};
  join_text_parts(req.messages);
  if (!r.chat_template_kwargs_json.empty()) {
    req.kwargs = nlohmann::ordered_json::parse(r.chat_template_kwargs_json, nullptr, false);
    if (req.kwargs.is_discarded() || !req.kwargs.is_object())
      return {errc::invalid_param, "chat_template_kwargs must be an object of template variables", 0};
  }

  // Tools: what the request offers and forces.
  ordered_json tools = ordered_json::array();
  if (!r.tools_json.empty()) {
    tools = ordered_json::parse(r.tools_json, nullptr, false);
    if (tools.is_discarded() || !tools.is_array()) return bad("tools must be an array of function tools");
    for (size_t i = 0; i < tools.size(); ++i) {
      const auto& t = tools[i];
      const auto* fn = t.is_object() && t.contains("function") ? &t["function"] : nullptr;
      if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
        return bad("tools[" + std::to_string(i) + "] must be {type: \"function\", function: {name, description, parameters}}");
    }
  }
  chat::tool_choice_mode mode = tools.empty() ? chat::tool_choice_mode::none : chat::tool_choice_mode::auto_;
  if (r.tool_choice == "none") mode = chat::tool_choice_mode::none;
  else if (r.tool_choice == "required") mode = chat::tool_choice_mode::required;
  else if (r.tool_choice == "function") mode = chat::tool_choice_mode::named;
  else if (!r.tool_choice.empty() && r.tool_choice != "auto")
    return bad("tool_choice must be \"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}");
  if (tools.empty() && (mode == chat::tool_choice_mode::required || mode == chat::tool_choice_mode::named))
    return bad("tool_choice forces a call but tools is empty or missing");
  // none: the model is not told about the tools at all.
  if (mode != chat::tool_choice_mode::none) {
    if (chat.traits.renders_tools) req.kwargs["tools"] = tools;
    else add_tools_preamble(req.messages, tools, chat.traits.format == "hermes");
  }

  auto p = build_chat_prompt(chat.tmpl, req, tok);
  if (!p) return {errc::invalid_param, "messages: the chat template failed: " + p.error().message, 0};
  out.prompt = std::move(p->tokens);

  // How the answer is read.
  const std::string& fmt_name = chat.traits.format;
  auto format = chat::make_tool_format(fmt_name);
  chat_output_spec& o = out.output;
  o.format = fmt_name;
  o.parse_tool_calls = mode != chat::tool_choice_mode::none;
  o.think_tags = chat.traits.think_tags;
  const std::string_view rendered = chat::fmt::rtrim(p->text);
  o.thinking_open = o.think_tags && rendered.size() >= 7 && rendered.substr(rendered.size() - 7) == "<think>";
  o.split_reasoning = (r.reasoning_format.empty() ? chat.reasoning_format : r.reasoning_format) != "none";
  o.active = o.parse_tool_calls || o.think_tags || format->own_reasoning();

  // What the answer must follow.
  std::string g = request_grammar;
  const bool forced = mode == chat::tool_choice_mode::required || mode == chat::tool_choice_mode::named;
  if (forced && !g.empty())
    return bad("tool_choice forces a call: leave out grammar / response_format (or use tool_choice auto)");
  // auto: a lazy grammar from the opener on, when the opener is plain text
  // for this vocabulary (a grammar cannot produce control tokens, and must
  // not keep the model from writing them).
  const bool lazy = mode == chat::tool_choice_mode::auto_ && g.empty() && !format->opener().empty() &&
                    !format->own_reasoning() && plain_text(tok, format->opener());
  if (forced || lazy) {
    auto tg = chat::tool_call_gbnf(*format, tools, mode, r.tool_choice_name, r.parallel_tool_calls);
    if (!tg) return bad(tg.error().message);
    g = std::move(*tg);
  }
  if (!g.empty() && o.thinking_open) g = chat::wrap_after_think(g);
  out.grammar = std::move(g);
  return status::ok();
}

}  // namespace cortex
