// Engine events and a token table for the OpenAI encoder tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "actors/http_gateway/openai_choice.hpp"
#include "messages/request.hpp"

namespace cortex::http::test {

// Token texts of a made-up vocabulary; 9 is half of "€" (E2 82 AC).
inline std::string token_text(int32_t id) {
  static const std::map<int32_t, std::string> vocab = {
      {1, "Hello"}, {2, " world"}, {3, "!"}, {4, " there"}, {5, "Hi"}, {9, "\xE2\x82"}};
  const auto it = vocab.find(id);
  return it == vocab.end() ? "?" : it->second;
}

inline request_chunk chunk(const std::string& text, std::vector<token_logprob> lps = {}) {
  request_chunk c;
  c.text = text;
  c.logprobs = std::move(lps);
  return c;
}

inline request_finished finished(finish_reason reason, const std::string& text, uint32_t prompt, uint32_t cached,
                                 uint32_t completion) {
  request_finished f;
  f.reason = reason;
  f.text = text;
  f.prompt_tokens = prompt;
  f.cached_tokens = cached;
  f.completion_tokens = completion;
  return f;
}

inline token_logprob lp(int32_t id, float v, std::vector<int32_t> top_ids = {}, std::vector<float> top_lps = {}) {
  token_logprob t;
  t.id = id;
  t.lp = v;
  t.top_ids = std::move(top_ids);
  t.top_lps = std::move(top_lps);
  return t;
}

inline openai_response_context context(openai_endpoint e, uint32_t n = 1) {
  openai_response_context ctx;
  ctx.endpoint = e;
  ctx.id = e == openai_endpoint::chat_completions ? "chatcmpl-7" : "cmpl-7";
  ctx.created = 1700000000;
  ctx.model = "stories260K";
  ctx.n = n;
  ctx.token_text = token_text;
  return ctx;
}

}  // namespace cortex::http::test
