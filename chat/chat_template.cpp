#include "chat/chat_template.hpp"

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_lexer.hpp"
#include "chat/jinja_parser.hpp"

namespace cortex {

namespace {

const char* const k_globals[] = {"raise_exception", "strftime_now", "namespace", "range", "dict"};

std::vector<std::string> find_unknown_names(const chat::parsed_template& t) {
  std::vector<std::string> w;
  for (const auto& f : t.filters)
    if (!chat::is_known_filter(f)) w.push_back("unknown filter '" + f + "': a render that reaches it fails");
  for (const auto& x : t.tests)
    if (!chat::is_known_test(x)) w.push_back("unknown test '" + x + "': a render that reaches it fails");
  for (const auto& m : t.methods)
    if (!chat::is_known_method(m) && m != "cycle")
      w.push_back("unknown method '" + m + "()': a render that reaches it fails");
  for (const auto& n : t.called_names) {
    bool known = t.macros.count(n) != 0;
    for (const char* g : k_globals) known = known || n == g;
    if (!known) w.push_back("unknown function '" + n + "()': a render that reaches it fails");
  }
  return w;
}

}  // namespace

expected<chat_template> chat_template::parse(std::string text) {
  auto tokens = chat::lex_template(text);
  if (!tokens) return fail(tokens.error().code, "chat template: " + tokens.error().message);
  auto parsed = chat::parse_template(*tokens);
  if (!parsed) return fail(parsed.error().code, "chat template: " + parsed.error().message);
  chat_template t;
  t.source_ = std::move(text);
  t.warnings_ = find_unknown_names(*parsed);
  t.parsed_ = std::make_shared<const chat::parsed_template>(std::move(*parsed));
  return t;
}

expected<std::string> chat_template::render(const nlohmann::ordered_json& context, const chat::render_env& env) const {
  if (!context.is_object()) return fail(errc::invalid_param, "chat template: the render context must be a JSON object");
  chat::value variables;
  try {
    variables = chat::value::from_json(context);
  } catch (const chat::template_error& e) {
    return fail(errc::invalid_param, e.what());  // the context holds a value the template cannot take
  }
  return chat::render_parsed(*parsed_, variables, env);
}

nlohmann::ordered_json make_chat_context(const chat_render_input& in) {
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  c["messages"] = in.messages;
  c["add_generation_prompt"] = in.add_generation_prompt;
  const bool has_extra = in.extra.is_object();
  c["tools"] = has_extra && in.extra.contains("tools") ? in.extra["tools"] : nullptr;
  c["documents"] = has_extra && in.extra.contains("documents") ? in.extra["documents"] : nullptr;
  if (in.bos_token) c["bos_token"] = *in.bos_token;
  if (in.eos_token) c["eos_token"] = *in.eos_token;
  if (has_extra)
    for (auto it = in.extra.begin(); it != in.extra.end(); ++it) c[it.key()] = it.value();
  return c;
}

const std::string& chatml_template_text() {
  static const std::string text =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return text;
}

}  // namespace cortex
