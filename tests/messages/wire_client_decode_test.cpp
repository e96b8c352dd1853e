// Client -> server decoding: what valid messages turn into (defaults, every
// field, unknown keys, cancel ids, ping nonces).
#include <gtest/gtest.h>

#include "messages/wire/client_decode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::envelope;
using test::decode;
using test::mp;


TEST(wire_client_decode, minimal_submit_gets_protocol_defaults) {
  const decode_result d = decode(envelope("submit", {{"id", "r1"}, {"prompt", "Once upon"}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.type, client_message_type::submit);
  EXPECT_EQ(d.id, "r1");
  const generation_request& r = d.request;
  EXPECT_EQ(r.client_id, "r1");
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_FALSE(r.use_tokens);
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(r.add_bos, -1);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.priority, 0);
  EXPECT_EQ(r.deadline_ms, 0u);
  EXPECT_TRUE(r.want_text);
  EXPECT_FALSE(r.want_token_ids);
  EXPECT_EQ(r.n_logprobs, 0u);
  EXPECT_TRUE(r.tags.empty());
  // protocol.md's params defaults, written out (not taken from request_params).
  const request_params& p = r.params;
  EXPECT_EQ(p.max_tokens, 256u);
  EXPECT_EQ(p.temperature, 1.0f);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.top_p, 1.0f);
  EXPECT_EQ(p.min_p, 0.0f);
  EXPECT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.penalty_last_n, 64);
  EXPECT_FALSE(p.has_seed);
  EXPECT_TRUE(p.stop.empty());
  EXPECT_TRUE(p.stop_token_ids.empty());
  EXPECT_FALSE(p.ignore_eos);
  EXPECT_EQ(p.min_tokens, 0u);
  EXPECT_TRUE(p.logit_bias_ids.empty());
  EXPECT_TRUE(d.ignored.empty());
}

TEST(wire_client_decode, every_submit_field_is_read) {
  mp params = mp::map({{"max_tokens", 100},
                       {"temperature", 0.5},
                       {"top_k", 40},
                       {"top_p", mp::f32(0.25f)},
                       {"min_p", 0.05},
                       {"repetition_penalty", 1.1},
                       {"presence_penalty", -0.5},
                       {"frequency_penalty", 2},  // an integer where a float is expected
                       {"penalty_last_n", -1},
                       {"seed", 18446744073709551615ull},
                       {"stop", mp::arr({"\n\n", "The end", "\xc3\xa9t\xc3\xa9"})},
                       {"stop_token_ids", mp::arr({2, 13})},
                       {"ignore_eos", true},
                       {"min_tokens", 3},
                       {"logit_bias", mp::map({{5, 100.0}, {6, -100}, {7, mp::f32(0.5f)}})},
                       {"speculative", mp::map({{"ngram", 4}, {"max_draft", 6}})}});
  mp m = envelope("submit", {{"id", "every"},
                             {"tokens", mp::arr({1, 2147483647, 0})},
                             {"add_bos", false},
                             {"stream", false},
                             {"priority", -7},
                             {"deadline_ms", 60000},
                             {"params", params},
                             {"want", mp::map({{"text", false}, {"token_ids", true}, {"logprobs", 20}})},
                             {"tags", mp::map({{"user", "u1"}, {"trace", ""}})},
                             {"model", "stories"}});
  decode_limits lim;
  lim.model_names = {"other", "stories"};
  const decode_result d = decode(m, lim);
  ASSERT_TRUE(d.ok()) << d.error.message;
  const generation_request& r = d.request;
  EXPECT_TRUE(r.use_tokens);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1, 2147483647, 0}));
  EXPECT_EQ(r.add_bos, 0);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.priority, -7);
  EXPECT_EQ(r.deadline_ms, 60000u);
  EXPECT_FALSE(r.want_text);
  EXPECT_TRUE(r.want_token_ids);
  EXPECT_EQ(r.n_logprobs, 20u);
  EXPECT_EQ(r.tags, (std::map<std::string, std::string>{{"user", "u1"}, {"trace", ""}}));
  const request_params& p = r.params;
  EXPECT_EQ(p.max_tokens, 100u);
  EXPECT_EQ(p.temperature, 0.5f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_EQ(p.top_p, 0.25f);
  EXPECT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.presence_penalty, -0.5f);
  EXPECT_EQ(p.frequency_penalty, 2.0f);
  EXPECT_EQ(p.penalty_last_n, -1);
  EXPECT_TRUE(p.has_seed);
  EXPECT_EQ(p.seed, 18446744073709551615ull);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"\n\n", "The end", "\xc3\xa9t\xc3\xa9"}));
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{2, 13}));
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.min_tokens, 3u);
  EXPECT_TRUE(p.spec_given);
  EXPECT_EQ(p.spec_ngram, 4);
  EXPECT_EQ(p.spec_max_draft, 6);
  EXPECT_EQ(p.logit_bias_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(p.logit_bias_values, (std::vector<float>{100.0f, -100.0f, 0.5f}));
  EXPECT_TRUE(d.ignored.empty());
}

