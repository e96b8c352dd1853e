// format: date accepts exactly the RFC 3339 full-dates (issue 27, item 8):
// every string YYYY-MM-DD of the years 1999-2001 (and the century years
// that test the leap rule) is checked against a calendar computed here.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"

namespace cortex {
namespace {

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int days_in(int y, int m) {
  static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

TEST(JsonSchemaDate, AcceptsExactlyTheValidDates) {
  auto gbnf = json_schema_to_gbnf(R"({"type": "string", "format": "date"})");
  ASSERT_TRUE(gbnf) << gbnf.error().message;
  auto g = grammar::compile(*gbnf);
  ASSERT_TRUE(g) << g.error().message;
  grammar_matcher m(*g);
  int n_valid = 0;
  for (int y : {1999, 2000, 2001, 1900, 2100, 2400, 1600, 4, 1, 5000, 1000}) {
    for (int mo = 0; mo <= 13; ++mo) {
      for (int d = 0; d <= 32; ++d) {
        char doc[32];
        std::snprintf(doc, sizeof doc, "\"%04d-%02d-%02d\"", y, mo, d);
        const bool valid = mo >= 1 && mo <= 12 && d >= 1 && d <= days_in(y, mo);
        grammar_matcher::state s = m.initial();
        const bool ok = m.advance(s, doc) && grammar_matcher::is_complete(s);
        EXPECT_EQ(ok, valid) << doc;
        n_valid += valid;
      }
    }
  }
  EXPECT_EQ(n_valid, 365 + 366 + 365 + 365 + 365 + 366 + 366 + 366 + 365 + 365 + 365);
  for (const char* bad : {"\"0000-01-01\"", "\"5000-02-30\"", "\"1000-02-30\"", "\"1900-02-29\"", "\"2023-02-29\""}) {
    grammar_matcher::state s = m.initial();
    EXPECT_FALSE(m.advance(s, bad) && grammar_matcher::is_complete(s)) << bad;
  }
}

TEST(JsonSchemaDate, DateTimeUsesTheSameDates) {
  auto gbnf = json_schema_to_gbnf(R"({"type": "string", "format": "date-time"})");
  ASSERT_TRUE(gbnf);
  auto g = grammar::compile(*gbnf);
  ASSERT_TRUE(g);
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  EXPECT_TRUE(m.advance(s, "\"2000-02-29T12:00:00Z\"") && grammar_matcher::is_complete(s));
  s = m.initial();
  EXPECT_FALSE(m.advance(s, "\"2001-02-29T12:00:00Z\""));
}

TEST(JsonSchemaDate, FormatsTheGrammarCannotHoldAreRefused) {
  for (const char* schema : {R"({"type": "integer", "format": "int32"})", R"({"type": "number", "format": "float"})",
                             R"({"type": "object", "format": "date"})", R"({"type": "string", "format": "email"})",
                             R"({"type": "string", "format": "uri"})"}) {
    auto g = json_schema_to_gbnf(schema);
    EXPECT_FALSE(g) << schema;
    if (!g) {
      EXPECT_NE(g.error().message.find("format"), std::string::npos) << g.error().message;
    }
  }
}

}  // namespace
}  // namespace cortex
