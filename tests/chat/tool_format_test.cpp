// Each family's parser on real outputs of its models (the formats as the
// model cards and llama.cpp's chat tests show them), all at once and
// streamed one byte at a time: both give exactly the expected message.
#include <gtest/gtest.h>

#include "chat/output_parser.hpp"
#include "chat/tool_format.hpp"

namespace cortex::chat {
namespace {

struct expected_call {
  std::string name, arguments;
};

struct streamed {
  parsed_output whole;        // the sum of the deltas
  std::vector<std::string> contents;  // each content delta
};

streamed stream_bytes(const output_options& o, const std::string& text, size_t piece) {
  output_parser p(o);
  streamed s;
  const auto add = [&](const output_delta& d) {
    s.whole.content += d.content;
    s.whole.reasoning += d.reasoning;
    if (!d.content.empty()) s.contents.push_back(d.content);
    for (const auto& c : d.tool_calls) {
      EXPECT_EQ(c.index, s.whole.tool_calls.size());
      EXPECT_FALSE(c.id.empty());
      s.whole.tool_calls.push_back({c.id, c.name, c.arguments});
    }
  };
  for (size_t i = 0; i < text.size(); i += piece) add(p.push(std::string_view(text).substr(i, piece)));
  add(p.finish());
  // The stream and the whole message agree.
  EXPECT_EQ(s.whole.content, p.result().content);
  EXPECT_EQ(s.whole.reasoning, p.result().reasoning);
  EXPECT_EQ(s.whole.tool_calls, p.result().tool_calls);
  return s;
}

void expect_message(const output_options& o, const std::string& text, const std::string& content,
                    const std::vector<expected_call>& calls, const std::string& reasoning = "") {
  for (size_t piece : {text.size() + 1, size_t{1}, size_t{3}, size_t{7}}) {
    SCOPED_TRACE("pieces of " + std::to_string(piece) + " bytes");
    streamed s = stream_bytes(o, text, piece);
    EXPECT_EQ(s.whole.content, content);
    EXPECT_EQ(s.whole.reasoning, reasoning);
    ASSERT_EQ(s.whole.tool_calls.size(), calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(s.whole.tool_calls[i].name, calls[i].name);
      EXPECT_EQ(s.whole.tool_calls[i].arguments, calls[i].arguments);
    }
    for (const auto& c : s.contents) {  // no opener ever shows as content
      if (!o.split_reasoning) break;
      EXPECT_EQ(c.find("<tool_call"), std::string::npos) << c;
      EXPECT_EQ(c.find("[TOOL_CALLS"), std::string::npos) << c;
      EXPECT_EQ(c.find("tool\xE2\x96\x81"), std::string::npos) << c;
      EXPECT_EQ(c.find("<|channel|>"), std::string::npos) << c;
      EXPECT_EQ(c.find("<think>"), std::string::npos) << c;
    }
  }
}

output_options opts(const std::string& format, bool think = false) {
  output_options o;
  o.format = format;
  o.parse_tool_calls = true;
  o.think_tags = think;
  o.id_seed = 42;
  return o;
}

TEST(ToolFormatHermes, QwenCallAfterText) {
  expect_message(opts("hermes"),
                 "I will check the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
                 "\"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
                 "I will check the weather.", {{"get_weather", R"({"location":"Paris","unit":"celsius"})"}});
}

TEST(ToolFormatHermes, ParallelCalls) {
  expect_message(opts("hermes"),
                 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>\n"
                 "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}\n</tool_call>",
                 "", {{"get_weather", R"({"location":"Paris"})"}, {"get_time", R"({"timezone":"Europe/Paris"})"}});
}

TEST(ToolFormatHermes, Hermes2ProArgumentsFirstAndNoCloseTag) {
  expect_message(opts("hermes"), "<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": \"get_stock_fundamentals\"}\n",
                 "", {{"get_stock_fundamentals", R"({"symbol":"TSLA"})"}});
}

TEST(ToolFormatHermes, PlainTextStaysText) {
  expect_message(opts("hermes"), "The capital of France is Paris. Use <b>tags</b> < 3.", "The capital of France is Paris. Use <b>tags</b> < 3.", {});
}

TEST(ToolFormatHermes, Qwen3ThinkingThenCall) {
  expect_message(opts("hermes", true),
                 "<think>\nThe user wants the weather in Paris. I should call get_weather.\n</think>\n\n<tool_call>\n"
                 "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>",
                 "", {{"get_weather", R"({"location":"Paris"})"}},
                 "The user wants the weather in Paris. I should call get_weather.");
}

TEST(ToolFormatHermes, Qwen3ThinkingThenText) {
  expect_message(opts("hermes", true), "<think>\nA greeting.\n</think>\n\nHello! How can I help you today?",
                 "Hello! How can I help you today?", {}, "A greeting.");
}

TEST(ToolFormatHermes, UnclosedThinkIsReasoning) {
  expect_message(opts("hermes", true), "<think>\nStill thinking about", "", {}, "Still thinking about");
}

TEST(ToolFormatHermes, ReasoningFormatNoneKeepsRawText) {
  auto o = opts("hermes", true);
  o.split_reasoning = false;
  o.parse_tool_calls = false;
  expect_message(o, "<think>\nhm\n</think>\n\nHi", "<think>\nhm\n</think>\n\nHi", {});
}

TEST(ToolFormatHermes, CallCutOffByTheEndIsDropped) {
  auto r = parse_output(opts("hermes"), "Sure <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "Sure");
}

TEST(ToolFormatHermes, TagAroundNoCallIsText) {
  auto r = parse_output(opts("hermes"), "Sure <tool_call> is a tag.");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "Sure <tool_call> is a tag.");
}

TEST(ToolFormatLlama3, JsonCall) {
  expect_message(opts("llama3"),
                 "{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, CA\", \"unit\": "
                 "\"Fahrenheit\"}}",
                 "", {{"get_current_conditions", R"({"location":"San Francisco, CA","unit":"Fahrenheit"})"}});
}

TEST(ToolFormatLlama3, PythonTagBuiltin) {
  expect_message(opts("llama3"), "<|python_tag|>brave_search.call(query=\"current weather in Menlo Park, California\")", "",
                 {{"brave_search", R"({"query":"current weather in Menlo Park, California"})"}});
}

TEST(ToolFormatLlama3, PythonTagJson) {
  expect_message(opts("llama3"), "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Tokyo\"}}", "",
                 {{"get_weather", R"({"city":"Tokyo"})"}});
}

TEST(ToolFormatLlama3, TextAndJsonThatIsNoCall) {
  expect_message(opts("llama3"), "Hello there!", "Hello there!", {});
  expect_message(opts("llama3"), "{\"answer\": 42}", "{\"answer\": 42}", {});
}

TEST(ToolFormatMistral, V03JsonArray) {
  expect_message(opts("mistral"),
                 "[TOOL_CALLS] [{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, France\", "
                 "\"format\": \"celsius\"}}]",
                 "", {{"get_current_weather", R"({"location":"Paris, France","format":"celsius"})"}});
}

TEST(ToolFormatMistral, V03Parallel) {
  expect_message(opts("mistral"),
                 "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_weather\", "
                 "\"arguments\": {\"city\": \"Lyon\"}}]",
                 "", {{"get_weather", R"({"city":"Paris"})"}, {"get_weather", R"({"city":"Lyon"})"}});
}

TEST(ToolFormatMistral, ArgsForm) {
  expect_message(opts("mistral"), "Let me look.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}",
                 "Let me look.", {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}});
}

TEST(ToolFormatMistral, IdsAreNineAlphanumerics) {
  auto r = parse_output(opts("mistral"), "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id.size(), 9u);
  for (char c : r.tool_calls[0].id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
}

TEST(ToolFormatDeepSeek, R1ThinkingThenCall) {
  expect_message(opts("deepseek", true),
                 "<think>\nOkay, the user wants the weather in Tokyo.\n</think>\n\n"
                 "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": "
                 "\"Tokyo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                 "", {{"get_weather", R"({"location":"Tokyo"})"}}, "Okay, the user wants the weather in Tokyo.");
}

TEST(ToolFormatDeepSeek, R1ThinkingOpenedByThePrompt) {
  auto o = opts("deepseek", true);
  o.thinking_open = true;
  expect_message(o, "Let me think.\n</think>\n\nThe answer is 4.", "The answer is 4.", {}, "Let me think.");
}

TEST(ToolFormatDeepSeek, V3ParallelAndV31Form) {
  expect_message(opts("deepseek"),
                 "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{\"x\": 1}\n```"
                 "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n```json\n{}\n```<｜tool▁call▁end｜>"
                 "<｜tool▁calls▁end｜>",
                 "Checking.", {{"a", R"({"x":1})"}, {"b", "{}"}});
  expect_message(opts("deepseek"),
                 "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Hangzhou\"}<｜tool▁call▁end｜>"
                 "<｜tool▁calls▁end｜>",
                 "", {{"get_weather", R"({"city":"Hangzhou"})"}});
}

TEST(ToolFormatHarmony, AnalysisThenCall) {
  expect_message(opts("harmony"),
                 "<|channel|>analysis<|message|>User asks for weather in Tokyo. Need to call get_weather.<|end|>"
                 "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":"
                 "\"Tokyo\"}",
                 "", {{"get_weather", R"({"location":"Tokyo"})"}},
                 "User asks for weather in Tokyo. Need to call get_weather.");
}

TEST(ToolFormatHarmony, AnalysisThenFinal) {
  expect_message(opts("harmony"),
                 "<|channel|>analysis<|message|>Simple greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello! "
                 "How can I help?",
                 "Hello! How can I help?", {}, "Simple greeting.");
}

TEST(ToolFormatHarmony, RecipientBeforeChannel) {
  expect_message(opts("harmony"),
                 "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.lookup<|channel|>commentary json"
                 "<|message|>{\"q\": \"cats\"}<|call|>",
                 "", {{"lookup", R"({"q":"cats"})"}}, "x");
}

TEST(ToolFormatGranite, JsonArray) {
  expect_message(opts("granite"),
                 "<|tool_call|>[{\"arguments\": {\"location\": \"Boston\"}, \"name\": \"get_current_weather\"}]", "",
                 {{"get_current_weather", R"({"location":"Boston"})"}});
}

TEST(ToolFormatQwen3Coder, XmlCallsTypedBySchema) {
  auto o = opts("qwen3_coder");
  o.tools_json = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "zip": {"type": "string"}}}}}])";
  expect_message(o,
                 "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco, CA\n</parameter>\n"
                 "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n94103\n</parameter>\n</function>\n</tool_call>\n"
                 "<tool_call>\n<function=get_weather>\n<parameter=city>\nLine one\nline two\n</parameter>\n</function>\n</tool_call>",
                 "I'll check.",
                 {{"get_weather", R"({"city":"San Francisco, CA","days":3,"zip":"94103"})"},
                  {"get_weather", R"({"city":"Line one\nline two"})"}});
}

