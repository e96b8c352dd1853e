// `submit` with chat `messages` (protocol.md, messages/wire/chat_decode.hpp):
// what valid turns become (JSON text for intake's chat template), and one
// rejection per shape rule, each naming the field. Expected JSON is written
// by hand.
#include <gtest/gtest.h>

#include "messages/wire/client_decode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::envelope;
using test::decode;
using test::mp;


mp turn(const char* role, mp content) { return mp::map({{"role", role}, {"content", std::move(content)}}); }

// A valid chat submit (id "c") with `messages`.
mp chat(std::vector<mp> turns) { return envelope("submit", {{"id", "c"}, {"messages", mp::arr(std::move(turns))}}); }

TEST(wire_chat_decode, turns_become_json_in_order) {
  mp tool_call = mp::map({{"id", "call_1"},
                          {"type", "function"},
                          {"function", mp::map({{"name", "get_weather"},
                                                {"arguments", mp::map({{"city", "Paris"}, {"days", 3}})}})}});
  mp m = chat({turn("system", "Be brief."),
               turn("user", mp::arr({mp::map({{"type", "text"}, {"text", "Hi "}}),
                                     mp::map({{"type", "text"}, {"text", "there"}})})),
               mp::map({{"role", "assistant"}, {"content", mp::nil()}, {"tool_calls", mp::arr({tool_call})}}),
               mp::map({{"role", "tool"}, {"tool_call_id", "call_1"}, {"name", "get_weather"}, {"content", "{\"t\":21}"}}),
               mp::map({{"content", "ok"}, {"role", "assistant"}})});
  m.set("chat_template_kwargs", mp::map({{"enable_thinking", false}, {"today", "2026-11-23"}}));
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  const generation_request& r = d.request;
  EXPECT_EQ(r.client_id, "c");
  EXPECT_EQ(r.messages_json,
            R"([{"role":"system","content":"Be brief."},)"
            R"({"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]},)"
            R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
            R"("function":{"name":"get_weather","arguments":{"city":"Paris","days":3}}}]},)"
            R"({"role":"tool","tool_call_id":"call_1","name":"get_weather","content":"{\"t\":21}"},)"
            R"({"content":"ok","role":"assistant"}])");
  EXPECT_EQ(r.chat_template_kwargs_json, R"({"enable_thinking":false,"today":"2026-11-23"})");
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_TRUE(r.prompt.empty());
  EXPECT_FALSE(r.use_tokens);
  EXPECT_TRUE(d.ignored.empty());
}

TEST(wire_chat_decode, defaults_nil_and_add_generation_prompt) {
  mp m = chat({turn("user", "hi")});
  decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.messages_json, R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(d.request.chat_template_kwargs_json, "");
  EXPECT_TRUE(d.request.add_generation_prompt);
  // nil means absent, as for every optional field.
  d = decode(mp(m).set("chat_template_kwargs", mp::nil()).set("add_generation_prompt", mp::nil()).set("prompt", mp::nil()));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.chat_template_kwargs_json, "");
  d = decode(mp(m).set("add_generation_prompt", false).set("chat_template_kwargs", mp::map({})));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_FALSE(d.request.add_generation_prompt);
  EXPECT_EQ(d.request.chat_template_kwargs_json, "{}");
}

TEST(wire_chat_decode, unknown_keys_are_ignored_and_listed_turn_keys_are_kept) {
  mp m = chat({mp::map({{"role", "user"}, {"content", "hi"}, {"weight", 0.5}})});
  m.set("bogus", 1).at("params").set("max_tokens", 8).set("also_bogus", true);
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.ignored, (std::vector<std::string>{"bogus", "params.also_bogus"}));
  EXPECT_EQ(d.request.messages_json, R"([{"role":"user","content":"hi","weight":0.5}])");
  EXPECT_EQ(d.request.params.max_tokens, 8u);
}

