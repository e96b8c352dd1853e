// What a model file says about chat: its template (ChatML when it has none),
// its BOS/EOS texts for the template, and the end-of-turn tokens generation
// stops at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "text/vocab.hpp"

namespace cortex {

struct chat_defaults {
  std::string template_text;        // tokenizer.chat_template, else ChatML
  bool template_from_model = false;  // false: the ChatML fallback
  std::optional<std::string> bos_token, eos_token;  // token texts; nullopt when the vocabulary has none
};

chat_defaults model_chat_defaults(const gguf::file& f, const vocab& v);

// The end-of-turn tokens of a template: each well-known end-of-turn text
// (<|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>, <｜end▁of▁sentence｜>,
// </s>, <|endoftext|>, ...) that the template writes and the vocabulary has
// as a control or user-defined token, plus EOS when the template writes
// `eos_token`. Sorted, unique.
std::vector<int32_t> chat_stop_tokens(const std::string& template_text, const vocab& v);

}  // namespace cortex