// Functionary v3.2: recipient segments after the prompt's ">>>" (the model
// card's and llama.cpp's examples).
TEST(ToolFormatFunctionary, CallRightAway) {
  expect_message(opts("functionary"), "get_current_weather\n{\"location\": \"Istanbul\", \"unit\": \"celsius\"}", "",
                 {{"get_current_weather", R"({"location":"Istanbul","unit":"celsius"})"}});
}

TEST(ToolFormatFunctionary, TextThenParallelCalls) {
  expect_message(opts("functionary"),
                 "all\nLet me check both cities.>>>get_weather\n{\"city\": \"Paris\"}>>>get_weather\n{\"city\": \"Rome\"}",
                 "Let me check both cities.", {{"get_weather", R"({"city":"Paris"})"}, {"get_weather", R"({"city":"Rome"})"}});
}

TEST(ToolFormatFunctionary, TextOnly) {
  expect_message(opts("functionary"), "all\nHello, world!\nWhat's up?", "Hello, world!\nWhat's up?", {});
  // A model that skips the recipient: its text is content as written.
  expect_message(opts("functionary"), "Hello there, how are you?", "Hello there, how are you?", {});
}

TEST(ToolFormatFunctionary, BrokenArgumentsAreText) {
  expect_message(opts("functionary"), "all\nOk.>>>get_weather\n{\"city\": ", "Ok.get_weather\n{\"city\": ", {});
}

