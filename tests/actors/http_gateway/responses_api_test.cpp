// The Responses API mapping (http.md "Responses API"): request items onto
// the chat request, errors naming the field as sent, the response object,
// and the exact event stream with its sequence numbers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "actors/http_gateway/responses_api.hpp"
#include "tests/actors/http_gateway/sse_events.hpp"
#include "tests/actors/http_gateway/test_events.hpp"

namespace cortex::http {
namespace {

using nlohmann::json;
using namespace test;

responses_request parse_ok(const json& body) {
  auto r = parse_responses_request(body.dump(), stories_limits());
  EXPECT_TRUE(r.ok()) << r.error.param << ": " << r.error.report.message;
  return r.request;
}

openai_error parse_error(const json& body) {
  auto r = parse_responses_request(body.dump(), stories_limits());
  EXPECT_FALSE(r.ok()) << body.dump();
  return r.error;
}

const json weather_tool = {{"type", "function"},
                           {"name", "get_weather"},
                           {"description", "Weather"},
                           {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}};

TEST(ResponsesRequest, StringInputAndInstructionsBecomeMessages) {
  auto r = parse_ok({{"model", "stories260K"}, {"input", "Hi"}, {"instructions", "Be brief."}, {"max_output_tokens", 12},
                     {"temperature", 0.5}, {"reasoning", {{"effort", "low"}}}});
  EXPECT_EQ(json::parse(r.chat.request.messages_json),
            json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])"));
  EXPECT_EQ(r.chat.request.params.max_tokens, 12u);
  EXPECT_FLOAT_EQ(r.chat.request.params.temperature, 0.5f);
  EXPECT_EQ(json::parse(r.chat.request.chat_template_kwargs_json)["reasoning_effort"], "low");
  EXPECT_FALSE(r.chat.stream);
  EXPECT_EQ(r.chat.model, "stories260K");
}

TEST(ResponsesRequest, ItemsRoundTripAFunctionCall) {
  json input = json::array({
      {{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Weather in "}}, {{"type", "input_text"}, {"text", "Paris?"}}}}},
      {{"type", "reasoning"}, {"summary", json::array()}, {"content", {{{"type", "reasoning_text"}, {"text", "Call it."}}}}},
      {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}},
      {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}},
      {{"type", "message"}, {"role", "developer"}, {"content", "Answer in one word."}},
  });
  auto r = parse_ok({{"input", input}, {"tools", {weather_tool}}, {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                     {"parallel_tool_calls", false}});
  const json msgs = json::parse(r.chat.request.messages_json);
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0], json::parse(R"({"role":"user","content":"Weather in Paris?"})"));
  EXPECT_EQ(msgs[1], json::parse(R"({"role":"assistant","content":"","reasoning_content":"Call it.",
      "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]})"));
  EXPECT_EQ(msgs[2], json::parse(R"({"role":"tool","tool_call_id":"call_1","content":"sunny"})"));
  EXPECT_EQ(msgs[3], json::parse(R"({"role":"system","content":"Answer in one word."})"));
  const json tools = json::parse(r.chat.request.tools_json);
  EXPECT_EQ(tools[0]["type"], "function");
  EXPECT_EQ(tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(tools[0]["function"]["parameters"]["required"], json::array({"city"}));
  EXPECT_EQ(r.chat.request.tool_choice, "function");
  EXPECT_EQ(r.chat.request.tool_choice_name, "get_weather");
  EXPECT_FALSE(r.chat.request.parallel_tool_calls);
}

TEST(ResponsesRequest, JsonSchemaFormatBecomesTheGrammar) {
  json format = {{"type", "json_schema"}, {"name", "city"}, {"strict", true},
                 {"schema", {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}, {"required", {"name"}}}}};
  auto r = parse_ok({{"input", "x"}, {"text", {{"format", format}}}});
  EXPECT_FALSE(r.chat.request.params.grammar.empty());
  EXPECT_EQ(r.text["format"]["name"], "city");
  EXPECT_TRUE(parse_ok({{"input", "x"}, {"text", {{"format", {{"type", "text"}}}}}}).chat.request.params.grammar.empty());
}

