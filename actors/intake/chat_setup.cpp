#include "actors/intake/chat_setup.hpp"

#include <fstream>
#include <sstream>

#include "chat/chat_prompt.hpp"
#include "chat/model_chat.hpp"

namespace cortex {

expected<chat_setup> load_chat_setup(const model& m, const std::string& override_path) {
  const auto& v = m.tokenizer().vocabulary();
  auto defaults = model_chat_defaults(m.file(), v);
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
  return chat_setup{std::move(*tmpl), chat_stop_tokens(text, v), origin};
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

error_report chat_prompt_tokens(const chat_setup& chat, const tokenizer& tok, const generation_request& r,
                                std::vector<int32_t>& prompt) {
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
  auto p = build_chat_prompt(chat.tmpl, req, tok);
  if (!p) return {errc::invalid_param, "messages: the chat template failed: " + p.error().message, 0};
  prompt = std::move(p->tokens);
  return {errc::none, {}, 0};
}

}  // namespace cortex
