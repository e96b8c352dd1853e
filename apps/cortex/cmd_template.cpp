// template: renders a chat template for a conversation, as transformers'
// apply_chat_template does; prints exactly the rendered text.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "chat/chat_template.hpp"
#include "chat/model_chat.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {

namespace {

// bos_token/eos_token of the input: a string sets it, null leaves it
// undefined, absence takes the model's (if any).
void token_field(const nlohmann::ordered_json& in, const char* key, const std::optional<std::string>& model_value,
                 std::optional<std::string>& out) {
  if (!in.contains(key)) {
    out = model_value;
  } else if (in[key].is_string()) {
    out = in[key].get<std::string>();
  }
}

}  // namespace

int cmd_template(int argc, char** argv) {
  args a("template",
         "Renders a chat template for a conversation the way Hugging Face transformers' apply_chat_template\n"
         "does and prints exactly the rendered text (no newline added). The input is a JSON object:\n"
         "  {\"messages\": [...], \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\",\n"
         "   ...any other template variable (tools, documents, enable_thinking, ...)}\n"
         "add_generation_prompt defaults to true; a null bos/eos token is undefined in the template; absent\n"
         "tools/documents are none. With --model the template is the file's tokenizer.chat_template (ChatML\n"
         "when it has none) and bos/eos default to the model's tokens; --template overrides the template.\n"
         "A template error exits 1 with the message on stderr.",
         {{"model", "PATH", "GGUF model or vocabulary-only file", ""},
          {"template", "FILE", "Jinja2 chat template file (read as is)", ""},
          {"input", "FILE", "the JSON input ('-' = stdin)", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  if (!a.has("model") && !a.has("template")) {
    std::fprintf(stderr, "cortex: give --model PATH or --template FILE\n");
    return 2;
  }
  if (!a.has("input")) {
    std::fprintf(stderr, "cortex: --input FILE.json is required ('-' reads stdin)\n");
    return 2;
  }
  std::string input_text, template_text;
  if (!read_text(a.get("input"), input_text)) {
    std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("input").c_str());
    return 1;
  }
  const auto in = nlohmann::ordered_json::parse(input_text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) {
    std::fprintf(stderr, "cortex: '%s' is not a JSON object like {\"messages\": [...]}\n", a.get("input").c_str());
    return 1;
  }
  if (in.contains("messages") && !in["messages"].is_array()) {
    std::fprintf(stderr, "cortex: \"messages\" must be a list\n");
    return 1;
  }
  for (const char* key : {"bos_token", "eos_token"})
    if (in.contains(key) && !in[key].is_string() && !in[key].is_null()) {
      std::fprintf(stderr, "cortex: \"%s\" must be a string or null\n", key);
      return 1;
    }
  if (in.contains("add_generation_prompt") && !in["add_generation_prompt"].is_boolean()) {
    std::fprintf(stderr, "cortex: \"add_generation_prompt\" must be true or false\n");
    return 1;
  }
  std::optional<std::string> model_bos, model_eos;
  if (a.has("model")) {
    auto m = load_model(a, /*vocab_only=*/true);
    if (!m) return 1;
    const auto defaults = model_chat_defaults(m->file(), m->tokenizer().vocabulary());
    template_text = defaults.template_text;
    model_bos = defaults.bos_token;
    model_eos = defaults.eos_token;
  }
  if (a.has("template") && !read_text(a.get("template"), template_text)) {
    std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("template").c_str());
    return 1;
  }
  auto tmpl = chat_template::parse(template_text);
  if (!tmpl) {
    std::fprintf(stderr, "cortex: %s\n", tmpl.error().message.c_str());
    return 1;
  }
  for (const auto& w : tmpl->warnings()) std::fprintf(stderr, "cortex: warning: chat template: %s\n", w.c_str());

  chat_render_input ri;
  if (in.contains("messages")) ri.messages = in["messages"];
  ri.add_generation_prompt = in.value("add_generation_prompt", true);
  token_field(in, "bos_token", model_bos, ri.bos_token);
  token_field(in, "eos_token", model_eos, ri.eos_token);
  for (auto it = in.begin(); it != in.end(); ++it)
    if (it.key() != "messages" && it.key() != "add_generation_prompt" && it.key() != "bos_token" &&
        it.key() != "eos_token")
      ri.extra[it.key()] = it.value();
  auto out = tmpl->render(make_chat_context(ri));
  if (!out) {
    std::fprintf(stderr, "cortex: template error: %s\n", out.error().message.c_str());
    return 1;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}

}  // namespace cortex::cli
