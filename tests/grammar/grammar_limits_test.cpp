// Bounded work in the grammar compiler (grammar/), as protocol.md's
// "cost before checks" asks of everything a request carries: grammars and
// schemas of the sizes a request may hold compile in time linear in their
// size, without deep recursion, and character classes of any size match
// by their ranges. Each case here was quadratic or recursed once per rule
// before (a 6 MB chain of rules took minutes, or overflowed the stack).
// The class cases are also a property test: random classes (overlapping,
// adjacent, negated) against membership worked out from their ranges.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"
#include "text/unicode.hpp"

namespace cortex {
namespace {

constexpr int chain = 150000;  // rules: 750k elements at most, under grammar::max_elements

std::string hex8(uint32_t c) {
  char b[16];
  std::snprintf(b, sizeof b, "\\U%08X", c);
  return b;
}

bool surrogate(uint32_t c) { return c >= 0xD800 && c <= 0xDFFF; }

// a_i ::= a_{i+1} <tail>, the last one `last`: every link is a left edge.
std::string rule_chain(int n, const std::string& tail, const std::string& last) {
  std::string g = "root ::= a0 \"y\"\n";
  for (int i = 0; i < n; ++i) g += "a" + std::to_string(i) + " ::= a" + std::to_string(i + 1) + tail + "\n";
  g += "a" + std::to_string(n) + " ::= " + last + "\n";
  return g;
}

TEST(GrammarLimits, NullableChainCompilesInLinearTime) {
  // a0 -> a1 -> ... -> aN, only aN nullable by itself: finding a0 nullable
  // by repeated passes took one pass per rule.
  auto g = grammar::compile(rule_chain(chain, "", "\"x\"?"));
  ASSERT_TRUE(g) << g.error().message;
  // The same shape, short, means what it says: a0 is "x" or "".
  auto small = grammar::compile(rule_chain(5, "", "\"x\"?"));
  ASSERT_TRUE(small) << small.error().message;
  grammar_matcher m(*small);
  for (const char* text : {"y", "xy"}) {
    grammar_matcher::state s = m.initial();
    EXPECT_TRUE(m.advance(s, text) && grammar_matcher::is_complete(s)) << text;
  }
  grammar_matcher::state s = m.initial();
  EXPECT_FALSE(m.advance(s, "xx"));
}

TEST(GrammarLimits, LongLeftChainNeedsNoDeepRecursion) {
  // The left-recursion search follows a0 -> a1 -> ... 150k deep; a
  // recursive search overflowed the stack here.
  auto g = grammar::compile(rule_chain(chain, " \"x\"", "\"x\""));
  ASSERT_TRUE(g) << g.error().message;
  // The cycle closing such a chain is still found, and named.
  auto bad = grammar::compile(rule_chain(chain, " \"x\"", "a0 \"x\""));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("left-recursive"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(grammar::compile(rule_chain(3, "", "a1 | \"x\"")));  // through nullable rules too
}

// Random classes: ranges in random order, overlapping, nested, adjacent
// and single code points, plain or negated; membership is worked out from
// the ranges themselves, for whole characters and for the first byte of a
// multi-byte one (viable iff some completion is a member).
TEST(GrammarLimits, ClassesMatchAsTheirRanges) {
  std::mt19937 rng(20261127);
  int checked = 0;
  for (int round = 0; round < 60; ++round) {
    const bool negated = round % 2 == 1;
    const int n = 1 + static_cast<int>(rng() % (round < 30 ? 6 : 200));
    // Mostly small code points so ranges meet; some anywhere.
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    for (int i = 0; i < n; ++i) {
      const uint32_t span = rng() % 4 == 0 ? 0x10FFFF : 0x900;
      uint32_t a = 1 + rng() % span, b = a + (rng() % 3 == 0 ? 0 : rng() % 64);
      b = std::min<uint32_t>(b, 0x10FFFF);
      if (surrogate(a) || surrogate(b) || (a < 0xD800 && b > 0xDFFF)) continue;
      ranges.emplace_back(a, b);
    }
    if (ranges.empty()) continue;
    std::string cls = negated ? "[^" : "[";
    for (const auto& [a, b] : ranges) cls += a == b ? hex8(a) : hex8(a) + "-" + hex8(b);
    cls += "]";
    auto g = grammar::compile("root ::= " + cls);
    ASSERT_TRUE(g) << g.error().message;
    grammar_matcher m(*g);
    const auto member = [&](uint32_t c) {
      bool in = false;
      for (const auto& [a, b] : ranges) in = in || (a <= c && c <= b);
      return in != negated;
    };
    std::vector<uint32_t> probes;
    for (const auto& [a, b] : ranges) {
      for (uint32_t c : {a - 1, a, b, b + 1}) probes.push_back(c);
    }
    for (int i = 0; i < 300; ++i) probes.push_back(rng() % (rng() % 2 ? 0x1000 : 0x110000));
    for (uint32_t c : probes) {
      if (c == 0 || c > 0x10FFFF || surrogate(c)) continue;
      grammar_matcher::state s = m.initial();
      const bool ok = m.advance(s, unicode::cpt_to_utf8(c)) && grammar_matcher::is_complete(s);
      ASSERT_EQ(ok, member(c)) << cls << " U+" << std::hex << c;
      ++checked;
    }
    // Lead bytes of 2- and 3-byte characters: viable iff a completion is in.
    for (uint32_t lead = 0xC2; lead <= 0xEF; ++lead) {
      const int len = lead < 0xE0 ? 2 : 3;
      const uint32_t lo = len == 2 ? (lead & 0x1F) << 6 : std::max<uint32_t>((lead & 0x0F) << 12, 0x800);
      const uint32_t hi = len == 2 ? lo + 0x3F : ((lead & 0x0F) << 12) + 0xFFF;
      bool some = false;
      for (uint32_t c = lo; c <= hi && !some; ++c) some = !surrogate(c) && member(c);
      grammar_matcher::state s = m.initial();
      ASSERT_EQ(m.advance(s, std::string(1, static_cast<char>(lead))), some) << cls << " lead 0x" << std::hex << lead;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20000);
}

TEST(GrammarLimits, HugeNegatedClassMatchesByItsRanges) {
  // Every odd code point below 0x20000 excluded: 65536 entries. The
  // candidate walk over them was quadratic in the class's size per byte.
  std::string g = "root ::= [^";
  for (uint32_t c = 1; c < 0x20000; c += 2) {
    if (!surrogate(c)) g += hex8(c);
  }
  g += "]*";
  auto compiled = grammar::compile(g);
  ASSERT_TRUE(compiled) << compiled.error().message;
  grammar_matcher m(*compiled);
  grammar_matcher::state s = m.initial();
  std::string even;
  for (uint32_t c = 2; c < 0x1F000; c += 64) {
    if (!surrogate(c)) even += unicode::cpt_to_utf8(c);
  }
  EXPECT_TRUE(m.advance(s, even));
  EXPECT_FALSE(m.advance(s, unicode::cpt_to_utf8(0x1235)));
  EXPECT_TRUE(m.advance(s, unicode::cpt_to_utf8(0x1236)));
  EXPECT_TRUE(m.advance(s, unicode::cpt_to_utf8(0x30001)));  // past every listed one
}

TEST(GrammarLimits, SchemaRefChainIsBoundedByNesting) {
  // d0 -> d1 -> ... each a $ref, in groups of 1000 (objects hold at most
  // 1024 keys): a chain of refs is nesting, and a deep one is refused by
  // the depth cap (it recursed once per ref before, and overflowed).
  const int n = 100000;
  const auto def = [](int i) { return "g" + std::to_string(i / 1000) + "/d" + std::to_string(i); };
  std::string defs;
  for (int i = 0; i <= n; ++i) {
    if (i % 1000 == 0) defs += (i ? "}," : "") + ("\"g" + std::to_string(i / 1000) + "\":{");
    else defs += ",";
    const std::string d = def(i);
    defs += "\"" + d.substr(d.find('/') + 1) + "\":" +
            (i < n ? "{\"$ref\":\"#/$defs/" + def(i + 1) + "\"}" : std::string("{\"type\":\"integer\"}"));
  }
  defs += "}";
  auto g = json_schema_to_gbnf("{\"$defs\":{" + defs + "},\"$ref\":\"#/$defs/" + def(0) + "\"}");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("nested deeper"), std::string::npos) << g.error().message;
  // A short chain is fine.
  auto ok = json_schema_to_gbnf(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"integer"}},"$ref":"#/$defs/a"})");
  ASSERT_TRUE(ok) << ok.error().message;
  auto c = grammar::compile(*ok);
  ASSERT_TRUE(c) << c.error().message;
  grammar_matcher m(*c);
  grammar_matcher::state s = m.initial();
  EXPECT_TRUE(m.advance(s, "42") && grammar_matcher::is_complete(s));
}

