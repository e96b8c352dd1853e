// openai_response_group: the fan-in of one HTTP response from the engine
// events of its choices or inputs, on a fake connection: held-back choices
// go once choice 0's prompt is computed, whole answers when every request
// has finished, streams as events come, and the first error ends the
// response (cut: the rest is cancelled).
#include "actors/http_gateway/openai_response_group.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/http_gateway/anthropic_messages.hpp"
#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

// Records what a group does to its connection and the engine.
struct fake_io final : response_io {
  struct answer {
    int status = 0;
    std::string body;
    header_list headers;
  };
  std::vector<answer> answers;
  int n_stream_begun = 0;
  std::string streamed;
  bool stream_ended = false;
  std::vector<std::string> submitted;  // client ids

  void respond(int status, std::string body, header_list headers) override {
    answers.push_back({status, std::move(body), std::move(headers)});
  }
  void stream_begin() override { ++n_stream_begun; }
  void stream_write(std::string bytes) override { streamed += bytes; }
  void stream_end() override { stream_ended = true; }
  void submit(generation_request req) override { submitted.push_back(req.client_id); }
};

std::vector<generation_request> held(std::vector<std::string> ids) {
  std::vector<generation_request> out;
  for (auto& id : ids) {
    generation_request r;
    r.client_id = id;
    out.push_back(r);
  }
  return out;
}

request_finished embedded(std::vector<float> v, uint32_t prompt_tokens) {
  request_finished f = finished(finish_reason::stop, "", prompt_tokens, 0, 0);
  f.embedding = std::move(v);
  return f;
}

TEST(OpenaiResponseGroup, HeldBackChoicesGoOnceChoiceZeroHasItsPrompt) {
  fake_io io;
  auto g = openai_response_group::choices(context(openai_endpoint::completions, 3), false);
  g.hold_back(held({"b", "c"}));
  EXPECT_EQ(g.on_accepted(io, 0, request_accepted{}), response_end::none);
  EXPECT_TRUE(io.submitted.empty());
  EXPECT_EQ(g.on_chunk(io, 0, chunk("Hello")), response_end::none);
  EXPECT_EQ(io.submitted, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(g.on_chunk(io, 0, chunk(" world")), response_end::none);
  EXPECT_EQ(io.submitted.size(), 2u);  // once
  EXPECT_TRUE(g.take_held_back().empty());
}

TEST(OpenaiResponseGroup, AWholeResponseIsSentWhenEveryChoiceHasFinished) {
  fake_io io;
  auto g = openai_response_group::choices(context(openai_endpoint::completions, 2), false);
  g.hold_back(held({"b"}));
  EXPECT_EQ(g.on_finished(io, 0, finished(finish_reason::length, "Hello", 4, 0, 1)), response_end::none);
  EXPECT_EQ(io.submitted, (std::vector<std::string>{"b"}));  // choice 0 ended without an error: the rest goes
  EXPECT_TRUE(io.answers.empty());
  EXPECT_EQ(g.on_finished(io, 1, finished(finish_reason::stop, "Hi", 4, 4, 1)), response_end::complete);
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(io.answers[0].status, 200);
  const json body = json::parse(io.answers[0].body);
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][0]["text"], "Hello");
  EXPECT_EQ(body["choices"][1]["text"], "Hi");
  EXPECT_EQ(io.n_stream_begun, 0);
}

TEST(OpenaiResponseGroup, AChoiceThatFailsCutsTheResponseAndItsHeldBackChoicesNeverGo) {
  fake_io io;
  auto g = openai_response_group::choices(context(openai_endpoint::chat_completions, 2), false);
  g.hold_back(held({"b"}));
  request_finished f = finished(finish_reason::error, "", 4, 0, 0);
  f.error = {errc::internal, "the step failed", 0};
  EXPECT_EQ(g.on_finished(io, 0, f), response_end::cut);
  EXPECT_TRUE(io.submitted.empty());
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(io.answers[0].status, 500);
  EXPECT_EQ(json::parse(io.answers[0].body)["error"]["message"], "the step failed");
  EXPECT_EQ(g.take_held_back().size(), 1u);  // the owner closes its route
}

TEST(OpenaiResponseGroup, AStreamBeginsWithItsFirstBytesAndEndsWithDone) {
  fake_io io;
  auto g = openai_response_group::choices(context(openai_endpoint::chat_completions, 1), true);
  EXPECT_EQ(g.on_accepted(io, 0, request_accepted{}), response_end::none);
  EXPECT_EQ(g.on_chunk(io, 0, chunk("Hello")), response_end::none);
  EXPECT_EQ(io.n_stream_begun, 1);
  EXPECT_FALSE(io.stream_ended);
  EXPECT_EQ(g.on_finished(io, 0, finished(finish_reason::stop, "!", 4, 0, 2)), response_end::complete);
  EXPECT_EQ(io.n_stream_begun, 1);
  EXPECT_TRUE(io.stream_ended);
  EXPECT_NE(io.streamed.find("\"content\":\"Hello\""), std::string::npos);
  EXPECT_NE(io.streamed.find("data: [DONE]"), std::string::npos);
  EXPECT_TRUE(io.answers.empty());
}

