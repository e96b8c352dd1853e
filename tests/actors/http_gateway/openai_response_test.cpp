// openai_response_builder: the exact non-streaming objects of OpenAI's API.
#include "actors/http_gateway/openai_response.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

TEST(OpenaiResponse, ChatCompletionShape) {
  openai_response_builder b(context(openai_endpoint::chat_completions));
  EXPECT_FALSE(b.complete());
  b.on_finished(0, finished(finish_reason::stop, "Hello world!", 12, 4, 3));
  ASSERT_TRUE(b.complete());
  EXPECT_EQ(b.error(), nullptr);
  const std::string body = b.body();
  EXPECT_EQ(json::parse(body), json::parse(R"({
    "id": "chatcmpl-7", "object": "chat.completion", "created": 1700000000, "model": "stories260K",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world!"},
                 "logprobs": null, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
              "prompt_tokens_details": {"cached_tokens": 4}}})"));
  // OpenAI's field order, one line.
  EXPECT_EQ(body.rfind(R"({"id":"chatcmpl-7","object":"chat.completion","created":1700000000,"model":)", 0), 0u);
  EXPECT_EQ(body.find('\n'), std::string::npos);
}

TEST(OpenaiResponse, CompletionChoicesInIndexOrderWithUsageOverChoices) {
  openai_response_builder b(context(openai_endpoint::completions, 3));
  b.on_chunk(2, chunk("Hi"));  // chunks count too (a streamed submit)
  b.on_finished(2, finished(finish_reason::length, " there", 10, 10, 2));
  b.on_finished(0, finished(finish_reason::stop, "Hello", 10, 0, 1));
  EXPECT_FALSE(b.complete());
  b.on_finished(1, finished(finish_reason::deadline, "", 10, 10, 0));
  b.on_finished(1, finished(finish_reason::stop, "late duplicate", 10, 10, 9));  // ignored
  ASSERT_TRUE(b.complete());
  EXPECT_EQ(json::parse(b.body()), json::parse(R"({
    "id": "cmpl-7", "object": "text_completion", "created": 1700000000, "model": "stories260K",
    "choices": [{"index": 0, "text": "Hello", "logprobs": null, "finish_reason": "stop"},
                {"index": 1, "text": "", "logprobs": null, "finish_reason": "deadline"},
                {"index": 2, "text": "Hi there", "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13,
              "prompt_tokens_details": {"cached_tokens": 0}}})"));
}

TEST(OpenaiResponse, FinishReasonNames) {
  EXPECT_STREQ(openai_finish_reason(finish_reason::stop), "stop");
  EXPECT_STREQ(openai_finish_reason(finish_reason::length), "length");
  EXPECT_STREQ(openai_finish_reason(finish_reason::cancelled), "cancelled");
  EXPECT_STREQ(openai_finish_reason(finish_reason::deadline), "deadline");
  EXPECT_STREQ(openai_finish_reason(finish_reason::shutdown), "shutdown");
  EXPECT_STREQ(openai_finish_reason(finish_reason::error), "error");
}

TEST(OpenaiResponse, ChatLogprobs) {
  openai_response_context ctx = context(openai_endpoint::chat_completions);
  ctx.logprobs = true;
  ctx.top_logprobs = 2;
  openai_response_builder b(ctx);
  request_finished f = finished(finish_reason::stop, "Hello world", 3, 0, 2);
  f.logprobs = {lp(1, -0.25f, {1, 5, 3}, {-0.25f, -1.5f, -3.0f}), lp(2, -0.1f, {2, 4}, {-0.1f, -2.5f})};
  b.on_finished(0, f);
  const json j = json::parse(b.body());
  EXPECT_EQ(j["choices"][0]["logprobs"], json::parse(R"({"content": [
    {"token": "Hello", "logprob": -0.25, "bytes": [72, 101, 108, 108, 111],
     "top_logprobs": [{"token": "Hello", "logprob": -0.25, "bytes": [72, 101, 108, 108, 111]},
                      {"token": "Hi", "logprob": -1.5, "bytes": [72, 105]}]},
    {"token": " world", "logprob": -0.1, "bytes": [32, 119, 111, 114, 108, 100],
     "top_logprobs": [{"token": " world", "logprob": -0.1, "bytes": [32, 119, 111, 114, 108, 100]},
                      {"token": " there", "logprob": -2.5, "bytes": [32, 116, 104, 101, 114, 101]}]}]})"));
  // -0.1f is written as -0.1 (the shortest text that reads back as that float).
  EXPECT_NE(b.body().find(R"("logprob":-0.1,)"), std::string::npos);
}

