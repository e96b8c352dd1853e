// A compiled chat template: the Jinja2 text of a GGUF's
// `tokenizer.chat_template`, rendered the way Hugging Face transformers'
// apply_chat_template does (jinja2 ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks, loopcontrols; tojson = json.dumps with
// ensure_ascii=False; globals raise_exception and strftime_now). The
// supported subset and its limits are in chat/README.md.
//
// Parse once, render many times: a chat_template is immutable after parse
// and render() may be called from several threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/jinja_interpreter.hpp"
#include "base/expected.hpp"

namespace cortex {

class chat_template {
 public:
  // Errors name the construct and its line ("line 4: unsupported tag
  // 'include'", "line 2: unclosed '{% for %}' ..."). A template that parses
  // but names a filter, test or method we lack still parses: warnings()
  // lists them and a render that reaches one fails.
  static expected<chat_template> parse(std::string text);

  // Load-time findings, one sentence each, for the server's log.
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& source() const { return source_; }

  // Renders with `context`'s top-level keys as variables (JSON null is
  // None; a key that is absent is undefined). ordered_json keeps object
  // keys in input order, which tojson and .items() show. Errors:
  // raise_exception(msg) gives exactly msg; others "line N: what".
  expected<std::string> render(const nlohmann::ordered_json& context, const chat::render_env& env = {}) const;

 private:
  std::string source_;
  std::shared_ptr<const chat::parsed_template> parsed_;
  std::vector<std::string> warnings_;
};

// The inputs of one chat rendering, as transformers passes them.
struct chat_render_input {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  bool add_generation_prompt = true;
  std::optional<std::string> bos_token;  // nullopt: undefined in the template
  std::optional<std::string> eos_token;
  // Any other variables (tools, documents, enable_thinking, ...); must be
  // an object or null.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// The render context: messages, add_generation_prompt, tools and documents
// (None unless `extra` has them), bos_token/eos_token when set, then every
// key of `extra`.
nlohmann::ordered_json make_chat_context(const chat_render_input& in);

// ChatML, the template used when a model has none.
const std::string& chatml_template_text();

}  // namespace cortex
