// Composing grammars (grammar/gbnf_compose.hpp): prefixed rule names keep
// the language; text up to a marker is any text without it, then the rest.
#include <gtest/gtest.h>

#include "grammar/gbnf_compose.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"

namespace cortex {
namespace {

bool accepts(const std::string& gbnf, const std::string& doc, bool* viable = nullptr) {
  auto g = grammar::compile(gbnf);
  EXPECT_TRUE(g) << g.error().message << "\n" << gbnf;
  if (!g) return false;
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  const bool ok = m.advance(s, doc);
  if (viable) *viable = ok;
  return ok && grammar_matcher::is_complete(s);
}

TEST(GbnfCompose, PrefixedSchemaGrammarKeepsItsLanguage) {
  auto g = json_schema_to_gbnf(R"({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]{2}$"}}, "required": ["a"]})");
  ASSERT_TRUE(g);
  const std::string p = "root ::= x-root\n" + gbnf_prefix_rules(*g, "x-");
  EXPECT_TRUE(accepts(p, R"({"a": "ok"})"));
  EXPECT_FALSE(accepts(p, R"({"a": "okk"})"));
}

TEST(GbnfCompose, TextUntilMarker) {
  const std::string g = "root ::= f-0\n" + gbnf_text_until("<tool_call>", "f-", "\"{}\"", true);
  EXPECT_TRUE(accepts(g, ""));
  EXPECT_TRUE(accepts(g, "plain text with < and <tool and <tool_cal> tags"));
  EXPECT_TRUE(accepts(g, "text <<tool_call>{}"));
  bool viable = true;
  EXPECT_FALSE(accepts(g, "a <tool_call>x", &viable));
  EXPECT_FALSE(viable);
  EXPECT_FALSE(accepts(g, "a <tool_call>"));  // the marker commits to what follows
  std::string long_text(20000, 'a');
  EXPECT_TRUE(accepts(g, long_text + "<tool_call>{}"));
  // Markers with repeated prefixes and multi-byte characters.
  const std::string g2 = "root ::= f-0\n" + gbnf_text_until("aab", "f-", "\"!\"", false);
  EXPECT_TRUE(accepts(g2, "abaaab!"));
  EXPECT_FALSE(accepts(g2, "abaa"));
  const std::string g3 = "root ::= f-0\n" + gbnf_text_until("<｜tool▁calls▁begin｜>", "f-", "\"X\"", true);
  EXPECT_TRUE(accepts(g3, "héllo <｜tool <｜tool▁calls▁begin｜>X"));
}

}  // namespace
}  // namespace cortex
