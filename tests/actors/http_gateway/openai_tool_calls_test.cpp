// Tool calls and reasoning in chat completions (http.md, issue 27): the
// answer's message.tool_calls / content null / reasoning_content /
// finish_reason tool_calls, and the stream's delta.reasoning_content and
// delta.tool_calls (index, id and type with the call's first piece).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_response.hpp"
#include "actors/http_gateway/openai_stream.hpp"
#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

TEST(OpenaiToolCalls, AnswerCarriesCallsAndReasoning) {
  openai_response_builder b(context(openai_endpoint::chat_completions));
  request_chunk c = chunk("");
  c.reasoning = "Need the weather.";
  c.tool_calls = {{0, "call_a", "get_weather", R"({"city":"Paris"})"}};
  b.on_chunk(0, c);
  request_finished f = finished(finish_reason::stop, "", 5, 0, 9);
  f.has_tool_calls = true;
  f.tool_calls = {{"call_b", "get_time", "{}"}};
  b.on_finished(0, f);
  const json body = json::parse(b.body());
  const json& ch = body["choices"][0];
  EXPECT_EQ(ch["finish_reason"], "tool_calls");
  EXPECT_TRUE(ch["message"]["content"].is_null());
  EXPECT_EQ(ch["message"]["reasoning_content"], "Need the weather.");
  EXPECT_EQ(ch["message"]["tool_calls"], json::parse(R"([
      {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}])"));
}

TEST(OpenaiToolCalls, TextBeforeCallsStaysAndPlainAnswersHaveNoNewKeys) {
  openai_response_builder b(context(openai_endpoint::chat_completions));
  request_finished f = finished(finish_reason::stop, "Let me look.", 5, 0, 9);
  f.has_tool_calls = true;
  f.tool_calls = {{"call_b", "get_time", "{}"}};
  b.on_finished(0, f);
  EXPECT_EQ(json::parse(b.body())["choices"][0]["message"]["content"], "Let me look.");

  openai_response_builder plain(context(openai_endpoint::chat_completions));
  plain.on_finished(0, finished(finish_reason::stop, "Hi", 5, 0, 1));
  const json m = json::parse(plain.body())["choices"][0]["message"];
  EXPECT_FALSE(m.contains("reasoning_content"));
  EXPECT_FALSE(m.contains("tool_calls"));
  EXPECT_EQ(json::parse(plain.body())["choices"][0]["finish_reason"], "stop");
}

TEST(OpenaiToolCalls, StreamDeltas) {
  openai_stream_encoder enc(context(openai_endpoint::chat_completions));
  std::string sse = enc.on_accepted(0, request_accepted{});
  request_chunk r = chunk("");
  r.reasoning = "Hm.";
  sse += enc.on_chunk(0, r);
  request_chunk c = chunk("");
  c.tool_calls = {{0, "call_a", "get_weather", R"({"city":"Paris"})"}};
  sse += enc.on_chunk(0, c);
  request_finished f = finished(finish_reason::stop, "", 5, 0, 9);
  f.has_tool_calls = true;
  f.tool_calls = {{"call_b", "get_time", "{}"}};
  sse += enc.on_finished(0, f);
  std::vector<json> deltas;
  std::string finish;
  for (size_t pos = 0; (pos = sse.find("data: {", pos)) != std::string::npos; ++pos) {
    const json j = json::parse(sse.substr(pos + 6, sse.find("\n\n", pos) - pos - 6));
    deltas.push_back(j["choices"][0]["delta"]);
    if (!j["choices"][0]["finish_reason"].is_null()) finish = j["choices"][0]["finish_reason"];
  }
  ASSERT_EQ(deltas.size(), 5u);  // role, reasoning, call 0, call 1, finish
  EXPECT_EQ(deltas[1], json::parse(R"({"reasoning_content": "Hm."})"));
  EXPECT_EQ(deltas[2], json::parse(R"({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                      "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]})"));
  EXPECT_EQ(deltas[3]["tool_calls"][0]["index"], 1);
  EXPECT_EQ(deltas[3]["tool_calls"][0]["id"], "call_b");
  EXPECT_EQ(finish, "tool_calls");
}

}  // namespace
}  // namespace cortex::http
