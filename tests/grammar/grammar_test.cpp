// GBNF grammars (grammar/grammar.hpp) and the byte matcher: per
// construct, strings the grammar's language contains (accepted), viable
// prefixes (not yet complete) and strings it rejects, all written by hand
// from the construct's meaning; then the parser's errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.hpp"
#include "grammar/grammar_matcher.hpp"

namespace cortex {
namespace {

enum class verdict { accepted, prefix, rejected };

verdict judge(const std::string& gbnf, const std::string& text) {
  auto g = grammar::compile(gbnf);
  EXPECT_TRUE(g) << g.error().message;
  if (!g) return verdict::rejected;
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  if (!m.advance(s, text)) return verdict::rejected;
  return grammar_matcher::is_complete(s) ? verdict::accepted : verdict::prefix;
}

struct grammar_case {
  const char* construct;
  const char* gbnf;
  std::vector<std::string> accepted, prefixes, rejected;
};

const std::vector<grammar_case>& cases() {
  static const std::vector<grammar_case> k = {
      {"literal", R"(root ::= "abc")", {"abc"}, {"", "a", "ab"}, {"abd", "abcd", "b"}},
      {"escapes", R"(root ::= "a\n\t\"\\\x41\u00e9")", {"a\n\t\"\\A\xc3\xa9"}, {"a\n"}, {"a\\n"}},
      {"sequence of rules", "root ::= a b\na ::= \"x\"\nb ::= \"y\"", {"xy"}, {"x"}, {"yx", "xyy"}},
      {"alternation", R"(root ::= "cat" | "car" | "dog")", {"cat", "car", "dog"}, {"ca", "d"}, {"cab", "cats", "do g"}},
      {"empty alternative", R"(root ::= "a" | )", {"", "a"}, {}, {"b", "aa"}},
      {"group", R"(root ::= "a" ("b" | "c") "d")", {"abd", "acd"}, {"ab"}, {"ad", "abcd"}},
      {"nested groups", R"(root ::= (("a" | "b") ("c" | ("d" "e"))))", {"ac", "bde"}, {"bd"}, {"ace", "bc e"}},
      {"class", R"(root ::= [a-c0-9_])", {"a", "b", "c", "0", "9", "_"}, {""}, {"d", "A", "-", "ab"}},
      {"negated class", R"(root ::= [^a-c"])", {"d", "z", "\xc3\xa9", "-"}, {""}, {"a", "b", "\"", "dd"}},
      {"class escapes", R"(root ::= [\]\-\\\x00-\x1f])", {"]", "-", "\\", std::string(1, '\0'), "\x1f"}, {}, {" ", "a"}},
      {"any", R"(root ::= "<" . ">")", {"<a>", "<\xe2\x82\xac>", "<>>"}, {"<", "<a", "<>"}, {"<ab>", "a"}},
      {"star", R"(root ::= "a"*)", {"", "a", "aaaa"}, {}, {"b", "aab"}},
      {"plus", R"(root ::= [0-9]+ "!")", {"1!", "123!"}, {"1", "12"}, {"!", "1a"}},
      {"optional", R"(root ::= "-"? [0-9])", {"1", "-1"}, {"-"}, {"--1", "11"}},
      {"exactly m", R"(root ::= "ab"{2})", {"abab"}, {"aba"}, {"ab" "ab" "ab", "abb"}},
      {"at least m", R"(root ::= [x]{2,})", {"xx", "xxxxx"}, {"x"}, {"xy"}},
      {"between m and n", R"(root ::= [x]{1,3} ";")", {"x;", "xxx;"}, {"xxx"}, {";", "xxxx"}},
      {"zero to n", R"(root ::= "a"{0,2} "b")", {"b", "ab", "aab"}, {"aa"}, {"aaab"}},
      {"repeated group", R"(root ::= ("ab" | "c"){2,3})", {"abc", "cc", "ababc"}, {"c", "ab", "a"}, {"ccab" "c", "b"}},
      {"right recursion", "root ::= \"(\" root \")\" | \"x\"", {"x", "((x))"}, {"((", "((x)"}, {"(x))", "()"}},
      {"multi-line rule", "root ::= \"a\"\n   \"b\"\n   | \"c\"\n# comment\nother ::= \"z\"", {"ab", "c"}, {"a"}, {"z", "ac"}},
      {"comments", "root ::= \"a\" # a letter\n  # more\n", {"a"}, {}, {"b"}},
      {"utf-8 literal", R"(root ::= "héllo")", {"h\xc3\xa9llo"}, {"h\xc3", "h\xc3\xa9"}, {"hello", "h\xc3\xa8"}},
      {"utf-8 class", R"(root ::= [à-ÿ]+)", {"\xc3\xa0", "\xc3\xbf\xc3\xa9"}, {"\xc3"}, {"a", "\xc4\x80", "\xc2"}},
      {"4-byte", R"(root ::= [\U0001F600-\U0001F64F])", {"\xf0\x9f\x98\x80"}, {"\xf0", "\xf0\x9f\x98"}, {"\xf0\x9f\x9a\x80", "\xe2"}},
      {"invalid utf-8", R"(root ::= .*)", {"", "a\xc3\xa9"}, {"\xe2\x82"}, {"\xc0\x80", "\xed\xa0\x80", "\xf5", "\x80", "\xe0\x80"}},
      {"json-ish", "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\npair ::= str \":\" ws str ws\n"
                   "str ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\nws ::= [ ]?",
       {"{}", "{\"a\":\"b\"}", "{ \"a\": \"b\" ,\"c\":\"\"}"}, {"{\"a", "{\"a\":"}, {"{,}", "{\"a\"}", "{\"a\":\"b\",}"}},
  };
  return k;
}

