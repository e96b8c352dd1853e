// openai_stream_encoder: SSE framing and the chunk sequence of OpenAI's
// streaming API (role first, finish_reason last, usage, [DONE], errors).
#include "actors/http_gateway/openai_stream.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

// Splits SSE bytes into the payloads of `data: ...\n\n` events, checking the framing.
std::vector<std::string> events(const std::string& sse) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 6, "data: "), 0) << "at byte " << pos << " of " << sse;
    const size_t end = sse.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event in " << sse;
      break;
    }
    const std::string payload = sse.substr(pos + 6, end - pos - 6);
    EXPECT_EQ(payload.find('\n'), std::string::npos);
    out.push_back(payload);
    pos = end + 2;
  }
  return out;
}

json chunk_json(const std::string& payload) { return json::parse(payload); }

TEST(OpenaiStream, SseFraming) {
  EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done, "data: [DONE]\n\n");
}

TEST(OpenaiStream, ChatSequence) {
  openai_stream_encoder enc(context(openai_endpoint::chat_completions));
  EXPECT_FALSE(enc.started());
  std::string sse = enc.on_accepted(0, request_accepted{});
  EXPECT_TRUE(enc.started());
  sse += enc.on_chunk(0, chunk("Hello"));
  sse += enc.on_chunk(0, chunk(""));  // everything held back: nothing to send
  sse += enc.on_chunk(0, chunk(" world"));
  EXPECT_FALSE(enc.done());
  sse += enc.on_finished(0, finished(finish_reason::stop, "!", 5, 0, 3));
  EXPECT_TRUE(enc.done());
  EXPECT_EQ(enc.on_chunk(0, chunk("after")), "");  // nothing after [DONE]
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 6u);
  const json head = json::parse(R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,
                                    "model":"stories260K"})");
  auto expect_chunk = [&](const std::string& payload, const char* choice) {
    json want = head;
    want["choices"] = json::array({json::parse(choice)});
    EXPECT_EQ(chunk_json(payload), want);
  };
  expect_chunk(ev[0], R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null})");
  expect_chunk(ev[1], R"({"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null})");
  expect_chunk(ev[2], R"({"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null})");
  expect_chunk(ev[3], R"({"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null})");
  expect_chunk(ev[4], R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"})");
  EXPECT_EQ(ev[5], "[DONE]");
  EXPECT_EQ(ev[0].rfind(R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,)", 0), 0u);
}

