#include "actors/http_gateway/openai_response.hpp"

#include <utility>

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

using nlohmann::ordered_json;

openai_response_builder::openai_response_builder(openai_response_context ctx)
    : ctx_(std::move(ctx)), choices_(ctx_.n) {}

void openai_response_builder::on_chunk(uint32_t i, const request_chunk& c) {
  if (i >= choices_.size()) return;
  choice& ch = choices_[i];
  ch.text += c.text;
  ch.reasoning += c.reasoning;
  for (const auto& d : c.tool_calls) {  // the pieces of one index concatenate
    if (d.index < ch.tool_calls.size()) ch.tool_calls[d.index].arguments += d.arguments;
    else ch.tool_calls.push_back({d.id, d.name, d.arguments});
  }
  ch.logprobs.append(ctx_, c.logprobs);
}

void openai_response_builder::on_finished(uint32_t i, const request_finished& f) {
  if (i >= choices_.size() || choices_[i].finished) return;  // exactly one terminal event counts
  choice& ch = choices_[i];
  ch.text += f.text;
  ch.reasoning += f.reasoning;
  for (const auto& c : f.tool_calls) ch.tool_calls.push_back(c);
  ch.has_tool_calls = f.has_tool_calls;
  ch.logprobs.append(ctx_, f.logprobs);
  ch.finished = true;
  ch.reason = f.reason;
  ++n_finished_;
  usage_.add(f);
  if (f.reason == finish_reason::error && !has_error_) {
    has_error_ = true;
    error_ = f.error;
  }
}

std::string openai_response_builder::body() const {
  const bool chat = ctx_.endpoint == openai_endpoint::chat_completions;
  ordered_json choices = ordered_json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const choice& ch = choices_[i];
    ordered_json c = {{"index", i}};
    if (chat) {
      // A message that calls tools has content null unless text came before the calls.
      ordered_json m = {{"role", "assistant"}};
      m["content"] = ch.tool_calls.empty() || !ch.text.empty() ? ordered_json(ch.text) : ordered_json(nullptr);
      if (!ch.reasoning.empty()) m["reasoning_content"] = ch.reasoning;
      if (!ch.tool_calls.empty()) {
        ordered_json calls = ordered_json::array();
        for (const auto& t : ch.tool_calls)
          calls.push_back({{"id", t.id}, {"type", "function"}, {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
        m["tool_calls"] = std::move(calls);
      }
      c["message"] = std::move(m);
    } else {
      c["text"] = ch.text;
    }
    c["logprobs"] = ch.logprobs.get(ctx_);
    c["finish_reason"] = openai_finish_reason(ch.reason, ch.has_tool_calls);
    choices.push_back(std::move(c));
  }
  return dump_json(ordered_json{{"id", ctx_.id},
                                {"object", chat ? "chat.completion" : "text_completion"},
                                {"created", ctx_.created},
                                {"model", ctx_.model},
                                {"choices", std::move(choices)},
                                {"usage", usage_.to_json()}});
}

}  // namespace cortex::http