TEST(OpenaiResponseGroup, ARejectionIsAStatusBeforeTheStreamAndAnEventAfter) {
  {
    fake_io io;
    auto g = openai_response_group::choices(context(openai_endpoint::chat_completions, 1), true);
    EXPECT_EQ(g.on_rejected(io, 0, {errc::overloaded, "the queue is full", 2000}), response_end::cut);
    ASSERT_EQ(io.answers.size(), 1u);
    EXPECT_EQ(io.answers[0].status, 429);
    EXPECT_EQ(io.answers[0].headers, (response_io::header_list{{"Retry-After", "2"}}));
    EXPECT_EQ(io.n_stream_begun, 0);
  }
  {
    fake_io io;
    auto g = openai_response_group::choices(context(openai_endpoint::chat_completions, 2), true);
    g.on_chunk(io, 0, chunk("Hello"));
    EXPECT_EQ(g.on_rejected(io, 1, {errc::rate_limited, "over the tier's rate", 1000}), response_end::cut);
    EXPECT_TRUE(io.answers.empty());
    EXPECT_TRUE(io.stream_ended);
    EXPECT_NE(io.streamed.find("\"error\""), std::string::npos);
  }
}

TEST(OpenaiResponseGroup, AHeldBackChoiceRefusedWhileDrainingEndsAsShutdown) {
  fake_io io;
  auto g = openai_response_group::choices(context(openai_endpoint::completions, 2), false);
  g.on_finished(io, 0, finished(finish_reason::stop, "Hello", 4, 0, 1));
  EXPECT_EQ(g.on_rejected(io, 1, {errc::draining, "shutting down", 1000}), response_end::complete);
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(io.answers[0].status, 200);
  EXPECT_EQ(json::parse(io.answers[0].body)["choices"][1]["finish_reason"], "shutdown");
}

TEST(OpenaiResponseGroup, EmbeddingsAnswerOnceInInputOrderWhateverOrderTheyFinishIn) {
  fake_io io;
  auto g = openai_response_group::embeddings("stories260K", 2, false);
  EXPECT_EQ(g.on_finished(io, 1, embedded({0.0f, 1.0f}, 3)), response_end::none);
  EXPECT_TRUE(io.answers.empty());
  EXPECT_EQ(g.on_finished(io, 0, embedded({1.0f, 0.0f}, 2)), response_end::complete);
  ASSERT_EQ(io.answers.size(), 1u);
  const json body = json::parse(io.answers[0].body);
  EXPECT_EQ(body["data"][0]["embedding"], json::array({1.0, 0.0}));
  EXPECT_EQ(body["data"][1]["embedding"], json::array({0.0, 1.0}));
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
}

TEST(OpenaiResponseGroup, AnEmbeddingThatDoesNotStopCutsTheResponse) {
  fake_io io;
  auto g = openai_response_group::embeddings("stories260K", 2, false);
  EXPECT_EQ(g.on_finished(io, 0, finished(finish_reason::cancelled, "", 2, 0, 0)), response_end::cut);
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(io.answers[0].status, 500);
  EXPECT_NE(io.answers[0].body.find("the embedding ended with cancelled"), std::string::npos);
}

TEST(OpenaiResponseGroup, CountTokensAnswersOnAcceptedAndCutsTheRequest) {
  fake_io io;
  auto g = openai_response_group::api(openai_endpoint::count_tokens,
                                      std::make_unique<anthropic_encoder>(false, "msg_1", "stories260K"));
  request_accepted a;
  a.prompt_tokens = 17;
  EXPECT_EQ(g.on_accepted(io, 0, a), response_end::cut);
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(json::parse(io.answers[0].body), json::parse(R"({"input_tokens": 17})"));
}

TEST(OpenaiResponseGroup, AnApiErrorHasItsApisShape) {
  fake_io io;
  auto g = openai_response_group::api(openai_endpoint::messages,
                                      std::make_unique<anthropic_encoder>(false, "msg_1", "stories260K"));
  EXPECT_EQ(g.on_rejected(io, 0, {errc::invalid_param, "max_tokens is too large", 0}), response_end::cut);
  ASSERT_EQ(io.answers.size(), 1u);
  EXPECT_EQ(io.answers[0].status, 400);
  EXPECT_EQ(json::parse(io.answers[0].body)["type"], "error");
}

}  // namespace
}  // namespace cortex::http
