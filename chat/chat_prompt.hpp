// From chat messages to prompt tokens, as llama.cpp's OpenAI server does:
// render the template with the vocabulary's BOS/EOS texts, tokenize with
// special-token parsing on, and add BOS only when the template did not
// already write one (so the prompt never starts with two).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.hpp"
#include "base/expected.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

struct chat_prompt_request {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // a list of message objects
  // chat_template_kwargs: extra template variables (tools, enable_thinking,
  // ...); an object or null. May override bos_token/eos_token, not
  // messages or add_generation_prompt.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
};

struct chat_prompt {
  std::string text;             // the rendered template
  std::vector<int32_t> tokens;  // what the model is fed
};

// Errors (for an HTTP 400): malformed messages/kwargs, or the template's
// render error (raise_exception's message, an unknown filter, ...).
expected<chat_prompt> build_chat_prompt(const chat_template& tmpl, const chat_prompt_request& req, const tokenizer& tok,
                                        const chat::render_env& env = {});

}  // namespace cortex