TEST(OpenaiResponse, PartialCharacterTokenKeepsItsBytes) {
  openai_response_context ctx = context(openai_endpoint::chat_completions);
  ctx.logprobs = true;
  openai_response_builder b(ctx);
  request_finished f = finished(finish_reason::length, "", 3, 0, 1);
  f.logprobs = {lp(9, -std::numeric_limits<float>::infinity(), {9}, {-1.0f})};
  b.on_finished(0, f);
  const json j = json::parse(b.body());  // valid JSON despite the half character
  const json& e = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(e["bytes"], json::parse("[226, 130]"));
  EXPECT_EQ(e["token"].get<std::string>().rfind("\xEF\xBF\xBD", 0), 0u);  // U+FFFD stands for the bytes
  EXPECT_EQ(e["logprob"], -9999.0);                     // non-finite
  EXPECT_EQ(e["top_logprobs"], json::array());         // top_logprobs 0: none listed
}

TEST(OpenaiResponse, CompletionLogprobs) {
  openai_response_context ctx = context(openai_endpoint::completions);
  ctx.logprobs = true;
  ctx.top_logprobs = 2;
  openai_response_builder b(ctx);
  b.on_chunk(0, chunk("Hello", {lp(1, -0.5f, {1, 5}, {-0.5f, -1.0f})}));
  request_finished f = finished(finish_reason::stop, " world!", 3, 0, 3);
  f.logprobs = {lp(2, -0.75f, {2, 4}, {-0.75f, -2.0f}), lp(3, -1.25f, {3}, {-1.25f})};
  b.on_finished(0, f);
  EXPECT_EQ(json::parse(b.body())["choices"][0]["logprobs"], json::parse(R"({
    "tokens": ["Hello", " world", "!"],
    "token_logprobs": [-0.5, -0.75, -1.25],
    "top_logprobs": [{"Hello": -0.5, "Hi": -1.0}, {" world": -0.75, " there": -2.0}, {"!": -1.25}],
    "text_offset": [0, 5, 11]})"));
}

TEST(OpenaiResponse, LogprobsAskedButNoTokens) {
  openai_response_context ctx = context(openai_endpoint::completions);
  ctx.logprobs = true;
  openai_response_builder b(ctx);
  b.on_finished(0, finished(finish_reason::cancelled, "", 3, 0, 0));
  EXPECT_EQ(json::parse(b.body())["choices"][0]["logprobs"],
            json::parse(R"({"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []})"));
}

TEST(OpenaiResponse, ErrorChoiceIsReported) {
  openai_response_builder b(context(openai_endpoint::chat_completions, 2));
  b.on_finished(0, finished(finish_reason::stop, "ok", 3, 0, 1));
  request_finished f = finished(finish_reason::error, "", 3, 0, 0);
  f.error.code = errc::internal;
  f.error.message = "executor failed";
  b.on_finished(1, f);
  ASSERT_TRUE(b.complete());
  ASSERT_NE(b.error(), nullptr);
  EXPECT_EQ(b.error()->code, errc::internal);
  EXPECT_EQ(b.error()->message, "executor failed");
}

}  // namespace
}  // namespace cortex::http
