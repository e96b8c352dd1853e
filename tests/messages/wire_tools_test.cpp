// Tools and reasoning on the wire (issue 27, protocol.md chat-only submit
// keys and chunk / finished `reasoning`, `tool_calls`): what a submit's
// tool keys become, one rejection per shape rule, and the typed fields the
// server writes. Expected values are written by hand.
#include <gtest/gtest.h>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_decode.hpp"
#include "messages/wire/server_encode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::decode;
using test::envelope;
using test::mp;

mp chat_submit() {
  return envelope("submit", {{"id", "c"}, {"messages", mp::arr({mp::map({{"role", "user"}, {"content", "hi"}})})}});
}

mp weather_tool() {
  return mp::map({{"type", "function"},
                  {"function", mp::map({{"name", "get_weather"},
                                        {"parameters", mp::map({{"type", "object"}})}})}});
}

TEST(wire_tools, submit_keys_become_the_request) {
  mp m = chat_submit();
  m.set("tools", mp::arr({weather_tool()}));
  m.set("tool_choice", mp::map({{"type", "function"}, {"function", mp::map({{"name", "get_weather"}})}}));
  m.set("parallel_tool_calls", false);
  m.set("reasoning_format", "none");
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.tools_json, R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
  EXPECT_EQ(d.request.tool_choice, "function");
  EXPECT_EQ(d.request.tool_choice_name, "get_weather");
  EXPECT_FALSE(d.request.parallel_tool_calls);
  EXPECT_EQ(d.request.reasoning_format, "none");

  m.set("tool_choice", "required");
  const decode_result r = decode(m);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(r.request.tool_choice, "required");
}

TEST(wire_tools, bad_tool_keys_are_400_naming_them) {
  const struct {
    const char* key;
    mp value;
  } cases[] = {
      {"tools", mp::map({{"a", 1}})},
      {"tool_choice", "sometimes"},
      {"tool_choice", mp::map({{"type", "function"}})},
      {"tool_choice", 3},
      {"parallel_tool_calls", "yes"},
      {"reasoning_format", "raw"},
  };
  for (const auto& c : cases) {
    mp m = chat_submit();
    m.set(c.key, c.value);
    const decode_result d = decode(m);
    EXPECT_FALSE(d.ok()) << c.key;
    EXPECT_EQ(errc_code(d.error.code), 400u) << c.key;  // a wrong type is malformed, a bad value invalid_param
    EXPECT_NE(d.error.message.find(c.key), std::string::npos) << d.error.message;
  }
  // Chat-only: with a prompt they are refused.
  mp p = envelope("submit", {{"id", "c"}, {"prompt", "x"}, {"tools", mp::arr({weather_tool()})}});
  EXPECT_FALSE(decode(p).ok());
}

TEST(wire_tools, chunk_and_finished_carry_reasoning_and_calls) {
  request_chunk c;
  c.client_id = "c";
  c.text = "Sure.";
  c.reasoning = "They want weather.";
  c.tool_calls = {{0, "call_1", "get_weather", R"({"city":"Paris"})"}};
  server_message m = decode_server_message(encode_chunk(c, 1, output_fields{}).data(), encode_chunk(c, 1, output_fields{}).size());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m.get_string("text"), "Sure.");
  EXPECT_EQ(m.get_string("reasoning"), "They want weather.");
  const msgpack::object* calls = m.get("tool_calls");
  ASSERT_NE(calls, nullptr);
  ASSERT_EQ(calls->via.array.size, 1u);
  const auto call = calls->via.array.ptr[0].as<std::map<std::string, msgpack::object>>();
  EXPECT_EQ(call.at("index").as<uint32_t>(), 0u);
  EXPECT_EQ(call.at("id").as<std::string>(), "call_1");
  EXPECT_EQ(call.at("name").as<std::string>(), "get_weather");
  EXPECT_EQ(call.at("arguments").as<std::string>(), R"({"city":"Paris"})");

  // A plain chunk has neither key.
  request_chunk plain;
  plain.client_id = "c";
  plain.text = "x";
  const wire_bytes pb = encode_chunk(plain, 2, output_fields{});
  server_message pm = decode_server_message(pb.data(), pb.size());
  EXPECT_EQ(pm.get("reasoning"), nullptr);
  EXPECT_EQ(pm.get("tool_calls"), nullptr);

  request_finished f;
  f.client_id = "c";
  f.reason = finish_reason::stop;
  f.stop_kind = "eos";
  f.stop_value = "2";
  f.has_tool_calls = true;
  f.tool_calls = {{"call_2", "get_time", "{}"}};
  const wire_bytes fb = encode_finished(f, 3, output_fields{});
  server_message fm = decode_server_message(fb.data(), fb.size());
  ASSERT_TRUE(fm.ok()) << fm.error();
  EXPECT_EQ(fm.get_string("reason"), "tool_calls");
  const msgpack::object* fc = fm.get("tool_calls");
  ASSERT_NE(fc, nullptr);
  const auto one = fc->via.array.ptr[0].as<std::map<std::string, msgpack::object>>();
  EXPECT_EQ(one.at("name").as<std::string>(), "get_time");
  EXPECT_EQ(one.count("index"), 0u);
}

}  // namespace
}  // namespace cortex::wire
