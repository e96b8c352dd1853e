// msgpack -> JSON for the chat fields (messages/wire/msgpack_json.hpp): every
// msgpack type turns into the JSON a client meant, key order kept; binary,
// bad UTF-8, non-finite floats and over-deep nesting are refused with the
// field path. Expected JSON texts are written by hand from the JSON grammar.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "messages/wire/msgpack_json.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::mp;

struct converted {
  bool ok = false;
  std::string json;  // compact dump when ok
  decode_result result;
};

converted convert(const mp& value, uint32_t max_depth = 16) {
  const std::vector<uint8_t> b = value.bytes();
  msgpack::object_handle h;
  std::string why;
  converted c;
  if (!unpack_bounded(b.data(), b.size(), 64, h, why)) {
    ADD_FAILURE() << "test value does not unpack: " << why;
    return c;
  }
  decode_limits lim;
  detail::field_reader r(c.result, lim);
  std::string path = "x";
  nlohmann::ordered_json j;
  c.ok = detail::msgpack_to_json(r, h.get(), path, max_depth, j);
  EXPECT_EQ(path, "x") << "the path is restored";
  if (c.ok) c.json = j.dump();
  return c;
}

TEST(wire_msgpack_json, scalars) {
  EXPECT_EQ(convert(mp::nil()).json, "null");
  EXPECT_EQ(convert(true).json, "true");
  EXPECT_EQ(convert(false).json, "false");
  EXPECT_EQ(convert(0).json, "0");
  EXPECT_EQ(convert(-1).json, "-1");
  EXPECT_EQ(convert(18446744073709551615ull).json, "18446744073709551615");
  EXPECT_EQ(convert(std::numeric_limits<long long>::min()).json, "-9223372036854775808");
  EXPECT_EQ(convert(0.5).json, "0.5");
  EXPECT_EQ(convert(-2.0).json, "-2.0");
  EXPECT_EQ(convert(1e300).json, "1e+300");
  // A float32 is read as the decimal its sender wrote, not its binary expansion.
  EXPECT_EQ(convert(mp::f32(0.1f)).json, "0.1");
  EXPECT_EQ(convert(mp::f32(3.14159274f)).json, "3.1415927");
  EXPECT_EQ(convert(mp::f32(16777216.0f)).json, "16777216.0");
  EXPECT_EQ(convert("").json, "\"\"");
  // JSON escapes: quote, backslash, control characters; UTF-8 passes as is.
  EXPECT_EQ(convert("a\"b\\c\n\t\x01 \xc3\xa9t\xc3\xa9 \xf0\x9f\x99\x82").json,
            "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9t\xc3\xa9 \xf0\x9f\x99\x82\"");
}

TEST(wire_msgpack_json, containers_keep_order) {
  const mp v = mp::map({{"z", 1},
                        {"a", mp::arr({mp::nil(), "s", mp::arr({}), mp::map({})})},
                        {"m", mp::map({{"k2", false}, {"k1", -0.25}})}});
  EXPECT_EQ(convert(v).json, R"({"z":1,"a":[null,"s",[],{}],"m":{"k2":false,"k1":-0.25}})");
}

void expect_refused(const converted& c, errc code, const std::string& mentions) {
  ASSERT_FALSE(c.ok) << "accepted as " << c.json;
  EXPECT_EQ(c.result.error.code, code) << c.result.error.message;
  EXPECT_NE(c.result.error.message.find(mentions), std::string::npos) << c.result.error.message;
}

TEST(wire_msgpack_json, refusals_name_the_path) {
  expect_refused(convert(mp::map({{"a", mp::arr({1, mp::bin(std::string("\x00\x01", 2))})}})), errc::malformed, "x.a[1] must be");
  expect_refused(convert(mp::map({{"a", mp::arr({1, mp::bin(std::string("\x00\x01", 2))})}})), errc::malformed, "got binary");
  expect_refused(convert(mp::raw("\xd4\x01\x02")), errc::malformed, "got ext");  // fixext 1
  expect_refused(convert(mp::arr({"ok", "caf\xc3"})), errc::invalid_param, "x[1] is not valid UTF-8");
  expect_refused(convert(mp::map({{"caf\xc3", 1}})), errc::invalid_param, "key that is not valid UTF-8");
  expect_refused(convert(mp::map({{1, 1}})), errc::malformed, "keys must be strings");
  expect_refused(convert(mp::map({{"k", 1}, {"k", 2}})), errc::malformed, "the key \"k\" twice");
  expect_refused(convert(mp::map({{"n", std::nan("")}})), errc::invalid_param, "x.n must be a finite number");
  expect_refused(convert(mp::arr({mp::f32(std::numeric_limits<float>::infinity())})), errc::invalid_param,
                 "x[0] must be a finite number");
  // An odd key is quoted in the path, not pasted raw.
  expect_refused(convert(mp::map({{"a b", mp::bin("")}})), errc::malformed, "x[\"a b\"] must be");
}

TEST(wire_msgpack_json, nesting_is_bounded) {
  mp v = 1;
  for (int i = 0; i < 3; ++i) v = mp::arr({v});  // [[[1]]]: three levels
  EXPECT_EQ(convert(v, 3).json, "[[[1]]]");
  expect_refused(convert(v, 2), errc::too_large, "x[0][0] nests too deeply");
  EXPECT_EQ(convert(mp(7), 0).json, "7");  // a scalar has no depth
}

}  // namespace
}  // namespace cortex::wire