TEST(wire_chat_decode, caps) {
  std::vector<mp> turns(1024, turn("user", "x"));
  decode_result d = decode(chat(turns));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.messages_json.size(), 1024 * std::string(R"({"role":"user","content":"x"},)").size() + 1);
  turns.push_back(turn("user", "x"));
  d = decode(chat(turns));
  EXPECT_EQ(d.error.code, errc::too_large);
  EXPECT_NE(d.error.message.find("messages has 1025 turns; at most 1024"), std::string::npos) << d.error.message;
  EXPECT_EQ(d.id, "c");
  // Depth: the message map, messages and the turn are three levels; 13
  // nested arrays in `x` make 16, the protocol's limit.
  mp deep = 1;
  for (int i = 0; i < 13; ++i) deep = mp::arr({deep});
  d = decode(chat({mp::map({{"role", "user"}, {"content", "hi"}, {"x", mp::arr({deep})}})}));
  EXPECT_EQ(d.error.code, errc::malformed);
  EXPECT_NE(d.error.message.find("nesting deeper than 16"), std::string::npos) << d.error.message;
  d = decode(chat({mp::map({{"role", "user"}, {"content", "hi"}, {"x", deep}})}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_NE(d.request.messages_json.find("[[[[[[[[[[[[[1]]]]]]]]]]]]]"), std::string::npos);
}

struct rejection {
  const char* what;
  mp message;
  errc code;
  const char* mentions;
};

TEST(wire_chat_decode, each_invalid_shape_is_rejected_naming_the_field) {
  const mp ok_turn = turn("user", "hi");
  const mp text_part = mp::map({{"type", "text"}, {"text", "a"}});
  const std::vector<rejection> cases = {
      {"messages not an array", envelope("submit", {{"id", "c"}, {"messages", "hi"}}), errc::malformed,
       "messages must be an array"},
      {"no turns", chat({}), errc::invalid_param, "messages is empty"},
      {"turn not a map", chat({ok_turn, "hi"}), errc::malformed, "messages[1] must be a map"},
      {"turn key not a string", chat({mp::map({{"role", "user"}, {"content", "a"}, {3, "x"}})}), errc::malformed,
       "messages[0] has a key of type integer"},
      {"duplicate key", chat({mp::map({{"role", "user"}, {"content", "a"}, {"role", "user"}})}), errc::malformed,
       "messages[0] has the key \"role\" twice"},
      {"role missing", chat({mp::map({{"content", "a"}})}), errc::invalid_param, "messages[0].role is missing"},
      {"role nil", chat({mp::map({{"role", mp::nil()}, {"content", "a"}})}), errc::invalid_param,
       "messages[0].role is missing"},
      {"role not a string", chat({ok_turn, turn("user", "a").set("role", 1)}), errc::invalid_param,
       "messages[1].role must be one of \"system\", \"user\", \"assistant\", \"tool\", got an integer"},
      {"unknown role", chat({turn("robot", "a")}), errc::invalid_param,
       "messages[0].role must be one of \"system\", \"user\", \"assistant\", \"tool\", got \"robot\""},
      {"role binary", chat({turn("user", "a").set("role", mp::bin("user"))}), errc::invalid_param,
       "messages[0].role must be one of"},
      {"content missing", chat({mp::map({{"role", "user"}})}), errc::invalid_param, "messages[0].content is missing"},
      {"content nil", chat({turn("system", mp::nil())}), errc::invalid_param, "messages[0].content is missing"},
      {"assistant content missing without tool_calls", chat({mp::map({{"role", "assistant"}})}), errc::invalid_param,
       "messages[0].content is missing"},
      {"content a number", chat({turn("user", 5)}), errc::invalid_param,
       "messages[0].content must be a string or an array of text parts"},
      {"content a map", chat({turn("user", text_part)}), errc::invalid_param, "messages[0].content must be a string"},
      {"content binary", chat({turn("user", mp::bin("hi"))}), errc::invalid_param, "messages[0].content must be"},
      {"part not a map", chat({turn("user", mp::arr({text_part, "b"}))}), errc::invalid_param,
       "messages[0].content[1] must be a text part"},
      {"part of another type", chat({turn("user", mp::arr({mp::map({{"type", "image_url"}, {"image_url", "u"}})}))}),
       errc::invalid_param, "messages[0].content[0].type must be \"text\" (only text parts are supported), got \"image_url\""},
      {"part without type", chat({turn("user", mp::arr({mp::map({{"text", "a"}})}))}), errc::invalid_param,
       "messages[0].content[0].type must be \"text\""},
      {"part without text", chat({turn("user", mp::arr({mp::map({{"type", "text"}})}))}), errc::invalid_param,
       "messages[0].content[0].text must be a string, got nothing"},
      {"part text a number", chat({turn("user", mp::arr({mp::map({{"type", "text"}, {"text", 1}})}))}),
       errc::invalid_param, "messages[0].content[0].text must be a string, got an integer"},
      {"content not UTF-8", chat({turn("user", "caf\xc3")}), errc::invalid_param,
       "messages[0].content is not valid UTF-8"},
      {"part text not UTF-8", chat({turn("user", mp::arr({mp::map({{"type", "text"}, {"text", "\xc0\xaf"}})}))}),
       errc::invalid_param, "messages[0].content[0].text is not valid UTF-8"},
      {"binary in a passed-on key", chat({turn("tool", "r").set("name", mp::bin("f"))}), errc::malformed,
       "messages[0].name must be a JSON-like value"},
      {"NaN in tool_calls",
       chat({mp::map({{"role", "assistant"}, {"tool_calls", mp::arr({mp::map({{"w", std::nan("")}})})}})}),
       errc::invalid_param, "messages[0].tool_calls[0].w must be a finite number"},
      {"kwargs not a map", chat({ok_turn}).set("chat_template_kwargs", mp::arr({})), errc::malformed,
       "chat_template_kwargs must be a map"},
      {"kwargs binary value", chat({ok_turn}).set("chat_template_kwargs", mp::map({{"k", mp::bin("v")}})),
       errc::malformed, "chat_template_kwargs.k must be a JSON-like value"},
      {"kwargs non-string key", chat({ok_turn}).set("chat_template_kwargs", mp::map({{1, true}})), errc::malformed,
       "chat_template_kwargs has a key of type integer"},
      {"add_generation_prompt not a bool", chat({ok_turn}).set("add_generation_prompt", 1), errc::malformed,
       "add_generation_prompt must be a bool"},
      {"messages and prompt", chat({ok_turn}).set("prompt", "p"), errc::invalid_param,
       "exactly one of prompt / tokens / messages, not both prompt and messages"},
      {"messages and tokens", chat({ok_turn}).set("tokens", mp::arr({1})), errc::invalid_param,
       "not both tokens and messages"},
      {"all three", chat({ok_turn}).set("tokens", mp::arr({1})).set("prompt", "p"), errc::invalid_param,
       "not all three"},
      {"kwargs with prompt", envelope("submit", {{"id", "c"}, {"prompt", "p"}, {"chat_template_kwargs", mp::map({})}}),
       errc::invalid_param, "chat_template_kwargs applies to messages only; leave it out with prompt"},
      {"add_generation_prompt with tokens",
       envelope("submit", {{"id", "c"}, {"tokens", mp::arr({1})}, {"add_generation_prompt", true}}),
       errc::invalid_param, "add_generation_prompt applies to messages only; leave it out with tokens"},
      {"none of the three", envelope("submit", {{"id", "c"}, {"messages", mp::nil()}}), errc::invalid_param,
       "exactly one of prompt (a string) / tokens (an array of token ids) / messages"},
  };
  for (const rejection& c : cases) {
    SCOPED_TRACE(c.what);
    const decode_result d = decode(c.message);
    ASSERT_FALSE(d.ok()) << "accepted";
    EXPECT_EQ(d.error.code, c.code) << d.error.message;
    EXPECT_NE(d.error.message.find(c.mentions), std::string::npos)
        << "message \"" << d.error.message << "\" does not mention \"" << c.mentions << "\"";
    EXPECT_EQ(d.id, "c") << "the error is addressed to the request";
  }
}

}  // namespace
}  // namespace cortex::wire