TEST(GrammarLimits, ObjectsWithTooManyKeysAreRefusedBeforeParsing) {
  // The order-keeping JSON parse searches an object's keys linearly: 170k
  // keys in one object (1 MiB) cost minutes. Refused by a scan first.
  std::string props;
  for (int i = 0; i < 40000; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + "\":{\"type\":\"integer\"}");
  auto g = json_schema_to_gbnf("{\"type\":\"object\",\"properties\":{" + props + "}}");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("more than 1024 keys"), std::string::npos) << g.error().message;
  // 1000 optional properties are fine, and keep their order.
  props.clear();
  for (int i = 0; i < 1000; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + "\":{\"type\":\"integer\"}");
  auto ok = json_schema_to_gbnf("{\"type\":\"object\",\"properties\":{" + props + "},\"additionalProperties\":false}");
  ASSERT_TRUE(ok) << ok.error().message;
  auto c = grammar::compile(*ok);
  ASSERT_TRUE(c) << c.error().message;
  grammar_matcher m(*c);
  for (const char* text : {"{}", "{\"p7\":1,\"p999\":2}"}) {
    grammar_matcher::state s = m.initial();
    EXPECT_TRUE(m.advance(s, text) && grammar_matcher::is_complete(s)) << text;
  }
  grammar_matcher::state s = m.initial();
  EXPECT_FALSE(m.advance(s, "{\"p9\":1,\"p8\":2}"));
}

TEST(GrammarLimits, ManyRulesOfOneNameAreNamedInLinearTime) {
  // 4000 alternatives, each an object whose property "v" is an object:
  // 8000 rules named from "v" (v, v-2, v-3, ...), each distinct and each
  // the one its object refers to. Finding a free name scanned every
  // earlier one (quadratic); now a counter per name.
  std::string alts;
  for (int i = 0; i < 4000; ++i) {
    alts += (i ? "," : "") + std::string(R"({"type":"object","properties":{"v":{"type":"object","properties":{"w":{"type":"integer"}}}}})");
  }
  auto g = json_schema_to_gbnf("{\"anyOf\":[" + alts + "]}");
  ASSERT_TRUE(g) << g.error().message;
  auto c = grammar::compile(*g);
  ASSERT_TRUE(c) << c.error().message;
  grammar_matcher m(*c);
  grammar_matcher::state s = m.initial();
  EXPECT_TRUE(m.advance(s, R"({"v":{"w":3}})") && grammar_matcher::is_complete(s));
}

}  // namespace
}  // namespace cortex
