// JSON Schema -> GBNF (grammar/json_schema.hpp): documents written by
// hand from each schema's meaning must be accepted or rejected by the
// grammar; unsupported keywords are errors naming them. (The e2e test
// tests/e2e/test_structured_output.py validates generated documents with
// Python's jsonschema.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/json_schema_parts.hpp"

namespace cortex {
namespace {

bool accepts(const std::string& gbnf, const std::string& doc) {
  auto g = grammar::compile(gbnf);
  EXPECT_TRUE(g) << g.error().message << "\n" << gbnf;
  if (!g) return false;
  grammar_matcher m(*g);
  grammar_matcher::state s = m.initial();
  return m.advance(s, doc) && grammar_matcher::is_complete(s);
}

struct schema_case {
  const char* what;
  const char* schema;
  std::vector<std::string> valid, invalid;
};

TEST(JsonSchema, GeneratesExactlyTheDocumentsOfTheSubset) {
  const std::vector<schema_case> cases = {
      {"string", R"({"type": "string"})", {R"("")", R"("a\"b\\c\u00e9")", "\"h\xc3\xa9\""}, {"a", R"("a)", "\"a\nb\""}},
      {"integer", R"({"type": "integer"})", {"0", "-12", "123456"}, {"01", "1.5", "-", "+1"}},
      {"number", R"({"type": "number"})", {"0", "-1.25", "3e10", "1.5E-3"}, {".5", "1.", "--1"}},
      {"boolean/null", R"({"type": ["boolean", "null"]})", {"true", "false", "null"}, {"True", "0"}},
      {"enum", R"({"enum": ["red", "green", 3, null]})", {R"("red")", R"("green")", "3", "null"}, {R"("blue")", "4"}},
      {"const", R"({"const": {"a": [1, 2]}})", {R"({"a":[1,2]})"}, {R"({"a": [1, 2]})", "{}"}},
      {"object required/optional", R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
         "c": {"type": "boolean"}}, "required": ["b"], "additionalProperties": false})",
       {R"({"b": "x"})", R"({"a": 1, "b": "x"})", R"({"b": "x", "c": true})", R"({ "a" : 1 , "b" : "" , "c" : false })",
        "{\n  \"a\": 1,\n\t\"b\": \"x\"\n}"},
       {"{}", R"({"a": 1})", R"({"b": "x", "a": 1})", R"({"b": "x",})", R"({"b": "x", "d": 1})", R"({"b": 1})"}},
      {"all optional", R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})",
       {"{}", R"({"a": 1})", R"({"b": 2})", R"({"a": 1, "b": 2})"}, {R"({,"b": 2})", R"({"b": 2, "a": 1})"}},
      {"nested", R"({"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": "array",
         "items": {"type": "integer"}}}, "required": ["q"]}}, "required": ["p"]})",
       {R"({"p": {"q": []}})", R"({"p": {"q": [1, -2, 3]}})"}, {R"({"p": {}})", R"({"p": {"q": ["x"]}})"}},
      {"array bounds", R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})",
       {"[true, false]", "[true,true,false]"}, {"[]", "[true]", "[true, true, true, true]"}},
      {"empty array only", R"({"type": "array", "maxItems": 0})", {"[]", "[ ]"}, {"[1]"}},
      {"string length", R"({"type": "string", "minLength": 2, "maxLength": 3})", {R"("ab")", R"("a\nc")", "\"\xc3\xa9\xc3\xa9\""}, {R"("a")", R"("abcd")"}},
      {"pattern", R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})", {R"("AB-123")"}, {R"("ab-123")", R"("AB-12")", R"("AB-1234")"}},
      {"pattern alternation", R"({"type": "string", "pattern": "^(cat|dog)s?$"})", {R"("cat")", R"("dogs")"}, {R"("cow")"}},
      {"pattern quote", R"({"type": "string", "pattern": "^a\"b.c$"})", {R"("a\"bxc")"}, {R"("a"bxc")", R"("a\"b\"c")"}},
      {"format date", R"({"type": "string", "format": "date"})", {R"("2024-02-29")"}, {R"("2024-13-01")", R"("24-01-01")"}},
      {"format uuid", R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123")"}},
      {"integer range", R"({"type": "integer", "minimum": -15, "maximum": 237})",
       {"-15", "-9", "0", "9", "10", "99", "100", "199", "230", "237"}, {"-16", "-20", "238", "240", "300", "1000"}},
      {"integer exclusive", R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})", {"1", "9"}, {"0", "10", "-1"}},
      {"integer lower bound only", R"({"type": "integer", "minimum": 18})", {"18", "99", "100", "123456"}, {"17", "5", "-1"}},
      {"number range", R"({"type": "number", "minimum": 0.5, "maximum": 2})", {"1", "2", "1.75"}, {"0", "2.5", "-1", "2.1"}},
      {"number exclusive max", R"({"type": "number", "exclusiveMaximum": 0})", {"-1", "-0.5", "-12.25"}, {"0", "1", "0.5"}},
      {"anyOf", R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})", {"1", R"("a")"}, {R"("ab")", "true"}},
      {"ref", R"({"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
         "type": "array", "items": {"$ref": "#/$defs/pt"}})", {R"([{"x": 1}, {"x": 2}])"}, {R"([{"y": 1}])"}},
      {"recursive ref", R"({"definitions": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
         "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}, "required": ["v"]}}, "$ref": "#/definitions/node"})",
       {R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"}, {R"({"v": 1, "kids": [{}]})"}},
      {"map", R"({"type": "object", "additionalProperties": {"type": "integer"}})", {"{}", R"({"a": 1, "b": 2})"}, {R"({"a": "x"})"}},
      {"any object", R"({"type": "object"})", {"{}", R"({"a": [1, {"b": null}]})"}, {"[]", "1"}},
      {"any value", "{}", {"1", "[]", R"({"a": "b"})", R"("s")"}, {"nul", "[1,]"}},
  };
  for (const auto& c : cases) {
    auto gbnf = json_schema_to_gbnf(c.schema);
    ASSERT_TRUE(gbnf) << c.what << ": " << gbnf.error().message;
    for (const auto& d : c.valid) EXPECT_TRUE(accepts(*gbnf, d)) << c.what << ": " << d << "\n" << *gbnf;
    for (const auto& d : c.invalid) EXPECT_FALSE(accepts(*gbnf, d)) << c.what << ": " << d << "\n" << *gbnf;
  }
}