TEST(ResponsesRequest, ErrorsNameTheFieldAsSent) {
  struct bad {
    json body;
    errc code;
    std::string param;
  };
  const std::vector<bad> cases = {
      {{{"input", "x"}, {"store", true}}, errc::invalid_param, "store"},
      {{{"input", "x"}, {"store", "no"}}, errc::invalid_param, "store"},
      {{{"input", "x"}, {"previous_response_id", "resp_1"}}, errc::invalid_param, "previous_response_id"},
      {{{"instructions", "x"}}, errc::invalid_param, "input"},
      {{{"input", json::array()}}, errc::invalid_param, "input"},
      {{{"input", 3}}, errc::invalid_param, "input"},
      {{{"input", {{{"role", "user"}, {"content", "a"}}, {{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}}}}},
       errc::invalid_param, "input[1].call_id"},
      {{{"input", {{{"type", "function_call_output"}, {"call_id", "c"}}}}}, errc::invalid_param, "input[0].output"},
      {{{"input", {{{"role", "robot"}, {"content", "a"}}}}}, errc::invalid_param, "input[0].role"},
      {{{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}}, errc::unsupported,
       "input[0].content[0].type"},
      {{{"input", {{{"type", "item_reference"}, {"id", "msg_1"}}}}}, errc::invalid_param, "input[0].type"},
      {{{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}, errc::unsupported, "tools[0].type"},
      {{{"input", "x"}, {"tools", {{{"type", "function"}}}}}, errc::invalid_param, "tools[0].name"},
      {{{"input", "x"}, {"tool_choice", "always"}}, errc::invalid_param, "tool_choice"},
      {{{"input", "x"}, {"tool_choice", "required"}}, errc::invalid_param, "tool_choice"},  // no tools
      {{{"input", "x"}, {"max_output_tokens", 0}}, errc::invalid_param, "max_output_tokens"},
      {{{"input", "x"}, {"temperature", 3}}, errc::invalid_param, "temperature"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"schema", 5}}}}}}, errc::invalid_param, "text.format.schema"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}, errc::invalid_param, "text.format.type"},
      {{{"input", "x"}, {"reasoning", {{"effort", 1}}}}, errc::invalid_param, "reasoning.effort"},
      {{{"input", "x"}, {"model", "gpt-4o"}}, errc::unknown_model, "model"},
  };
  for (const auto& c : cases) {
    const openai_error e = parse_error(c.body);
    EXPECT_EQ(e.report.code, c.code) << c.body.dump() << " " << e.report.message;
    EXPECT_EQ(e.param, c.param) << c.body.dump() << " " << e.report.message;
    EXPECT_FALSE(e.report.message.empty());
  }
  EXPECT_EQ(parse_responses_request("{", stories_limits()).error.report.code, errc::malformed);
  EXPECT_EQ(parse_responses_request("[1]", stories_limits()).error.report.code, errc::malformed);
}

TEST(ResponsesEncoder, BodyHasReasoningMessageAndCallItems) {
  auto req = parse_ok({{"input", "x"}, {"tools", {weather_tool}}});
  responses_encoder enc(req, "resp_7-1", 1700000000);
  EXPECT_FALSE(enc.streaming());
  request_accepted a;
  a.prompt_tokens = 5;
  EXPECT_EQ(enc.on_accepted(a), "");
  request_finished f = finished(finish_reason::stop, "Let me check.", 5, 2, 9);
  f.reasoning = "Think.";
  f.tool_calls = {{"call_9", "get_weather", R"({"city":"Oslo"})"}};
  f.has_tool_calls = true;
  EXPECT_EQ(enc.on_finished(f), "");
  ASSERT_TRUE(enc.done());
  ASSERT_EQ(enc.error(), nullptr);
  const json body = json::parse(enc.body());
  EXPECT_EQ(body["id"], "resp_7-1");
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["created_at"], 1700000000);
  EXPECT_EQ(body["status"], "completed");
  EXPECT_EQ(body["incomplete_details"], nullptr);
  EXPECT_EQ(body["model"], "stories260K");
  EXPECT_EQ(body["output"], json::parse(R"([
    {"id":"rs_7-1_0","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Think."}]},
    {"id":"msg_7-1_1","type":"message","status":"completed","role":"assistant",
     "content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
    {"id":"fc_7-1_2","type":"function_call","status":"completed","call_id":"call_9","name":"get_weather",
     "arguments":"{\"city\":\"Oslo\"}"}])"));
  EXPECT_EQ(body["usage"], json::parse(R"({"input_tokens":5,"input_tokens_details":{"cached_tokens":2},
                                           "output_tokens":9,"total_tokens":14})"));
  EXPECT_EQ(body["tools"][0]["name"], "get_weather");
  EXPECT_EQ(body["store"], false);
}

TEST(ResponsesEncoder, LengthIsIncompleteAndErrorsAreOpenAIShaped) {
  auto req = parse_ok({{"input", "x"}, {"max_output_tokens", 3}});
  responses_encoder enc(req, "resp_1-1", 1);
  enc.on_finished(finished(finish_reason::length, "Once upon a", 4, 0, 3));
  const json body = json::parse(enc.body());
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"], json::parse(R"({"reason":"max_output_tokens"})"));
  EXPECT_EQ(body["output"][0]["status"], "incomplete");
  EXPECT_EQ(body["max_output_tokens"], 3);

  responses_encoder failing(req, "resp_2-1", 1);
  request_finished f = finished(finish_reason::error, "", 0, 0, 0);
  f.error = {errc::context_overflow, "too long", 0};
  failing.on_finished(f);
  ASSERT_NE(failing.error(), nullptr);
  const auto er = failing.error_response(*failing.error());
  EXPECT_EQ(er.status, 400);
  EXPECT_EQ(json::parse(er.body)["error"]["code"], "context_length_exceeded");
}

