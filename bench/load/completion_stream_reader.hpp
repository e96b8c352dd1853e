// Reads the body of one streamed POST /v1/completions response (server-sent
// events, ../shared/docs/http.md "Streaming") and turns it into the load
// events of one request. No HTTP here: the caller feeds the decoded body
// bytes as they arrive. Not thread-safe: one reader per response.
//
// Events: a `data:` JSON chunk whose choice carries tokens is a chunk
// event. Its token count is the length of its logprobs.tokens when the
// request asked for logprobs (exact: one entry per token, even one whose
// text is still an incomplete UTF-8 sequence); without logprobs the API
// names no tokens, and an event with non-empty text counts as one (the
// server sends one per token that completed some text; the others ride
// with the next event, or send none at all on models that generate byte
// soup, such as random weights);
// `data: [DONE]` is the finished event, with the last finish_reason seen
// and usage.completion_tokens (the caller asks for include_usage); a
// `data: {"error": ...}` event is an error event (code 0, the error's code
// name). Lines other than `data:` (comments, `event:`) are ignored.
//
// The llama_server format is llama.cpp server's own streamed POST
// /completion: every event `{"content", "tokens": [id], "tokens_predicted",
// "stop": false}`, its token count the growth of tokens_predicted (the
// server sends no event for a token whose text is incomplete UTF-8; the
// next one counts it), the last `"stop": true` with stop_type (limit ->
// length, eos and word -> stop); no [DONE].
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/load/load_run.hpp"

namespace cortex::load {

enum class completion_format { openai, llama_server };

// The name of an `error` object of either format (its string code or type), else `fallback`.
std::string error_name(const nlohmann::json& error, const std::string& fallback);

class completion_stream_reader {
 public:
  explicit completion_stream_reader(int request, completion_format format = completion_format::openai)
      : request_(request), format_(format) {}

  // Appends the events that `bytes` completes, stamped `at`. Bytes after the
  // terminal event are ignored.
  void feed(std::string_view bytes, load_clock::time_point at, std::vector<load_event>& out);
  // The terminal event ([DONE] or an error) was produced.
  bool done() const { return done_; }

 private:
  // One complete event's data (its `data:` lines joined by '\n').
  void dispatch(const std::string& data, load_clock::time_point at, std::vector<load_event>& out);
  void dispatch_llama_server(const nlohmann::json& j, load_event& e, std::vector<load_event>& out);

  int request_;
  completion_format format_;
  std::string line_;   // the incomplete line at the end of what was fed
  std::string data_;   // the data lines of the event being read
  bool has_data_ = false;
  std::string reason_;           // the last finish_reason
  int completion_tokens_ = 0;    // from the usage chunk
  bool done_ = false;
};

}  // namespace cortex::load
