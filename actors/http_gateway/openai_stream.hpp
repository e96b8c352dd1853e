// Streaming OpenAI responses (http.md "Streaming"): server-sent events built
// from the engine's events of the n choices of one request. CAF-free;
// nothing throws. Not thread-safe: one encoder per HTTP request, fed from
// one thread. The caller sends the bytes each call returns, in order, on a
// `Content-Type: text/event-stream` response.
//
// Framing: every event is `data: <one-line JSON>\n\n`; the stream ends with
// `data: [DONE]\n\n`. Events:
//   - chunk objects {"id", "object", "created", "model", "choices": [one
//     choice], ("usage": null with include_usage)}, object
//     "chat.completion.chunk" (choice {"index", "delta", "logprobs",
//     "finish_reason"}) or "text_completion" (choice {"index", "text",
//     "logprobs", "finish_reason"}); logprobs holds the tokens of that
//     event (their shape as in non-streaming responses), null when it has none;
//   - chat: the first event of each choice has delta {"role": "assistant",
//     "content": ""}; text follows as delta {"content"}; the last event of a
//     choice has delta {} (completions: text "") and its finish_reason;
//   - after the last choice finished, with include_usage, one chunk with
//     "choices": [] and "usage", then [DONE];
//   - an error (a choice that ended with reason error, or on_error) is one
//     event {"error": {message, type, param, code}} (openai_error.hpp's
//     body), then [DONE]: the whole stream ends; the caller cancels the
//     choices still running.
// Choices interleave as their events arrive; each event names its index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/http_gateway/openai_choice.hpp"
#include "messages/errors.hpp"

namespace cortex::http {

// `data: <payload>\n\n`.
std::string sse_event(std::string_view payload);
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

class openai_stream_encoder {
 public:
  // REQUIRES: ctx.endpoint is chat_completions or completions; ctx.n >= 1.
  explicit openai_stream_encoder(openai_response_context ctx);

  // Each returns the bytes to send now (maybe ""); after done(), "".
  // Events of a choice >= ctx.n, or after the choice finished, are ignored.
  std::string on_accepted(uint32_t choice, const request_accepted& a);
  std::string on_chunk(uint32_t choice, const request_chunk& c);
  std::string on_finished(uint32_t choice, const request_finished& f);
  // Ends the stream with an error event (e.g. a choice's submit rejected
  // after another choice's events went out).
  std::string on_error(const status& e, std::string_view param = {});

  // [DONE] was produced.
  bool done() const { return done_; }
  // Bytes were produced: an error now goes in-stream, no longer as a status.
  bool started() const { return started_; }

 private:
  struct choice {
    bool opened = false;    // the role event was sent (chat)
    bool finished = false;
    uint32_t n_tool_calls = 0;  // calls sent so far (the next call's index)
    choice_logprobs logprobs;
  };

  // {"id", "object", "created", "model"} of every chunk.
  nlohmann::ordered_json chunk_head() const;
  // The event of choice i: `text` (nullptr: none; chat: delta.content),
  // the logprobs appended since the last event (null when none), the
  // finish_reason (nullptr: null), `role` (chat: delta.role).
  std::string choice_event(uint32_t i, const std::string* text, const char* finish_reason, bool role);
  // Chat: an event with delta.reasoning_content and/or delta.tool_calls.
  std::string chat_parts_event(uint32_t i, const std::string& reasoning, const std::vector<chat::tool_call_delta>& calls);
  // The role event when the choice has had none yet (chat).
  std::string open(uint32_t i);
  std::string emit(std::string bytes);

  openai_response_context ctx_;
  std::vector<choice> choices_;
  size_t n_finished_ = 0;
  usage_totals usage_;
  bool started_ = false, done_ = false;
};

}  // namespace cortex::http