TEST(JsonSchema, WhitespaceIsBoundedAndNothingFollowsTheDocument) {
  auto gbnf = json_schema_to_gbnf(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  ASSERT_TRUE(gbnf);
  EXPECT_TRUE(accepts(*gbnf, "{ }"));
  EXPECT_FALSE(accepts(*gbnf, "{  }"));
  EXPECT_TRUE(accepts(*gbnf, "{\n" + std::string(6, ' ') + "}"));
  EXPECT_FALSE(accepts(*gbnf, "{\n" + std::string(7, ' ') + "}"));
  EXPECT_FALSE(accepts(*gbnf, "{} "));
  EXPECT_FALSE(accepts(*gbnf, "{}\n"));
}

TEST(JsonSchema, IntegerRangesAreExact) {
  // Every integer in [lo, hi] and none outside, checked one by one.
  for (auto [lo, hi] : {std::pair<int, int>{0, 0}, {0, 9}, {3, 1234}, {-57, 13}, {-1000, -1}, {99, 101}}) {
    const std::string schema = R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
    auto gbnf = json_schema_to_gbnf(schema);
    ASSERT_TRUE(gbnf) << gbnf.error().message;
    auto g = grammar::compile(*gbnf);
    ASSERT_TRUE(g) << g.error().message;
    grammar_matcher m(*g);
    for (int v = lo - 30; v <= hi + 30; ++v) {
      grammar_matcher::state s = m.initial();
      const bool ok = m.advance(s, std::to_string(v)) && grammar_matcher::is_complete(s);
      EXPECT_EQ(ok, v >= lo && v <= hi) << schema << " value " << v;
    }
  }
}

std::string schema_error(const std::string& schema) {
  auto g = json_schema_to_gbnf(schema);
  EXPECT_FALSE(g) << schema;
  return g ? std::string() : g.error().message;
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_NE(schema_error(R"({"type": "array", "uniqueItems": true})").find("keyword 'uniqueItems' at # is not supported"), std::string::npos);
  EXPECT_NE(schema_error(R"({"properties": {"a": {"type": "number", "multipleOf": 2}}})")
                .find("keyword 'multipleOf' at #/properties/a"), std::string::npos);
  EXPECT_NE(schema_error(R"({"allOf": [{}]})").find("'allOf'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "string", "pattern": "(?=a)b"})").find("lookaround"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "string", "pattern": "(a)\\1"})").find("escape '\\1'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "string", "format": "email"})").find("format 'email'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref": "http://x/y"})").find("not local"), std::string::npos);
  EXPECT_NE(schema_error(R"({"$ref": "#/$defs/none"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(schema_error(R"({"properties": {"a": {}}, "required": ["b"]})").find("'b'"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("holds no integer"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "strin"})").find("type 'strin'"), std::string::npos);
  EXPECT_NE(schema_error("{\"type\": ").find("not valid JSON"), std::string::npos);
}

TEST(JsonSchema, LeftRecursiveRefsFailToCompile) {
  auto gbnf = json_schema_to_gbnf(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})");
  ASSERT_TRUE(gbnf);
  auto g = grammar::compile(*gbnf);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("left-recursive"), std::string::npos);
}

TEST(JsonSchema, ObjectGrammarAcceptsAnyObject) {
  EXPECT_TRUE(accepts(json_object_gbnf(), R"({"a": {"b": [1, "x", null, true]}})"));
  EXPECT_FALSE(accepts(json_object_gbnf(), "[1]"));
}

}  // namespace
}  // namespace cortex