TEST(wire_client_decode, boundary_values_are_accepted) {
  const auto with_params = [](mp params) {
    return envelope("submit", {{"id", std::string(64, 'x')}, {"prompt", ""}, {"params", std::move(params)}});
  };
  std::vector<mp> stops;
  for (int i = 0; i < 16; ++i) stops.push_back(std::string(256, static_cast<char>('a' + i)));
  for (const mp& params : {mp::map({{"temperature", 0}}), mp::map({{"top_p", 1.0}}), mp::map({{"min_p", 0}}),
                           mp::map({{"min_p", 1}}), mp::map({{"stop", mp::arr(stops)}}),
                           mp::map({{"max_tokens", 1}, {"min_tokens", 1}}),
                           mp::map({{"max_tokens", 18446744073709551615ull}}), mp::map({{"top_k", 2147483647}})}) {
    const decode_result d = decode(with_params(params));
    EXPECT_TRUE(d.ok()) << d.error.message;
  }
  // max_tokens saturates (intake caps it to the context anyway).
  EXPECT_EQ(decode(with_params(mp::map({{"max_tokens", 1ull << 40}}))).request.params.max_tokens, 4294967295u);
  decode_limits lim;
  lim.max_logit_bias = 3;
  EXPECT_TRUE(decode(with_params(mp::map({{"logit_bias", mp::map({{0, 1}, {1, 1}, {2, 1}})}})), lim).ok());
}

TEST(wire_client_decode, nil_means_absent) {
  mp m = envelope("submit", {{"id", "n"}, {"prompt", "x"}, {"tokens", mp::nil()}, {"deadline_ms", mp::nil()},
                             {"params", mp::map({{"seed", mp::nil()}, {"temperature", mp::nil()}})},
                             {"want", mp::map({{"logprobs", mp::nil()}})}, {"tags", mp::nil()}});
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_FALSE(d.request.use_tokens);
  EXPECT_FALSE(d.request.params.has_seed);
  EXPECT_EQ(d.request.params.temperature, 1.0f);
  EXPECT_TRUE(d.ignored.empty());
}

TEST(wire_client_decode, unknown_keys_are_listed_with_their_path) {
  mp m = envelope("submit", {{"bogus", 1},
                             {"id", "u"},
                             {"prompt", "x"},
                             {"params", mp::map({{"mirostat", 2}, {"top_k", 3}})},
                             {"want", mp::map({{"everything", true}})},
                             {"x_extra", mp::map({{"a", mp::arr({1})}})},
                             {"seq", 4}});
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.ignored, (std::vector<std::string>{"bogus", "params.mirostat", "want.everything", "x_extra", "seq"}));
  EXPECT_EQ(d.request.params.top_k, 3);
}

