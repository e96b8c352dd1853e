#include "chat/model_chat.hpp"

#include <algorithm>

#include "chat/chat_template.hpp"

namespace cortex {

namespace {

std::optional<std::string> token_text(const vocab& v, int32_t id) {
  if (id < 0 || id >= v.n_tokens()) return std::nullopt;
  return v.texts[static_cast<size_t>(id)];
}

}  // namespace

chat_defaults model_chat_defaults(const gguf::file& f, const vocab& v) {
  chat_defaults d;
  if (auto t = f.get_string("tokenizer.chat_template"); t && !t->empty()) {
    d.template_text = std::string(*t);
    d.template_from_model = true;
  } else {
    d.template_text = chatml_template_text();
  }
  d.bos_token = token_text(v, v.bos_id);
  d.eos_token = token_text(v, v.eos_id);
  return d;
}

std::vector<int32_t> chat_stop_tokens(const std::string& template_text, const vocab& v) {
  static const char* const k_end_of_turn[] = {
      "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<｜end▁of▁sentence｜>",
      "</s>", "<|endoftext|>", "<|end_of_text|>", "<|END_OF_TURN_TOKEN|>", "<|return|>", "<|eot|>"};
  std::vector<int32_t> ids;
  for (const char* text : k_end_of_turn) {
    if (template_text.find(text) == std::string::npos) continue;
    const int32_t id = v.find(text);
    if (id >= 0 && v.has_attr(id, attr_control | attr_user_defined)) ids.push_back(id);
  }
  if (v.eos_id >= 0 && template_text.find("eos_token") != std::string::npos) ids.push_back(v.eos_id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace cortex
