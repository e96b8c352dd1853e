// Forced-call grammars (chat/tool_grammar.hpp): in each family's syntax, a
// call the family's model would write is in the grammar's language and
// parses back to that call; arguments off the schema are not.
#include <gtest/gtest.h>

#include "chat/output_parser.hpp"
#include "chat/tool_grammar.hpp"
#include "grammar/grammar_matcher.hpp"

namespace cortex::chat {
namespace {

const nlohmann::ordered_json k_tools = nlohmann::ordered_json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                   "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}])");

bool accepts(const std::string& gbnf, const std::string& text) {
  auto g = grammar::compile(gbnf);
  EXPECT_TRUE(g) << g.error().message << "\n" << gbnf;
  if (!g) return false;
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  return m.advance(s, text) && grammar_matcher::is_complete(s);
}

std::string gbnf_of(const std::string& family, tool_choice_mode mode, const std::string& only = "", bool parallel = true) {
  auto f = make_tool_format(family);
  auto g = tool_call_gbnf(*f, k_tools, mode, only, parallel);
  EXPECT_TRUE(g) << g.error().message;
  return g ? *g : std::string();
}

void expect_call(const std::string& family, const std::string& text, const std::string& name, const std::string& args) {
  output_options o;
  o.format = family;
  o.parse_tool_calls = true;
  auto r = parse_output(o, text);
  ASSERT_EQ(r.tool_calls.size(), 1u) << text;
  EXPECT_EQ(r.tool_calls[0].name, name);
  EXPECT_EQ(r.tool_calls[0].arguments, args);
}

TEST(ToolGrammar, RequiredInEachFamilySyntax) {
  const struct {
    const char* family;
    std::string text;
  } cases[] = {
      {"hermes", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"},
      {"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}"},
      {"mistral", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]"},
      {"deepseek", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", "
                   "\"days\": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {"harmony", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": 3}"},
      {"granite", "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]"},
      {"functionary", "get_weather\n{\"city\": \"Paris\", \"days\": 3}"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.family);
    const std::string g = gbnf_of(c.family, tool_choice_mode::required);
    EXPECT_TRUE(accepts(g, c.text));
    expect_call(c.family, c.text, "get_weather", R"({"city":"Paris","days":3})");
    std::string off_schema = c.text;
    off_schema.replace(off_schema.find("3}"), 1, "9");  // days beyond maximum
    EXPECT_FALSE(accepts(g, off_schema));
    EXPECT_FALSE(accepts(g, "Sure! " + c.text));  // required: a call from the first byte
  }
}

TEST(ToolGrammar, Qwen3CoderParametersFromTheSchema) {
  const std::string g = gbnf_of("qwen3_coder", tool_choice_mode::required);
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
      "</function>\n</tool_call>";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, "<tool_call>\n<function=get_weather>\n<parameter=city>\nx\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=get_weather>\n<parameter=city>\nx\n</parameter>\n<parameter=days>\n9\n"
                          "</parameter>\n</function>\n</tool_call>"));
  output_options o;
  o.format = "qwen3_coder";
  o.parse_tool_calls = true;
  o.tools_json = k_tools.dump();
  auto r = parse_output(o, call);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"city":"New York","days":3})");
}

TEST(ToolGrammar, NamedAllowsOnlyThatTool) {
  const std::string g = gbnf_of("hermes", tool_choice_mode::named, "get_time");
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>"));
  auto f = make_tool_format("hermes");
  EXPECT_FALSE(tool_call_gbnf(*f, k_tools, tool_choice_mode::named, "nope", true));
}

TEST(ToolGrammar, AutoIsFreeUntilTheOpener) {
  const std::string g = gbnf_of("hermes", tool_choice_mode::auto_);
  EXPECT_TRUE(accepts(g, "Just text, no call."));
  EXPECT_TRUE(accepts(g, "Let me check.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "Let me check.\n<tool_call>\n{\"name\": \"nope\"}"));
  EXPECT_EQ(gbnf_of("llama3", tool_choice_mode::auto_), "");  // no mid-text opener: free
}

TEST(ToolGrammar, ParallelCalls) {
  const std::string g = gbnf_of("hermes", tool_choice_mode::required);
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
                         "\"get_time\", \"arguments\": {}}\n</tool_call>"));
  const std::string one = gbnf_of("hermes", tool_choice_mode::required, "", false);
  EXPECT_FALSE(accepts(one, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
                            "\"get_time\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ToolGrammar, AfterThinkBlock) {
  const std::string g = wrap_after_think(gbnf_of("hermes", tool_choice_mode::required));
  EXPECT_TRUE(accepts(g, "I need the time.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "I need the time."));
}

TEST(ToolGrammar, BadSchemaIsNamed) {
  auto tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}}}])");
  auto f = make_tool_format("hermes");
  auto g = tool_call_gbnf(*f, tools, tool_choice_mode::required, "", true);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("tools[0].function.parameters"), std::string::npos) << g.error().message;
}

}  // namespace
}  // namespace cortex::chat