TEST(wire_client_decode, unknown_key_list_is_bounded_and_safe_to_echo) {
  mp m = envelope("submit", {{"id", "u"}, {"prompt", "x"}, {std::string(65, 'k'), 1}, {"bad\xff", 1}});
  for (int i = 0; i < 40; ++i) m.set("extra" + std::to_string(i), i);
  decode_limits lim;
  lim.max_ignored = 10;
  const decode_result d = decode(m, lim);
  ASSERT_TRUE(d.ok()) << d.error.message;
  ASSERT_EQ(d.ignored.size(), 11u);
  EXPECT_EQ(d.ignored[0], "<key of 65 bytes>");
  EXPECT_EQ(d.ignored[1], "<key of 4 bytes>");
  EXPECT_EQ(d.ignored[2], "extra0");
  EXPECT_EQ(d.ignored[10], "... and 32 more");
}

TEST(wire_client_decode, cancel_takes_id_and_ids) {
  decode_result d = decode(envelope("cancel", {{"id", "a"}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.type, client_message_type::cancel);
  EXPECT_EQ(d.id, "a");
  EXPECT_EQ(d.cancel_ids, (std::vector<std::string>{"a"}));

  d = decode(envelope("cancel", {{"ids", mp::arr({"b", "c", "b"})}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.id, "");
  EXPECT_EQ(d.cancel_ids, (std::vector<std::string>{"b", "c"}));

  d = decode(envelope("cancel", {{"ids", mp::arr({"b", "c"})}, {"id", "c"}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.cancel_ids, (std::vector<std::string>{"b", "c"}));

  d = decode(envelope("cancel", {{"ids", mp::arr({})}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_TRUE(d.cancel_ids.empty());
}

TEST(wire_client_decode, ping_keeps_the_nonce_as_msgpack) {
  const mp nonce = mp::map({{"n", mp::arr({1, -2, 2.5, "x", mp::bin("\x00\x01"), mp::nil()})}});
  const decode_result d = decode(envelope("ping", {{"nonce", nonce}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.type, client_message_type::ping);
  EXPECT_EQ(d.id, "");
  EXPECT_EQ(d.nonce, nonce.bytes());  // canonical encodings round trip byte for byte

  const decode_result no_nonce = decode(envelope("ping"));
  ASSERT_TRUE(no_nonce.ok());
  EXPECT_TRUE(no_nonce.nonce.empty());

  const decode_result nil_nonce = decode(envelope("ping", {{"nonce", mp::nil()}}));
  ASSERT_TRUE(nil_nonce.ok());
  EXPECT_EQ(nil_nonce.nonce, std::vector<uint8_t>{0xc0});
}

TEST(wire_client_decode, connection_messages_take_an_optional_id) {
  const std::pair<const char*, client_message_type> types[] = {{"stats", client_message_type::stats},
                                                               {"health", client_message_type::health},
                                                               {"models", client_message_type::models},
                                                               {"ping", client_message_type::ping}};
  for (const auto& [name, type] : types) {
    decode_result d = decode(envelope(name));
    ASSERT_TRUE(d.ok()) << name << ": " << d.error.message;
    EXPECT_EQ(d.type, type);
    EXPECT_EQ(d.id, "");
    d = decode(envelope(name, {{"id", "q7"}, {"extra", 1}}));
    ASSERT_TRUE(d.ok()) << name << ": " << d.error.message;
    EXPECT_EQ(d.id, "q7");
    EXPECT_EQ(d.ignored, std::vector<std::string>{"extra"});
  }
}

TEST(wire_client_decode, accepts_any_integer_encoding_and_key_order) {
  // {"t":"submit","id":"i","prompt":"p","v": int8 1, "priority": int64 5}
  // with v sent as a signed int8 (0xd0 0x01), as some encoders do.
  mp m = mp::map({{"t", "submit"}, {"id", "i"}, {"prompt", "p"}, {"v", mp::raw("\xd0\x01")},
                  {"priority", mp::raw(std::string("\xd3\x00\x00\x00\x00\x00\x00\x00\x05", 9))}});
  const decode_result d = decode(m);
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.priority, 5);
}

TEST(wire_client_decode, empty_model_list_does_not_check_model) {
  const decode_result d = decode(envelope("submit", {{"id", "m"}, {"prompt", "x"}, {"model", "anything"}}));
  EXPECT_TRUE(d.ok()) << d.error.message;
}

}  // namespace
}  // namespace cortex::wire
