// `params.grammar` and `params.json_schema` of a submit (structured output,
// messages/wire/submit_decode.cpp): GBNF text passes through; a schema map
// becomes JSON text in the client's key order (properties are generated in
// that order); wrong types are 400s naming the field. Expected values by hand.
#include <gtest/gtest.h>

#include "messages/wire/client_decode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::decode;
using test::envelope;
using test::mp;

mp submit_with(mp params) { return envelope("submit", {{"id", "g"}, {"prompt", "x"}, {"params", std::move(params)}}); }

TEST(wire_structured_params, grammar_and_schema_are_read) {
  decode_result d = decode(submit_with(mp::map({{"grammar", "root ::= \"a\""}})));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.params.grammar, "root ::= \"a\"");
  EXPECT_EQ(d.request.params.json_schema, "");
  mp schema = mp::map({{"type", "object"},
                       {"properties", mp::map({{"z", mp::map({{"type", "integer"}})}, {"a", mp::map({{"enum", mp::arr({1, "b"})}})}})},
                       {"required", mp::arr({"z"})}});
  d = decode(submit_with(mp::map({{"json_schema", schema}})));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.params.json_schema,
            R"({"type":"object","properties":{"z":{"type":"integer"},"a":{"enum":[1,"b"]}},"required":["z"]})");
  d = decode(submit_with(mp::map({{"json_schema", mp::nil()}, {"grammar", mp::nil()}})));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_TRUE(d.request.params.grammar.empty());
  EXPECT_TRUE(d.ignored.empty());
}

TEST(wire_structured_params, wrong_types_name_the_field) {
  decode_result d = decode(submit_with(mp::map({{"grammar", 5}})));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error.code, errc::malformed);
  EXPECT_NE(d.error.message.find("params.grammar"), std::string::npos) << d.error.message;
  d = decode(submit_with(mp::map({{"json_schema", "{\"type\": \"string\"}"}})));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error.message.find("params.json_schema"), std::string::npos) << d.error.message;
  EXPECT_NE(d.error.message.find("a map (a JSON Schema)"), std::string::npos) << d.error.message;
}

}  // namespace
}  // namespace cortex::wire
