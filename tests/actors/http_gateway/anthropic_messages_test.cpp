// The Anthropic Messages API mapping (http.md "Anthropic Messages API"):
// blocks onto the chat request, errors naming the field as sent and shaped
// {type: "error", error: {type, message}}, the message body and the exact
// event stream.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "actors/http_gateway/anthropic_messages.hpp"
#include "tests/actors/http_gateway/sse_events.hpp"
#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

openai_request parse_ok(const json& body, bool count = false) {
  auto r = parse_anthropic_request(body.dump(), stories_limits(), count);
  EXPECT_TRUE(r.ok()) << r.error.param << ": " << r.error.report.message;
  return r.request;
}

const json weather_tool = {{"name", "get_weather"},
                           {"description", "Weather"},
                           {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}};

TEST(AnthropicRequest, SystemMessagesAndSamplingMap) {
  auto r = parse_ok({{"model", "stories260K"}, {"max_tokens", 20}, {"system", {{{"type", "text"}, {"text", "Be brief."}}}},
                     {"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"stop_sequences", {"END"}},
                     {"temperature", 0.3}, {"top_k", 5}, {"stream", true}});
  EXPECT_EQ(json::parse(r.request.messages_json),
            json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])"));
  EXPECT_EQ(r.request.params.max_tokens, 20u);
  EXPECT_EQ(r.request.params.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.request.params.top_k, 5);
  EXPECT_TRUE(r.stream);
}

TEST(AnthropicRequest, ToolUseAndToolResultRoundTrip) {
  json messages = json::array({
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"}, {"content", {{{"type", "thinking"}, {"thinking", "Call it."}, {"signature", ""}},
                                           {{"type", "text"}, {"text", "Checking."}},
                                           {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}}}},
      {{"role", "user"}, {"content", {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "sunny"}},
                                      {{"type", "tool_result"}, {"tool_use_id", "toolu_2"}, {"is_error", true},
                                       {"content", {{{"type", "text"}, {"text", "no such city"}}}}},
                                      {{"type", "text"}, {"text", "And now?"}}}}},
  });
  auto r = parse_ok({{"max_tokens", 9}, {"messages", messages}, {"tools", {weather_tool}},
                     {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}, {"disable_parallel_tool_use", true}}},
                     {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}});
  EXPECT_EQ(json::parse(r.request.messages_json), json::parse(R"([
    {"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":"Checking.","reasoning_content":"Call it.",
     "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"toolu_1","content":"sunny"},
    {"role":"tool","tool_call_id":"toolu_2","content":"Error: no such city"},
    {"role":"user","content":"And now?"}])"));
  const json tools = json::parse(r.request.tools_json);
  EXPECT_EQ(tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(tools[0]["function"]["parameters"]["required"], json::array({"city"}));
  EXPECT_EQ(r.request.tool_choice, "function");
  EXPECT_EQ(r.request.tool_choice_name, "get_weather");
  EXPECT_FALSE(r.request.parallel_tool_calls);
  EXPECT_EQ(json::parse(r.request.chat_template_kwargs_json)["enable_thinking"], true);
  EXPECT_EQ(parse_ok({{"max_tokens", 9}, {"messages", messages}, {"tools", {weather_tool}}, {"tool_choice", {{"type", "any"}}}})
                .request.tool_choice,
            "required");
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokensAndAsksForOneToken) {
  auto r = parse_ok({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"stream", true}}, true);
  EXPECT_EQ(r.request.params.max_tokens, 1u);
  EXPECT_FALSE(r.stream);
}