TEST(Grammar, AcceptsAndRejectsPerConstruct) {
  for (const auto& c : cases()) {
    for (const auto& s : c.accepted) EXPECT_EQ(judge(c.gbnf, s), verdict::accepted) << c.construct << ": '" << s << "'";
    for (const auto& s : c.prefixes) EXPECT_EQ(judge(c.gbnf, s), verdict::prefix) << c.construct << ": '" << s << "'";
    for (const auto& s : c.rejected) EXPECT_EQ(judge(c.gbnf, s), verdict::rejected) << c.construct << ": '" << s << "'";
  }
}

TEST(Grammar, AdvanceLeavesTheStateAloneOnRejection) {
  auto g = grammar::compile(R"(root ::= "ab")");
  ASSERT_TRUE(g);
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  ASSERT_TRUE(m.advance(s, "a"));
  const grammar_matcher::state before = s;
  EXPECT_FALSE(m.advance(s, "c"));
  EXPECT_TRUE(s == before);
  EXPECT_TRUE(m.advance(s, "b"));
  EXPECT_TRUE(grammar_matcher::is_complete(s));
}

TEST(Grammar, ByteAtATimeEqualsWholeString) {
  auto g = grammar::compile("root ::= (\"ab\" | [a-z] \"c\")+");
  ASSERT_TRUE(g);
  grammar_matcher m(*g);
  grammar_matcher::state whole = m.initial(), step = m.initial();
  const std::string text = "abxcab";
  ASSERT_TRUE(m.advance(whole, text));
  for (char ch : text) ASSERT_TRUE(m.advance(step, std::string(1, ch)));
  EXPECT_TRUE(whole == step);
}

std::string compile_error(const std::string& gbnf) {
  auto g = grammar::compile(gbnf);
  EXPECT_FALSE(g) << gbnf;
  return g ? std::string() : g.error().message;
}

TEST(Grammar, ErrorsNameWhatToFix) {
  EXPECT_NE(compile_error("a ::= \"x\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(compile_error("root ::= a").find("rule 'a' is used but never defined"), std::string::npos);
  EXPECT_NE(compile_error("root ::= root \"x\" | \"y\"").find("'root' is left-recursive"), std::string::npos);
  EXPECT_NE(compile_error("root ::= a\na ::= b? a \"x\"\nb ::= \"y\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"abc").find("line 1, column 14: unterminated string literal"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"\nx ::= [a-").find("line 2"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"\\q\"").find("unknown escape '\\q'"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"{3,1}").find("n < m"), std::string::npos);
  EXPECT_NE(compile_error("root ::= *").find("repeats nothing"), std::string::npos);
  EXPECT_NE(compile_error("root ::= [z-a]").find("upper end below"), std::string::npos);
  EXPECT_NE(compile_error("root ::= []").find("empty character class"), std::string::npos);
  EXPECT_NE(compile_error("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\" x ::= \"b\"").find("expected a newline before rule 'x'"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"{99999}").find("repetition count above"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"" + std::string(200, 'a') + "\"{9999}").find("too large"), std::string::npos);
  EXPECT_NE(compile_error("root ::= @").find("unexpected character '@'"), std::string::npos);
}

}  // namespace
}  // namespace cortex
