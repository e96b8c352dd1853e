// parse_openai_request: http.md's fields, ranges and error codes; every
// error names the field.
#include "actors/http_gateway/openai_request.hpp"
#include "grammar/grammar_matcher.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace cortex::http {
namespace {

using nlohmann::json;

openai_limits limits() {
  openai_limits lim;
  lim.model_name = "stories260K";
  lim.n_embd = 64;
  return lim;
}

openai_parse_result chat(const std::string& body) {
  return parse_openai_request(openai_endpoint::chat_completions, body, limits());
}
openai_parse_result completion(const std::string& body) {
  return parse_openai_request(openai_endpoint::completions, body, limits());
}
openai_parse_result embedding(const std::string& body) {
  return parse_openai_request(openai_endpoint::embeddings, body, limits());
}

// A chat body with one user message plus `extra` fields (a JSON object's inside).
std::string chat_body(const std::string& extra) {
  return R"({"messages":[{"role":"user","content":"hi"}])" + (extra.empty() ? "" : "," + extra) + "}";
}

void expect_error(const openai_parse_result& r, errc code, const std::string& param) {
  ASSERT_FALSE(r.ok()) << "expected an error on " << param;
  EXPECT_EQ(r.error.report.code, code) << r.error.report.message;
  EXPECT_EQ(r.error.param, param) << r.error.report.message;
  // The message says what to fix, naming the top-level field.
  EXPECT_NE(r.error.report.message.find(param.substr(0, param.find_first_of(".["))), std::string::npos)
      << r.error.report.message;
}

TEST(OpenaiRequest, ChatDefaults) {
  const auto r = chat(chat_body(""));
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  const openai_request& q = r.request;
  EXPECT_EQ(q.endpoint, openai_endpoint::chat_completions);
  EXPECT_EQ(q.model, "stories260K");  // omitted: the loaded one
  EXPECT_EQ(q.n, 1u);
  EXPECT_FALSE(q.stream);
  EXPECT_FALSE(q.request.stream);
  EXPECT_FALSE(q.logprobs);
  EXPECT_EQ(q.request.n_logprobs, 0u);
  EXPECT_EQ(q.request.kind, request_kind::generate);
  EXPECT_EQ(json::parse(q.request.messages_json), json::parse(R"([{"role":"user","content":"hi"}])"));
  EXPECT_TRUE(q.request.chat_template_kwargs_json.empty());
  EXPECT_TRUE(q.request.add_generation_prompt);
  EXPECT_TRUE(q.request.prompt.empty());
  EXPECT_EQ(q.request.params.max_tokens, UINT32_MAX);  // OpenAI: up to the context (intake caps)
  EXPECT_FLOAT_EQ(q.request.params.temperature, 1.0f);
  EXPECT_FALSE(q.request.params.has_seed);
}

TEST(OpenaiRequest, ChatAllFields) {
  const auto r = chat(chat_body(R"(
    "model":"stories260K","max_tokens":50,"max_completion_tokens":40,"temperature":0.5,"top_p":0.9,"n":3,
    "stop":["\n\n","END"],"seed":42,"presence_penalty":-1.5,"frequency_penalty":2,"logit_bias":{"50256":-100,"7":2.5},
    "logprobs":true,"top_logprobs":5,"stream":true,"stream_options":{"include_usage":true},"user":"u1",
    "response_format":{"type":"text"},"top_k":40,"min_p":0.05,"repetition_penalty":1.1,"min_tokens":2,
    "ignore_eos":true,"stop_token_ids":[2,3],"priority":-3,"deadline_ms":5000,
    "chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":false,
    "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","unknown_field":{"x":1})"));
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  const openai_request& q = r.request;
  const request_params& p = q.request.params;
  EXPECT_EQ(p.max_tokens, 40u);  // max_completion_tokens wins
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_EQ(q.n, 3u);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(p.has_seed);
  EXPECT_EQ(p.seed, 42u);
  EXPECT_FLOAT_EQ(p.presence_penalty, -1.5f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 2.0f);
  ASSERT_EQ(p.logit_bias_ids.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const bool eos = p.logit_bias_ids[i] == 50256;
    EXPECT_TRUE(eos || p.logit_bias_ids[i] == 7);
    EXPECT_FLOAT_EQ(p.logit_bias_values[i], eos ? -100.0f : 2.5f);
  }
  EXPECT_TRUE(q.logprobs);
  EXPECT_EQ(q.top_logprobs, 5u);
  EXPECT_EQ(q.request.n_logprobs, 5u);
  EXPECT_TRUE(q.stream);
  EXPECT_TRUE(q.request.stream);
  EXPECT_TRUE(q.include_usage);
  EXPECT_EQ(q.user, "u1");
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.min_tokens, 2u);
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(q.request.priority, -3);
  EXPECT_EQ(q.request.deadline_ms, 5000u);
  EXPECT_FALSE(q.request.add_generation_prompt);
  // Tools are the request's own fields (intake renders them unless tool_choice is none).
  EXPECT_EQ(json::parse(q.request.chat_template_kwargs_json), json::parse(R"({"enable_thinking":false})"));
  EXPECT_EQ(json::parse(q.request.tools_json), json::parse(R"([{"type":"function","function":{"name":"f"}}])"));
  EXPECT_EQ(q.request.tool_choice, "auto");
}

TEST(OpenaiRequest, LogprobsWithoutTopStillAsksTheEngine) {
  const auto r = chat(chat_body(R"("logprobs":true)"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.request.logprobs);
  EXPECT_EQ(r.request.top_logprobs, 0u);
  EXPECT_EQ(r.request.request.n_logprobs, 1u);  // the sampled token's logprob comes with a top list of >= 1
}

TEST(OpenaiRequest, MessagesCheckedAndPassedThrough) {
  const auto r = chat(R"({"messages":[
      {"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},
      {"role":"user","content":"weather?","name":"ann"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"get","arguments":"{\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"sunny","extra":7}]})");
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  EXPECT_EQ(json::parse(r.request.request.messages_json), json::parse(R"([
      {"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},
      {"role":"user","content":"weather?","name":"ann"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"get","arguments":"{\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"sunny","extra":7}])"));
}

TEST(OpenaiRequest, ChatInvalidFieldsNameTheField) {
  expect_error(chat(R"({})"), errc::invalid_param, "messages");
  expect_error(chat(R"({"messages":[]})"), errc::invalid_param, "messages");
  expect_error(chat(R"({"messages":"hi"})"), errc::invalid_param, "messages");
  expect_error(chat(R"({"messages":[7]})"), errc::invalid_param, "messages[0]");
  expect_error(chat(R"({"messages":[{"content":"x"}]})"), errc::invalid_param, "messages[0].role");
  expect_error(chat(R"({"messages":[{"role":"robot","content":"x"}]})"), errc::invalid_param, "messages[0].role");
  expect_error(chat(R"({"messages":[{"role":"user"}]})"), errc::invalid_param, "messages[0].content");
  expect_error(chat(R"({"messages":[{"role":"user","content":5}]})"), errc::invalid_param, "messages[0].content");
  expect_error(chat(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})"), errc::invalid_param,
               "messages[0].content[0].text");
  expect_error(chat(R"({"messages":[{"role":"user","content":[{"type":"bogus","text":"x"}]}]})"),
               errc::invalid_param, "messages[0].content[0].type");
  expect_error(chat(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})"),
               errc::unsupported, "messages[0].content[0].type");
  expect_error(chat(R"({"messages":[{"role":"user","content":"x","name":1}]})"), errc::invalid_param,
               "messages[0].name");
  expect_error(chat(R"({"messages":[{"role":"tool","content":"x","tool_call_id":[]}]})"), errc::invalid_param,
               "messages[0].tool_call_id");
  expect_error(chat(R"({"messages":[{"role":"assistant","tool_calls":{}}]})"), errc::invalid_param,
               "messages[0].tool_calls");
  expect_error(chat(chat_body(R"("chat_template_kwargs":[1])")), errc::invalid_param, "chat_template_kwargs");
  expect_error(chat(chat_body(R"("tools":{})")), errc::invalid_param, "tools");
  expect_error(chat(chat_body(R"("tool_choice":3)")), errc::invalid_param, "tool_choice");
  expect_error(chat(chat_body(R"("tool_choice":"sometimes")")), errc::invalid_param, "tool_choice");
  expect_error(chat(chat_body(R"("tool_choice":"required")")), errc::invalid_param, "tool_choice");
  expect_error(chat(chat_body(R"("tools":[{"type":"function"}])")), errc::invalid_param, "tools[0]");
  expect_error(chat(chat_body(R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function"})")),
               errc::invalid_param, "tool_choice.function.name");
  expect_error(chat(chat_body(R"("reasoning_format":"raw")")), errc::invalid_param, "reasoning_format");
  expect_error(chat(chat_body(R"("add_generation_prompt":1)")), errc::invalid_param, "add_generation_prompt");
  expect_error(chat(chat_body(R"("logprobs":3)")), errc::invalid_param, "logprobs");
  expect_error(chat(chat_body(R"("top_logprobs":2)")), errc::invalid_param, "top_logprobs");
  expect_error(chat(chat_body(R"("logprobs":true,"top_logprobs":21)")), errc::invalid_param, "top_logprobs");
}

TEST(OpenaiRequest, RangesOfSharedFields) {
  struct bad { const char* field; const char* value; };
  const bad cases[] = {
      {"max_tokens", "0"}, {"max_tokens", "1.5"}, {"max_tokens", "\"5\""}, {"max_completion_tokens", "-1"},
      {"temperature", "2.01"}, {"temperature", "-0.1"}, {"temperature", "\"hot\""}, {"top_p", "0"},
      {"top_p", "1.5"}, {"n", "0"}, {"n", "9"}, {"n", "2.0"}, {"seed", "1.5"}, {"seed", "\"7\""},
      {"presence_penalty", "2.5"}, {"frequency_penalty", "-3"}, {"stream", "1"}, {"stop", "5"},
      {"stop", "\"\""}, {"logit_bias", "[1]"}, {"top_k", "-1"}, {"min_p", "1.5"}, {"repetition_penalty", "0"},
      {"min_tokens", "-2"}, {"ignore_eos", "\"yes\""}, {"stop_token_ids", "[-1]"}, {"priority", "3000000000"},
      {"deadline_ms", "0"}, {"user", "5"}, {"stream_options", "true"}, {"response_format", "\"text\""},
      {"model", "7"},
  };
  for (const bad& b : cases) {
    SCOPED_TRACE(std::string(b.field) + "=" + b.value);
    expect_error(chat(chat_body("\"" + std::string(b.field) + "\":" + b.value)), errc::invalid_param,
                 std::string(b.field) == "stop_token_ids" ? "stop_token_ids[0]" : b.field);
  }
  expect_error(chat(chat_body(R"("stop":["a",3])")), errc::invalid_param, "stop[1]");
  expect_error(chat(chat_body(R"("stream_options":{"include_usage":"y"})")), errc::invalid_param,
               "stream_options.include_usage");
  expect_error(chat(chat_body(R"("logit_bias":{"abc":1})")), errc::invalid_param, "logit_bias[\"abc\"]");
  expect_error(chat(chat_body(R"("logit_bias":{"-5":1})")), errc::invalid_param, "logit_bias[\"-5\"]");
  expect_error(chat(chat_body(R"("logit_bias":{"3000000000":1})")), errc::invalid_param,
               "logit_bias[\"3000000000\"]");
  expect_error(chat(chat_body(R"("logit_bias":{"5":101})")), errc::invalid_param, "logit_bias[\"5\"]");
  expect_error(chat(chat_body(R"("min_tokens":20,"max_tokens":10)")), errc::invalid_param, "min_tokens");
}

TEST(OpenaiRequest, BoundaryValuesAreAccepted) {
  const auto r = chat(chat_body(R"("temperature":0,"top_p":1,"n":8,"presence_penalty":-2,"frequency_penalty":2,
      "logit_bias":{"0":-100,"2147483647":100},"seed":-1,"stop":"x","min_p":0,"max_tokens":99999999999,
      "temperature":2,"stop":null,"top_k":null)"));
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  EXPECT_EQ(r.request.n, 8u);
  EXPECT_EQ(r.request.request.params.seed, UINT64_MAX);  // -1 keeps its bits
  EXPECT_EQ(r.request.request.params.max_tokens, UINT32_MAX);
  EXPECT_TRUE(r.request.request.params.stop.empty());  // null = absent (the last key wins in JSON)
}

TEST(OpenaiRequest, SizeCapsAre413) {
  std::string stops = "[";
  for (int i = 0; i < 17; ++i) stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  expect_error(chat(chat_body("\"stop\":" + stops + "]")), errc::too_large, "stop");
  expect_error(chat(chat_body("\"stop\":\"" + std::string(257, 'a') + "\"")), errc::too_large, "stop");
  EXPECT_TRUE(chat(chat_body("\"stop\":[\"" + std::string(256, 'a') + "\"]")).ok());
  std::string bias = "{";
  for (int i = 0; i < 1025; ++i) bias += std::string(i ? "," : "") + "\"" + std::to_string(i) + "\":1";
  expect_error(chat(chat_body("\"logit_bias\":" + bias + "}")), errc::too_large, "logit_bias");
  std::string msgs = "[";
  for (int i = 0; i < 1025; ++i) msgs += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
  expect_error(chat("{\"messages\":" + msgs + "]}"), errc::too_large, "messages");
  const std::string deep = std::string(17, '[') + std::string(17, ']');
  expect_error(chat(chat_body("\"x\":" + deep)), errc::too_large, "");
  // 15 levels inside the body's object: 16 in all, allowed (and ignored: unknown field).
  EXPECT_TRUE(chat(chat_body("\"x\":" + std::string(15, '[') + std::string(15, ']'))).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(chat(chat_body("\"x\":\"" + std::string(40, '[') + "\\\"" + std::string(40, '{') + "\"")).ok());
}

TEST(OpenaiRequest, MalformedBodies) {
  expect_error(chat(""), errc::malformed, "");
  expect_error(chat("{\"messages\":"), errc::malformed, "");
  expect_error(chat("[1,2]"), errc::malformed, "");
  expect_error(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}"), errc::malformed, "");
}

TEST(OpenaiRequest, ModelAndResponseFormat) {
  expect_error(chat(chat_body(R"("model":"gpt-4")")), errc::unknown_model, "model");
  EXPECT_TRUE(chat(chat_body(R"("model":null)")).ok());
  expect_error(chat(chat_body(R"("response_format":{"type":"xml"})")), errc::invalid_param, "response_format.type");
  expect_error(chat(chat_body(R"("response_format":{})")), errc::invalid_param, "response_format.type");
  openai_limits any = limits();
  any.model_name.clear();
  const auto r = parse_openai_request(openai_endpoint::chat_completions, chat_body(R"("model":"whatever")"), any);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.model, "whatever");
}

TEST(OpenaiRequest, CompletionPrompts) {
  auto r = completion(R"({"prompt":"Once upon"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.request.prompt, "Once upon");
  EXPECT_FALSE(r.request.request.use_tokens);
  EXPECT_TRUE(r.request.request.messages_json.empty());
  EXPECT_EQ(r.request.request.params.max_tokens, 16u);  // OpenAI's completions default
  r = completion(R"({"prompt":[1,9038,2501],"logprobs":3})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.request.request.use_tokens);
  EXPECT_EQ(r.request.request.tokens, (std::vector<int32_t>{1, 9038, 2501}));
  EXPECT_TRUE(r.request.logprobs);
  EXPECT_EQ(r.request.top_logprobs, 3u);
  EXPECT_EQ(r.request.request.n_logprobs, 3u);
  r = completion(R"({"prompt":"x","logprobs":0})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.request.logprobs);
  EXPECT_EQ(r.request.request.n_logprobs, 1u);
  r = completion(R"({"prompt":["only one"]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.request.prompt, "only one");
  r = completion(R"({"prompt":[[5,6]]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.request.tokens, (std::vector<int32_t>{5, 6}));

  expect_error(completion(R"({})"), errc::invalid_param, "prompt");
  expect_error(completion(R"({"prompt":5})"), errc::invalid_param, "prompt");
  expect_error(completion(R"({"prompt":[]})"), errc::invalid_param, "prompt");
  expect_error(completion(R"({"prompt":[1,-2]})"), errc::invalid_param, "prompt[1]");
  expect_error(completion(R"({"prompt":["a","b"]})"), errc::unsupported, "prompt");
  expect_error(completion(R"({"prompt":"x","logprobs":true})"), errc::invalid_param, "logprobs");
  expect_error(completion(R"({"prompt":"x","logprobs":21})"), errc::invalid_param, "logprobs");
  expect_error(completion(R"({"prompt":"x","echo":true})"), errc::unsupported, "echo");
  expect_error(completion(R"({"prompt":"x","suffix":"end"})"), errc::unsupported, "suffix");
  EXPECT_TRUE(completion(R"({"prompt":"x","echo":false,"suffix":null})").ok());
}

TEST(OpenaiRequest, ChoiceRequestsGetDistinctSeeds) {
  auto r = chat(chat_body(R"("n":3,"seed":10)"));
  ASSERT_TRUE(r.ok());
  const auto reqs = choice_requests(r.request);
  ASSERT_EQ(reqs.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(reqs[i].params.seed, 10u + i);
  r = chat(chat_body(R"("n":2)"));
  const auto unseeded = choice_requests(r.request);
  ASSERT_EQ(unseeded.size(), 2u);
  EXPECT_FALSE(unseeded[1].params.has_seed);
}

TEST(OpenaiRequest, EmbeddingInputs) {
  auto r = embedding(R"({"input":"hello","model":"stories260K"})");
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  ASSERT_EQ(r.request.inputs.size(), 1u);
  EXPECT_EQ(r.request.inputs[0].kind, request_kind::embed);
  EXPECT_EQ(r.request.inputs[0].prompt, "hello");
  EXPECT_FALSE(r.request.base64);
  r = embedding(R"({"input":["a","b","c"],"encoding_format":"base64","dimensions":64})");
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  ASSERT_EQ(r.request.inputs.size(), 3u);
  EXPECT_EQ(r.request.inputs[2].prompt, "c");
  EXPECT_TRUE(r.request.base64);
  r = embedding(R"({"input":[1,2,3]})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.request.inputs.size(), 1u);
  EXPECT_TRUE(r.request.inputs[0].use_tokens);
  EXPECT_EQ(r.request.inputs[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  r = embedding(R"({"input":[[1,2],[3]]})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.request.inputs.size(), 2u);
  EXPECT_EQ(r.request.inputs[1].tokens, (std::vector<int32_t>{3}));

  std::string many = "[";
  for (int i = 0; i < 257; ++i) many += std::string(i ? "," : "") + "\"x\"";
  expect_error(embedding("{\"input\":" + many + "]}"), errc::too_large, "input");
  expect_error(embedding(R"({})"), errc::invalid_param, "input");
  expect_error(embedding(R"({"input":[]})"), errc::invalid_param, "input");
  expect_error(embedding(R"({"input":""})"), errc::invalid_param, "input");
  expect_error(embedding(R"({"input":5})"), errc::invalid_param, "input");
  expect_error(embedding(R"({"input":["a",5]})"), errc::invalid_param, "input[1]");
  expect_error(embedding(R"({"input":[1,"a"]})"), errc::invalid_param, "input[1]");
  expect_error(embedding(R"({"input":[[1],[]]})"), errc::invalid_param, "input[1]");
  expect_error(embedding(R"({"input":"x","encoding_format":"int8"})"), errc::invalid_param, "encoding_format");
  expect_error(embedding(R"({"input":"x","dimensions":32})"), errc::invalid_param, "dimensions");
  expect_error(embedding(R"({"input":"x","model":"other"})"), errc::unknown_model, "model");
}

// Structured output: json_object and json_schema become a grammar (the
// schema's properties in the order the client wrote them), `grammar` is the
// GBNF extension; errors name the field.
TEST(OpenaiRequest, ResponseFormatBecomesAGrammar) {
  auto r = chat(chat_body(R"("response_format":{"type":"json_object"})"));
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  EXPECT_EQ(r.request.request.params.grammar.rfind("root ::= json-object\n", 0), 0u);
  r = chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,)"
                     R"("schema":{"type":"object","properties":{"zeta":{"type":"boolean"},"alpha":{"type":"null"}},)"
                     R"("required":["zeta","alpha"]}}})"));
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  auto g = grammar::compile(r.request.request.params.grammar);
  ASSERT_TRUE(g) << g.error().message;
  const auto whole = [&](const std::string& doc) {
    grammar_matcher m(*g);
    grammar_matcher::state s = m.initial();
    return m.advance(s, doc) && grammar_matcher::is_complete(s);
  };
  EXPECT_TRUE(whole(R"({"zeta": true, "alpha": null})"));
  EXPECT_FALSE(whole(R"({"alpha": null, "zeta": true})"));
  r = completion(R"({"prompt":"x","grammar":"root ::= \"a\""})");
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  EXPECT_EQ(r.request.request.params.grammar, "root ::= \"a\"");
  expect_error(chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"name":"p",)"
                              R"("schema":{"type":"array","uniqueItems":true}}})")),
               errc::invalid_param, "response_format.json_schema.schema");
  expect_error(chat(chat_body(R"("response_format":{"type":"json_schema"})")), errc::invalid_param,
               "response_format.json_schema");
  expect_error(chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"strict":1}})")),
               errc::invalid_param, "response_format.json_schema.strict");
  expect_error(chat(chat_body(R"("grammar":"root ::= \"a\"","response_format":{"type":"json_object"})")),
               errc::invalid_param, "grammar");
  expect_error(completion(R"({"prompt":"x","grammar":5})"), errc::invalid_param, "grammar");
}

openai_parse_result rerank(const std::string& body) {
  return parse_openai_request(openai_endpoint::rerank, body, limits());
}

TEST(OpenaiRequest, RerankOneEngineRequestPerDocument) {
  const auto r = rerank(R"({"model":"stories260K","query":"capital of France?","documents":["Paris.","Berlin.","Rome."],"top_n":2})");
  ASSERT_TRUE(r.ok()) << r.error.report.message;
  EXPECT_EQ(r.request.top_n, 2u);
  ASSERT_EQ(r.request.inputs.size(), 3u);
  for (const auto& g : r.request.inputs) {
    EXPECT_EQ(g.kind, request_kind::embed);
    EXPECT_EQ(g.prompt, "capital of France?");
    EXPECT_FALSE(g.stream);
  }
  EXPECT_EQ(r.request.inputs[1].document, "Berlin.");
  // top_n defaults to every document and is capped to their number.
  EXPECT_EQ(rerank(R"({"query":"q","documents":["a","b"]})").request.top_n, 2u);
  EXPECT_EQ(rerank(R"({"query":"q","documents":["a","b"],"top_n":9})").request.top_n, 2u);
}

TEST(OpenaiRequest, RerankInvalidFieldsNameTheField) {
  expect_error(rerank(R"({"documents":["a"]})"), errc::invalid_param, "query");
  expect_error(rerank(R"({"query":"","documents":["a"]})"), errc::invalid_param, "query");
  expect_error(rerank(R"({"query":"q"})"), errc::invalid_param, "documents");
  expect_error(rerank(R"({"query":"q","documents":[]})"), errc::invalid_param, "documents");
  expect_error(rerank(R"({"query":"q","documents":"a"})"), errc::invalid_param, "documents");
  expect_error(rerank(R"({"query":"q","documents":["a",3]})"), errc::invalid_param, "documents[1]");
  expect_error(rerank(R"({"query":"q","documents":["a",""]})"), errc::invalid_param, "documents[1]");
  expect_error(rerank(R"({"query":"q","documents":["a"],"top_n":0})"), errc::invalid_param, "top_n");
  expect_error(rerank(R"({"model":"other","query":"q","documents":["a"]})"), errc::unknown_model, "model");
}

}  // namespace
}  // namespace cortex::http