TEST(AnthropicRequest, ErrorsNameTheFieldAsSent) {
  struct bad {
    json body;
    errc code;
    std::string param;
  };
  const json hi = {{{"role", "user"}, {"content", "Hi"}}};
  const std::vector<bad> cases = {
      {{{"messages", hi}}, errc::invalid_param, "max_tokens"},
      {{{"max_tokens", 0}, {"messages", hi}}, errc::invalid_param, "max_tokens"},
      {{{"max_tokens", 5}}, errc::invalid_param, "messages"},
      {{{"max_tokens", 5}, {"messages", {{{"role", "system"}, {"content", "x"}}}}}, errc::invalid_param, "messages[0].role"},
      {{{"max_tokens", 5}, {"messages", {{{"role", "user"}}}}}, errc::invalid_param, "messages[0].content"},
      {{{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image"}, {"source", json::object()}}}}}}}},
       errc::unsupported, "messages[0].content[0].type"},
      {{{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", {{{"type", "tool_result"}}}}}}}}, errc::invalid_param,
       "messages[0].content[0].tool_use_id"},
      {{{"max_tokens", 5}, {"messages", {{{"role", "assistant"}, {"content", {{{"type", "tool_use"}, {"id", "t"}, {"name", "f"}}}}}}}},
       errc::invalid_param, "messages[0].content[0].input"},
      {{{"max_tokens", 5}, {"messages", hi}, {"system", 4}}, errc::invalid_param, "system"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tools", {{{"name", "f"}}}}}, errc::invalid_param, "tools[0].input_schema"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}},
       errc::unsupported, "tools[0].type"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tool_choice", "auto"}}, errc::invalid_param, "tool_choice"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tool_choice", {{"type", "sometimes"}}}}, errc::invalid_param, "tool_choice.type"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tool_choice", {{"type", "tool"}}}}, errc::invalid_param, "tool_choice.name"},
      {{{"max_tokens", 5}, {"messages", hi}, {"tool_choice", {{"type", "any"}}}}, errc::invalid_param, "tool_choice"},  // no tools
      {{{"max_tokens", 5}, {"messages", hi}, {"stop_sequences", {""}}}, errc::invalid_param, "stop_sequences[0]"},
      {{{"max_tokens", 5}, {"messages", hi}, {"thinking", {{"type", "on"}}}}, errc::invalid_param, "thinking.type"},
      {{{"max_tokens", 5}, {"messages", hi}, {"top_p", 0}}, errc::invalid_param, "top_p"},
      {{{"max_tokens", 5}, {"messages", hi}, {"model", "claude-sonnet-4-5"}}, errc::unknown_model, "model"},
  };
  for (const auto& c : cases) {
    auto r = parse_anthropic_request(c.body.dump(), stories_limits());
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_EQ(r.error.report.code, c.code) << c.body.dump() << " " << r.error.report.message;
    EXPECT_EQ(r.error.param, c.param) << c.body.dump() << " " << r.error.report.message;
  }
}

TEST(AnthropicErrors, AreAnthropicShapedWithTheirTypes) {
  EXPECT_EQ(json::parse(anthropic_error_body({errc::invalid_param, "max_tokens is required", 0})),
            json::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens is required"}})"));
  EXPECT_EQ(json::parse(anthropic_error_body({errc::unauthenticated, "no key", 0}))["error"]["type"], "authentication_error");
  EXPECT_EQ(json::parse(anthropic_error_body({errc::unknown_model, "m", 0}))["error"]["type"], "not_found_error");
  EXPECT_EQ(json::parse(anthropic_error_body({errc::too_large, "big", 0}))["error"]["type"], "request_too_large");
  const auto over = make_anthropic_error({errc::overloaded, "busy", 1500});
  EXPECT_EQ(json::parse(over.body)["error"]["type"], "rate_limit_error");
  EXPECT_EQ(over.retry_after_s, 2u);
  EXPECT_EQ(json::parse(anthropic_error_body({errc::not_ready, "loading", 0}))["error"]["type"], "overloaded_error");
  EXPECT_TRUE(is_anthropic_target("/v1/messages"));
  EXPECT_TRUE(is_anthropic_target("/v1/messages/count_tokens?beta=true"));
  EXPECT_FALSE(is_anthropic_target("/v1/chat/completions"));
  EXPECT_FALSE(is_anthropic_target("/v1/messagesx"));
}

TEST(AnthropicEncoder, BodyHasThinkingTextAndToolUse) {
  anthropic_encoder enc(false, "msg_1-1", "stories260K");
  request_accepted a;
  a.prompt_tokens = 7;
  EXPECT_EQ(enc.on_accepted(a), "");
  request_finished f = finished(finish_reason::stop, "Checking.", 7, 0, 12);
  f.reasoning = "Think.";
  f.tool_calls = {{"call_1", "get_weather", R"({"city":"Oslo","days":2})"}};
  f.has_tool_calls = true;
  enc.on_finished(f);
  ASSERT_TRUE(enc.done());
  EXPECT_EQ(json::parse(enc.body()), json::parse(R"({"id":"msg_1-1","type":"message","role":"assistant","model":"stories260K",
    "content":[{"type":"thinking","thinking":"Think.","signature":""},{"type":"text","text":"Checking."},
               {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo","days":2}}],
    "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":12}})"));
}

TEST(AnthropicEncoder, StopReasons) {
  auto reason_of = [](request_finished f) {
    anthropic_encoder enc(false, "msg_2-1", "m");
    enc.on_finished(f);
    return json::parse(enc.body());
  };
  EXPECT_EQ(reason_of(finished(finish_reason::stop, "a", 1, 0, 1))["stop_reason"], "end_turn");
  EXPECT_EQ(reason_of(finished(finish_reason::length, "a", 1, 0, 1))["stop_reason"], "max_tokens");
  request_finished s = finished(finish_reason::stop, "a", 1, 0, 1);
  s.stop_kind = "string";
  s.stop_value = "END";
  const json b = reason_of(s);
  EXPECT_EQ(b["stop_reason"], "stop_sequence");
  EXPECT_EQ(b["stop_sequence"], "END");
  EXPECT_EQ(reason_of(finished(finish_reason::deadline, "a", 1, 0, 1))["stop_reason"], "deadline");
}

TEST(AnthropicEncoder, StreamIsTheExactEventSequence) {
  anthropic_encoder enc(true, "msg_3-1", "stories260K");
  request_accepted a;
  a.prompt_tokens = 6;
  std::string bytes = enc.on_accepted(a);
  bytes += enc.on_chunk(parts("Hm", ""));
  bytes += enc.on_chunk(parts("", "Hi"));
  bytes += enc.on_chunk(parts("", "", {{0, "call_1", "get_weather", R"({"city":)"}}));
  bytes += enc.on_chunk(parts("", "", {{0, "", "", R"("Rome"})"}}));
  request_finished f = finished(finish_reason::stop, "", 6, 0, 11);
  f.has_tool_calls = true;
  bytes += enc.on_finished(f);
  EXPECT_EQ(enc.on_finished(f), "");
  const auto evs = split_events(bytes);
  const std::vector<std::string> expected = {
      "message_start", "ping",
      "content_block_start", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
      "message_delta", "message_stop"};
  ASSERT_EQ(evs.size(), expected.size()) << bytes;
  for (size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i].event, expected[i]) << i;
    EXPECT_EQ(evs[i].data["type"], expected[i]) << i;
  }
  EXPECT_EQ(evs[0].data["message"], json::parse(R"({"id":"msg_3-1","type":"message","role":"assistant","model":"stories260K",
    "content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":0}})"));
  EXPECT_EQ(evs[2].data, json::parse(R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})"));
  EXPECT_EQ(evs[3].data["delta"], json::parse(R"({"type":"thinking_delta","thinking":"Hm"})"));
  EXPECT_EQ(evs[5].data["content_block"], json::parse(R"({"type":"text","text":""})"));
  EXPECT_EQ(evs[6].data, json::parse(R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}})"));
  EXPECT_EQ(evs[8].data["content_block"], json::parse(R"({"type":"tool_use","id":"call_1","name":"get_weather","input":{}})"));
  EXPECT_EQ(evs[9].data["delta"], json::parse(R"({"type":"input_json_delta","partial_json":"{\"city\":"})"));
  EXPECT_EQ(evs[11].data, json::parse(R"({"type":"content_block_stop","index":2})"));
  EXPECT_EQ(evs[12].data, json::parse(R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},
                                          "usage":{"output_tokens":11}})"));
}

TEST(AnthropicEncoder, StreamErrorIsOneErrorEvent) {
  anthropic_encoder enc(true, "msg_4-1", "m");
  std::string bytes = enc.on_accepted({});
  bytes += enc.on_chunk(parts("", "A"));
  request_finished f = finished(finish_reason::error, "", 1, 0, 1);
  f.error = {errc::internal, "boom", 0};
  bytes += enc.on_finished(f);
  EXPECT_EQ(enc.on_error({errc::internal, "again", 0}), "");
  const auto evs = split_events(bytes);
  EXPECT_EQ(evs.back().event, "error");
  EXPECT_EQ(evs.back().data, json::parse(R"({"type":"error","error":{"type":"api_error","message":"boom"}})"));
  EXPECT_EQ(evs[evs.size() - 2].event, "content_block_delta");  // no stop events after an error
}

}  // namespace
}  // namespace cortex::http
