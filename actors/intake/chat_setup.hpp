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
#include "model/expected.hpp"
#include "model/model.hpp"

namespace cortex {

struct chat_setup {
  chat_template tmpl;
  std::vector<int32_t> stop_ids;  // end-of-turn tokens of the template (sorted)
  std::string origin;             // "the model's template", "FILE", "ChatML (the model has none)"
};

// `override_path` empty: the model's template. Errors name the file and
// the template problem. Warnings (unknown filters...) are in tmpl.warnings().
expected<chat_setup> load_chat_setup(const model& m, const std::string& override_path);

// Renders r.messages_json (+ kwargs) and tokenizes it. On success `prompt`
// holds the tokens; the error is 400 invalid_param naming `messages`
// (malformed JSON, or the template's own error such as raise_exception).
error_report chat_prompt_tokens(const chat_setup& chat, const tokenizer& tok, const generation_request& r,
                                std::vector<int32_t>& prompt);

}  // namespace cortex