TEST(OpenaiStream, RoleComesFirstEvenWithoutAccepted) {
  openai_stream_encoder enc(context(openai_endpoint::chat_completions));
  const auto ev = events(enc.on_chunk(0, chunk("Hi")));
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(chunk_json(ev[0])["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_EQ(chunk_json(ev[1])["choices"][0]["delta"], json::parse(R"({"content":"Hi"})"));
}

TEST(OpenaiStream, CompletionsSequenceWithUsage) {
  openai_response_context ctx = context(openai_endpoint::completions);
  ctx.include_usage = true;
  openai_stream_encoder enc(ctx);
  std::string sse = enc.on_accepted(0, request_accepted{});
  EXPECT_EQ(sse, "");  // completions have no role event
  sse += enc.on_chunk(0, chunk("Once"));
  sse += enc.on_finished(0, finished(finish_reason::length, "", 4, 2, 1));
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(chunk_json(ev[0]), json::parse(R"({"id":"cmpl-7","object":"text_completion","created":1700000000,
      "model":"stories260K","choices":[{"index":0,"text":"Once","logprobs":null,"finish_reason":null}],"usage":null})"));
  EXPECT_EQ(chunk_json(ev[1]), json::parse(R"({"id":"cmpl-7","object":"text_completion","created":1700000000,
      "model":"stories260K","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":null})"));
  EXPECT_EQ(chunk_json(ev[2]), json::parse(R"({"id":"cmpl-7","object":"text_completion","created":1700000000,
      "model":"stories260K","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5,
      "prompt_tokens_details":{"cached_tokens":2}}})"));
  EXPECT_EQ(ev[3], "[DONE]");
}

TEST(OpenaiStream, ThreeChoicesInterleave) {
  openai_response_context ctx = context(openai_endpoint::chat_completions, 3);
  ctx.include_usage = true;
  openai_stream_encoder enc(ctx);
  std::string sse;
  for (uint32_t i : {2u, 0u, 1u}) sse += enc.on_accepted(i, request_accepted{});
  sse += enc.on_chunk(1, chunk("B"));
  sse += enc.on_chunk(0, chunk("A"));
  sse += enc.on_finished(1, finished(finish_reason::stop, "", 7, 0, 1));
  sse += enc.on_chunk(2, chunk("C"));
  sse += enc.on_finished(2, finished(finish_reason::length, "c", 7, 7, 2));
  EXPECT_FALSE(enc.done());
  sse += enc.on_finished(0, finished(finish_reason::stop, "", 7, 7, 1));
  EXPECT_TRUE(enc.done());
  const auto ev = events(sse);
  // (index, delta or finish) in arrival order.
  const std::vector<std::pair<int, std::string>> want = {
      {2, R"({"role":"assistant","content":""})"}, {0, R"({"role":"assistant","content":""})"},
      {1, R"({"role":"assistant","content":""})"}, {1, R"({"content":"B"})"}, {0, R"({"content":"A"})"},
      {1, "stop"}, {2, R"({"content":"C"})"}, {2, R"({"content":"c"})"}, {2, "length"}, {0, "stop"}};
  ASSERT_EQ(ev.size(), want.size() + 2);
  for (size_t k = 0; k < want.size(); ++k) {
    SCOPED_TRACE(k);
    const json c = chunk_json(ev[k]);
    ASSERT_EQ(c["choices"].size(), 1u);
    EXPECT_EQ(c["choices"][0]["index"], want[k].first);
    if (want[k].second[0] == '{') {
      EXPECT_EQ(c["choices"][0]["delta"], json::parse(want[k].second));
      EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
    } else {
      EXPECT_EQ(c["choices"][0]["delta"], json::object());
      EXPECT_EQ(c["choices"][0]["finish_reason"], want[k].second);
    }
  }
  const json usage = chunk_json(ev[want.size()]);
  EXPECT_EQ(usage["choices"], json::array());
  // The prompt once (7), completion tokens summed (1 + 2 + 1), cached the least of the choices.
  EXPECT_EQ(usage["usage"], json::parse(R"({"prompt_tokens":7,"completion_tokens":4,"total_tokens":11,
                                            "prompt_tokens_details":{"cached_tokens":0}})"));
  EXPECT_EQ(ev.back(), "[DONE]");
}

TEST(OpenaiStream, LogprobsTravelWithTheirTokens) {
  openai_response_context ctx = context(openai_endpoint::chat_completions);
  ctx.logprobs = true;
  ctx.top_logprobs = 1;
  openai_stream_encoder enc(ctx);
  std::string sse = enc.on_chunk(0, chunk("Hello", {lp(1, -0.5f, {1, 5}, {-0.5f, -1.0f})}));
  sse += enc.on_chunk(0, chunk("", {lp(2, -0.25f, {2}, {-0.25f})}));  // text held back, logprobs not
  sse += enc.on_finished(0, finished(finish_reason::stop, " world", 2, 0, 2));
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_TRUE(chunk_json(ev[0])["choices"][0]["logprobs"].is_null());  // role event
  EXPECT_EQ(chunk_json(ev[1])["choices"][0]["logprobs"], json::parse(R"({"content":[{"token":"Hello","logprob":-0.5,
      "bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111]}]}]})"));
  EXPECT_EQ(chunk_json(ev[2])["choices"][0]["delta"], json::parse(R"({"content":""})"));
  EXPECT_EQ(chunk_json(ev[2])["choices"][0]["logprobs"]["content"][0]["token"], " world");
  EXPECT_EQ(chunk_json(ev[3])["choices"][0]["delta"], json::parse(R"({"content":" world"})"));
  EXPECT_TRUE(chunk_json(ev[3])["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(chunk_json(ev[4])["choices"][0]["finish_reason"], "stop");
}

TEST(OpenaiStream, CompletionTextOffsetsContinueAcrossEvents) {
  openai_response_context ctx = context(openai_endpoint::completions);
  ctx.logprobs = true;
  openai_stream_encoder enc(ctx);
  const auto a = events(enc.on_chunk(0, chunk("Hello", {lp(1, -0.5f)})));
  const auto b = events(enc.on_chunk(0, chunk(" world", {lp(2, -0.25f)})));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(chunk_json(a[0])["choices"][0]["logprobs"], json::parse(R"({"tokens":["Hello"],"token_logprobs":[-0.5],
      "top_logprobs":[{}],"text_offset":[0]})"));
  EXPECT_EQ(chunk_json(b[0])["choices"][0]["logprobs"], json::parse(R"({"tokens":[" world"],"token_logprobs":[-0.25],
      "top_logprobs":[{}],"text_offset":[5]})"));
}

TEST(OpenaiStream, ErrorMidStreamEndsIt) {
  openai_stream_encoder enc(context(openai_endpoint::chat_completions, 2));
  std::string sse = enc.on_chunk(0, chunk("Hel"));
  request_finished f = finished(finish_reason::error, "", 3, 0, 1);
  f.error.code = errc::internal;
  f.error.message = "the executor failed";
  sse += enc.on_finished(0, f);
  EXPECT_TRUE(enc.done());
  EXPECT_EQ(enc.on_chunk(1, chunk("more")), "");
  EXPECT_EQ(enc.on_finished(1, finished(finish_reason::cancelled, "", 3, 0, 0)), "");
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(chunk_json(ev[2]), json::parse(R"({"error":{"message":"the executor failed","type":"server_error",
      "param":null,"code":"internal"}})"));
  EXPECT_EQ(ev[3], "[DONE]");
}

TEST(OpenaiStream, RejectedChoiceAfterStart) {
  openai_stream_encoder enc(context(openai_endpoint::completions, 2));
  std::string sse = enc.on_chunk(0, chunk("x"));
  status e;
  e.code = errc::overloaded;
  e.message = "the queue is full";
  e.retry_after_ms = 1500;
  sse += enc.on_error(e);
  EXPECT_TRUE(enc.done());
  EXPECT_EQ(enc.on_error(e), "");  // once
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(chunk_json(ev[1])["error"]["type"], "rate_limit_error");
  EXPECT_EQ(chunk_json(ev[1])["error"]["code"], "overloaded");
  EXPECT_EQ(ev[2], "[DONE]");
}

TEST(OpenaiStream, EventsOfUnknownChoicesAreIgnored) {
  openai_stream_encoder enc(context(openai_endpoint::chat_completions, 1));
  EXPECT_EQ(enc.on_accepted(1, request_accepted{}), "");
  EXPECT_EQ(enc.on_chunk(5, chunk("x")), "");
  EXPECT_EQ(enc.on_finished(1, finished(finish_reason::stop, "", 1, 0, 0)), "");
  EXPECT_FALSE(enc.started());
  EXPECT_FALSE(enc.done());
}

}  // namespace
}  // namespace cortex::http
