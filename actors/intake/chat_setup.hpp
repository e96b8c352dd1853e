// How intake turns a request's chat `messages` into prompt tokens: the
// template (the model's `tokenizer.chat_template`, a --chat-template file
// that overrides it, or ChatML when the model has none), parsed once at
// start, and the end-of-turn tokens generation stops at. CAF-free.
#pragma once

#include <string>
#include <vector>

#include "messages/errors.hpp"
#include "messages/request.hpp"
#include "chat/chat_template.hpp"
#include "chat/tool_format.hpp"
#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

struct chat_setup {
  chat_template tmpl;
  std::vector<int32_t> stop_ids;  // end-of-turn tokens of the template (sorted)
  std::string origin;             // "the model's template", "FILE", "ChatML (the model has none)"
  // The family's tool-call syntax and reasoning markers (detected from the
  // template, or --tool-format), and the default reasoning_format.
  chat::template_traits traits;
  std::string reasoning_format = "auto";
};

// The model's file (its tokenizer.chat_template and vocabulary) and
// tokenizer. `override_path` empty: the model's template. `tool_format` empty: the
// family detected from the template. Errors name the file and the template
// problem, or an unknown tool format. Warnings (unknown filters...) are in
// tmpl.warnings().
expected<chat_setup> load_chat_setup(const gguf::file& model_file, const tokenizer& tok, const std::string& override_path,
                                     const std::string& tool_format = "", const std::string& reasoning_format = "auto");

// A chat request made ready for the engine.
struct chat_render_result {
  std::vector<int32_t> prompt;
  chat_output_spec output;  // how the session reads the answer
  // The grammar the answer follows ("" = none): the request's own
  // (`request_grammar`) or a forced / lazy tool call's, either placed after
  // a reasoning block the prompt opened (http.md "Constraints").
  std::string grammar;
};

// Renders r.messages_json (+ kwargs, + r's tools unless tool_choice is
// none: through the template when it reads `tools`, else in a system
// preamble in the Hermes convention) and tokenizes it; decides the output
// format and the grammar. Errors are 400 invalid_param naming the field
// (`messages`: malformed JSON, or the template's own error such as
// raise_exception; `tools`, `tool_choice`: a bad tool, schema or choice).
status chat_prompt_tokens(const chat_setup& chat, const tokenizer& tok, const generation_request& r,
                                const std::string& request_grammar, chat_render_result& out);

}  // namespace cortex