TEST(ToolFormatDetect, FromTemplates) {
  EXPECT_EQ(detect_template_traits("{{ '<tool_call>\n<function=' + name + '>\n<parameter=' }}").format, "qwen3_coder");
  EXPECT_EQ(detect_template_traits("{{ '<tool_call>' }}{% if tools %}{% endif %}<think>").format, "hermes");
  EXPECT_TRUE(detect_template_traits("<think>").think_tags);
  EXPECT_EQ(detect_template_traits("<|start_header_id|>ipython<|end_header_id|>").format, "llama3");
  EXPECT_EQ(detect_template_traits("[TOOL_CALLS]").format, "mistral");
  EXPECT_EQ(detect_template_traits("<｜tool▁calls▁begin｜>").format, "deepseek");
  EXPECT_EQ(detect_template_traits("<|channel|>analysis<|message|>").format, "harmony");
  EXPECT_EQ(detect_template_traits("<|tool_call|>").format, "granite");
  EXPECT_EQ(detect_template_traits("Respond in this format:\n>>>${recipient}\n${content} {{ '>>>all\n' + c }}").format,
            "functionary");
  EXPECT_EQ(detect_template_traits("{{ '<|user|>' }}").format, "hermes");
  EXPECT_FALSE(detect_template_traits("{{ '<|user|>' }}").renders_tools);
}

}  // namespace
}  // namespace cortex::chat
