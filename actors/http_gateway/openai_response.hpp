// Non-streaming OpenAI responses (http.md "Chat and completions"): a
// `chat.completion` or `text_completion` object built from the engine's
// events of the n choices of one request. CAF-free; nothing throws.
// Not thread-safe: one builder per HTTP request, fed from one thread.
//
// Shape (fields in OpenAI's order):
//   {"id", "object": "chat.completion" | "text_completion", "created", "model",
//    "choices": [{"index", "message": {"role": "assistant", "content"} | "text",
//                 "logprobs": null | {...}, "finish_reason"}],
//    "usage": {"prompt_tokens", "completion_tokens", "total_tokens",
//              "prompt_tokens_details": {"cached_tokens"}}}
// choices are in index order whatever order they finished in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/http_gateway/openai_choice.hpp"

namespace cortex::http {

class openai_response_builder {
 public:
  // REQUIRES: ctx.endpoint is chat_completions or completions; ctx.n >= 1.
  explicit openai_response_builder(openai_response_context ctx);

  // Events of choice `choice` (< ctx.n; others are ignored). Chunks are accepted too
  // (a request submitted with stream = true), text and logprobs appended.
  void on_chunk(uint32_t choice, const request_chunk& c);
  void on_finished(uint32_t choice, const request_finished& f);

  // Every choice has finished.
  bool complete() const { return n_finished_ == choices_.size(); }
  // The first choice that ended with reason `error`, else nullptr: the
  // caller answers with make_openai_error(*error()) instead of body().
  const status* error() const { return has_error_ ? &error_ : nullptr; }
  // The response body. REQUIRES: complete().
  std::string body() const;

 private:
  struct choice {
    std::string text;
    std::string reasoning;                 // chat: message.reasoning_content (absent when empty)
    std::vector<chat::tool_call> tool_calls;  // chat: message.tool_calls
    bool has_tool_calls = false;
    choice_logprobs logprobs;
    bool finished = false;
    finish_reason reason = finish_reason::stop;
  };

  openai_response_context ctx_;
  std::vector<choice> choices_;
  size_t n_finished_ = 0;
  usage_totals usage_;
  bool has_error_ = false;
  status error_;
};

}  // namespace cortex::http
