// What the OpenAI response encoders share: the response's identity, the
// pieces of a choice (finish_reason, logprobs in OpenAI's two shapes) and the
// usage summed over the n choices. CAF-free; nothing throws.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_request.hpp"
#include "messages/request.hpp"

namespace cortex::http {

// A token's text (its raw bytes, possibly a partial UTF-8 character), from
// the tokenizer the caller owns. Called from the encoder's thread.
using token_text_fn = std::function<std::string(int32_t token_id)>;

// Fields every object of one response repeats, and what it must contain.
struct openai_response_context {
  openai_endpoint endpoint = openai_endpoint::chat_completions;  // chat or completions
  std::string id;          // e.g. "chatcmpl-<unique>" / "cmpl-<unique>", chosen by the caller
  int64_t created = 0;     // unix seconds
  std::string model;       // openai_request::model
  uint32_t n = 1;          // choices, indices 0..n-1
  bool logprobs = false;
  uint32_t top_logprobs = 0;
  bool include_usage = false;  // streams only
  token_text_fn token_text;    // REQUIRED when logprobs
};

// The context of a parsed request's response.
openai_response_context make_response_context(const openai_request& r, std::string id, int64_t created,
                                              token_text_fn token_text);

// "stop" / "length", else protocol v1's reason name ("deadline", "cancelled"...);
// "tool_calls" for a stop after the model called tools.
const char* openai_finish_reason(finish_reason r, bool has_tool_calls = false);

// The logprobs of one choice, built up as chunks arrive.
class choice_logprobs {
 public:
  // chat: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]};
  // completions: {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}.
  // text_offset counts bytes of token text from the start of the choice's
  // text (continuing across calls). At most top_n top entries per token.
  // A non-finite logprob (a banned token) is written as -9999.0.
  void append(const openai_response_context& ctx, const std::vector<token_logprob>& lps);
  // The object so far (empty lists when no tokens came); `null` when
  // ctx.logprobs is false.
  nlohmann::ordered_json get(const openai_response_context& ctx) const;
  // get(), then starts over (text_offset continues): one stream event's part.
  nlohmann::ordered_json take(const openai_response_context& ctx);
  bool empty() const { return n_tokens_ == 0; }

 private:
  nlohmann::ordered_json json_;
  uint32_t n_tokens_ = 0;
  uint64_t text_offset_ = 0;
};

// Usage over the choices of one response: the prompt counted once (OpenAI's
// rule for n > 1), completion tokens summed, cached tokens the least any
// choice had (the prompt part computed at least once).
class usage_totals {
 public:
  void add(const request_finished& f);
  // {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details{cached_tokens}}.
  nlohmann::ordered_json to_json() const;

 private:
  bool any_ = false;
  uint32_t prompt_ = 0, cached_ = 0;
  uint64_t completion_ = 0;
};

}  // namespace cortex::http