TEST(ResponsesEncoder, StreamIsTheExactTypedEventSequence) {
  auto req = parse_ok({{"input", "x"}, {"stream", true}, {"tools", {weather_tool}}});
  responses_encoder enc(req, "resp_3-1", 1);
  ASSERT_TRUE(enc.streaming());
  std::string bytes;
  request_accepted a;
  a.prompt_tokens = 6;
  bytes += enc.on_accepted(a);
  EXPECT_TRUE(enc.started());
  bytes += enc.on_chunk(parts("Hm", ""));
  bytes += enc.on_chunk(parts(".", "\n\n"));  // whitespace between reasoning and text: held, then joined
  bytes += enc.on_chunk(parts("", "Hi"));
  bytes += enc.on_chunk(parts("", "", {{0, "call_1", "get_weather", R"({"city":)"}}));
  bytes += enc.on_chunk(parts("", "", {{0, "", "", R"("Rome"})"}}));
  request_finished f = finished(finish_reason::stop, "", 6, 0, 11);
  f.has_tool_calls = true;
  bytes += enc.on_finished(f);
  EXPECT_TRUE(enc.done());
  EXPECT_EQ(enc.on_chunk(parts("", "late")), "");

  const auto evs = split_events(bytes);
  const std::vector<std::string> expected = {
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      "response.completed"};
  ASSERT_EQ(evs.size(), expected.size()) << bytes;
  for (size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i].event, expected[i]) << i;
    EXPECT_EQ(evs[i].data["type"], expected[i]) << i;
    EXPECT_EQ(evs[i].data["sequence_number"], i) << i;
  }
  EXPECT_EQ(evs[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(evs[0].data["response"]["output"], json::array());
  EXPECT_EQ(evs[2].data["item"]["type"], "reasoning");
  EXPECT_EQ(evs[3].data["part"], json::parse(R"({"type":"reasoning_text","text":""})"));
  EXPECT_EQ(evs[6].data["text"], "Hm.");
  EXPECT_EQ(evs[11].data["delta"], "\n\nHi");
  EXPECT_EQ(evs[11].data["item_id"], "msg_3-1_1");
  EXPECT_EQ(evs[11].data["output_index"], 1);
  EXPECT_EQ(evs[11].data["content_index"], 0);
  EXPECT_EQ(evs[15].data["item"], json::parse(R"({"id":"fc_3-1_2","type":"function_call","status":"in_progress",
      "call_id":"call_1","name":"get_weather","arguments":""})"));
  EXPECT_EQ(evs[18].data["arguments"], R"({"city":"Rome"})");
  EXPECT_EQ(evs[18].data["name"], "get_weather");
  const json& done = evs.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 3u);
  EXPECT_EQ(done["output"][1]["content"][0]["text"], "\n\nHi");
  EXPECT_EQ(done["output"][2]["arguments"], R"({"city":"Rome"})");
  EXPECT_EQ(done["usage"]["total_tokens"], 17);
}

TEST(ResponsesEncoder, StreamEndsIncompleteOrFailedOnce) {
  auto req = parse_ok({{"input", "x"}, {"stream", true}});
  responses_encoder cut(req, "resp_4-1", 1);
  std::string bytes = cut.on_accepted({});  // one statement each: the events' order is the calls' order
  bytes += cut.on_chunk(parts("", "Once"));
  bytes += cut.on_finished(finished(finish_reason::length, " upon", 2, 0, 2));
  auto evs = split_events(bytes);
  EXPECT_EQ(evs.back().event, "response.incomplete");
  EXPECT_EQ(evs.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(evs.back().data["response"]["output"][0]["content"][0]["text"], "Once upon");

  responses_encoder failed(req, "resp_5-1", 1);
  bytes = failed.on_accepted({});
  bytes += failed.on_chunk(parts("", "A"));
  bytes += failed.on_error({errc::internal, "boom", 0});
  EXPECT_EQ(failed.on_finished(finished(finish_reason::stop, "", 1, 0, 1)), "");  // one terminal event
  evs = split_events(bytes);
  EXPECT_EQ(evs.back().event, "response.failed");
  EXPECT_EQ(evs.back().data["response"]["status"], "failed");
  EXPECT_EQ(evs.back().data["response"]["error"], json::parse(R"({"code":"internal","message":"boom"})"));
}

}  // namespace
}  // namespace cortex::http
