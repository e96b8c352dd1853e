#include "chat/chat_prompt.hpp"

namespace cortex {

expected<chat_prompt> build_chat_prompt(const chat_template& tmpl, const chat_prompt_request& req, const tokenizer& tok,
                                        const chat::render_env& env) {
  if (!req.messages.is_array()) return fail(errc::invalid_param, "messages must be a list of message objects");
  for (const auto& m : req.messages)
    if (!m.is_object()) return fail(errc::invalid_param, "each message must be an object like {\"role\": ..., \"content\": ...}");
  if (!req.kwargs.is_null() && !req.kwargs.is_object())
    return fail(errc::invalid_param, "chat_template_kwargs must be an object");
  if (req.kwargs.is_object() && (req.kwargs.contains("messages") || req.kwargs.contains("add_generation_prompt")))
    return fail(errc::invalid_param, "chat_template_kwargs must not set 'messages' or 'add_generation_prompt'");

  const vocab& v = tok.vocabulary();
  chat_render_input in;
  in.messages = req.messages;
  in.add_generation_prompt = req.add_generation_prompt;
  if (v.bos_id >= 0) in.bos_token = v.texts[static_cast<size_t>(v.bos_id)];
  if (v.eos_id >= 0) in.eos_token = v.texts[static_cast<size_t>(v.eos_id)];
  if (req.kwargs.is_object()) in.extra = req.kwargs;
  auto text = tmpl.render(make_chat_context(in), env);
  if (!text) return text.error();

  chat_prompt out;
  out.text = std::move(*text);
  out.tokens = tok.encode(out.text, /*add_special=*/true, /*parse_special=*/true);
  auto& t = out.tokens;
  // The template's own BOS/EOS text already became the token: drop the copy
  // the vocabulary's add_bos/add_eos put next to it.
  if (v.add_bos && t.size() >= 2 && t[0] == v.bos_id && t[1] == v.bos_id) t.erase(t.begin());
  if (v.add_eos && t.size() >= 2 && t[t.size() - 1] == v.eos_id && t[t.size() - 2] == v.eos_id) t.pop_back();
  return out;
}

}  // namespace cortex
