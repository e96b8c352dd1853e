// Client -> server decoding: one rejection per rule of protocol.md, each with
// its exact code and name, a message naming the offending field, and the id
// when the message carried a readable one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "messages/wire/client_decode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::envelope;
using test::mp;

struct expected_error {
  uint16_t code;
  const char* name;
};
const expected_error malformed{400, "malformed"};
const expected_error invalid_param{400, "invalid_param"};
const expected_error unknown_type{400, "unknown_type"};
const expected_error unknown_model{404, "unknown_model"};
const expected_error too_large{413, "too_large"};
const expected_error unsupported_version{505, "unsupported_version"};

decode_limits test_limits() {
  decode_limits lim;
  lim.model_names = {"stories260K"};
  return lim;
}

// Checks one rejection; `mentions` must appear in the message.
void expect_rejected(const std::vector<uint8_t>& bytes, expected_error want, const std::string& mentions,
                     const std::string& id = "") {
  const decode_result d = decode_client_message(bytes.data(), bytes.size(), test_limits());
  ASSERT_FALSE(d.ok()) << "accepted; expected " << want.name << " mentioning " << mentions;
  EXPECT_EQ(errc_code(d.error.code), want.code) << d.error.message;
  EXPECT_STREQ(errc_name(d.error.code), want.name) << d.error.message;
  EXPECT_NE(d.error.message.find(mentions), std::string::npos)
      << "message \"" << d.error.message << "\" does not mention \"" << mentions << "\"";
  EXPECT_EQ(d.id, id);
}
void expect_rejected(const mp& m, expected_error want, const std::string& mentions, const std::string& id = "") {
  expect_rejected(m.bytes(), want, mentions, id);
}

// A valid submit (id "bad") with `key` (or params.`key`) set to `value`.
mp submit_with(const std::string& key, mp value) {
  mp m = envelope("submit", {{"id", "bad"}, {"prompt", "Once"}});
  m.set(key, std::move(value));
  return m;
}
mp submit_with_param(const std::string& key, mp value) {
  mp m = envelope("submit", {{"id", "bad"}, {"prompt", "Once"}});
  m.at("params").set(key, std::move(value));
  return m;
}

TEST(wire_client_reject, not_msgpack_or_not_a_map) {
  expect_rejected(std::vector<uint8_t>{}, malformed, "empty");
  expect_rejected(std::vector<uint8_t>{0xc1}, malformed, "msgpack");
  expect_rejected(std::vector<uint8_t>{0x92, 0x01}, malformed, "truncated");
  expect_rejected(std::vector<uint8_t>{0x93, 0x01}, malformed, "declares more elements than the 2-byte message holds");
  expect_rejected(std::vector<uint8_t>{0xa5, 'a', 'b'}, malformed, "truncated");
  std::vector<uint8_t> trailing = envelope("ping").bytes();
  trailing.push_back(0x01);
  expect_rejected(trailing, malformed, "trailing");
  expect_rejected(mp::arr({1, "submit"}), malformed, "map");
  expect_rejected(mp("submit"), malformed, "map");
  expect_rejected(mp(42), malformed, "map");
  expect_rejected(mp::nil(), malformed, "map");
}

TEST(wire_client_reject, keys) {
  expect_rejected(mp::map({{1, 2}, {3, 4}}), malformed, "keys must be strings");
  expect_rejected(envelope("ping", {{"v", 1}}), malformed, "\"v\" twice");
  mp m = submit_with("params", mp::map({{"top_k", 1}, {"top_k", 2}}));
  expect_rejected(m, malformed, "params has the key \"top_k\" twice", "bad");
  expect_rejected(submit_with("want", mp::map({{5, true}})), malformed, "want has a key of type integer", "bad");
}

TEST(wire_client_reject, version) {
  expect_rejected(mp::map({{"t", "ping"}}), malformed, "v (the protocol version) is missing");
  expect_rejected(mp::map({{"v", "1"}, {"t", "ping"}}), malformed, "v must be an integer");
  expect_rejected(mp::map({{"v", 1.0}, {"t", "ping"}}), malformed, "v must be an integer");
  for (mp v : {mp(2), mp(0), mp(99), mp(-1)}) {
    mp m = submit_with("v", v);
    expect_rejected(m, unsupported_version, "version", "bad");
  }
  // The version is checked before anything else of the message.
  expect_rejected(mp::map({{"v", 2}, {"t", "frobnicate"}, {"id", std::string(100, 'x')}}), unsupported_version,
                  "send v = 1");
}

TEST(wire_client_reject, type) {
  expect_rejected(mp::map({}), malformed, "v");
  expect_rejected(mp::map({{"v", 1}, {"id", "a"}}), unknown_type, "t (the message type) is missing", "a");
  expect_rejected(mp::map({{"v", 1}, {"t", mp::nil()}}), unknown_type, "missing");
  expect_rejected(mp::map({{"v", 1}, {"t", 7}}), malformed, "t must be a string");
  expect_rejected(envelope("frobnicate"), unknown_type, "\"frobnicate\"");
  expect_rejected(envelope("frobnicate", {{"id", "u1"}}), unknown_type, "submit, cancel", "u1");
  expect_rejected(envelope("Submit"), unknown_type, "Submit");
}

TEST(wire_client_reject, id) {
  expect_rejected(envelope("submit", {{"prompt", "x"}}), invalid_param, "submit needs an id");
  expect_rejected(submit_with("id", mp::nil()), invalid_param, "submit needs an id");
  expect_rejected(submit_with("id", 5), malformed, "id must be a string");
  expect_rejected(submit_with("id", ""), invalid_param, "id must be 1..64 bytes");
  expect_rejected(submit_with("id", std::string(65, 'x')), too_large, "id is 65 bytes; at most 64");
  std::string accents;
  for (int i = 0; i < 33; ++i) accents += "\xc3\xa9";  // 33 characters, 66 bytes
  expect_rejected(submit_with("id", accents), too_large, "id is 66 bytes");
  expect_rejected(submit_with("id", "a\xff"), invalid_param, "id is not valid UTF-8");
  expect_rejected(envelope("ping", {{"id", std::string(65, 'x')}}), too_large, "id is 65 bytes");
  expect_rejected(envelope("stats", {{"id", 3}}), malformed, "id must be a string");
}

TEST(wire_client_reject, prompt_and_tokens) {
  expect_rejected(submit_with("prompt", 5), malformed, "prompt must be a string", "bad");
  expect_rejected(submit_with("prompt", mp::bin("x")), malformed, "prompt must be a string", "bad");
  expect_rejected(submit_with("prompt", "caf\xc3"), invalid_param, "prompt is not valid UTF-8", "bad");
  expect_rejected(submit_with("prompt", "\xed\xa0\x80"), invalid_param, "prompt is not valid UTF-8", "bad");  // surrogate
  expect_rejected(submit_with("prompt", "\xc0\xaf"), invalid_param, "prompt is not valid UTF-8", "bad");      // overlong
  expect_rejected(submit_with("tokens", mp::arr({1, 2})), invalid_param,
                  "exactly one of prompt / tokens / messages, not both prompt and tokens", "bad");
  mp neither = submit_with("prompt", mp::nil());
  expect_rejected(neither, invalid_param, "exactly one of prompt", "bad");
  mp tokens = submit_with("prompt", mp::nil()).set("tokens", mp::arr({}));
  expect_rejected(tokens, invalid_param, "tokens is empty", "bad");
  expect_rejected(tokens.set("tokens", "abc"), malformed, "tokens must be an array", "bad");
  expect_rejected(tokens.set("tokens", mp::arr({1, "a"})), malformed, "tokens[1] must be a non-negative integer", "bad");
  expect_rejected(tokens.set("tokens", mp::arr({1, -5})), invalid_param, "tokens[1] must be a token id", "bad");
  expect_rejected(tokens.set("tokens", mp::arr({1, 1.5})), invalid_param, "tokens[1] must be a token id (an integer in [0, 2147483647]), got 1.5", "bad");
  expect_rejected(tokens.set("tokens", mp::arr({1, 1ull << 31})), invalid_param, "got 2147483648", "bad");
  decode_limits lim = test_limits();
  lim.max_prompt_tokens = 3;
  const std::vector<uint8_t> b = tokens.set("tokens", mp::arr({1, 2, 3, 4})).bytes();
  const decode_result d = decode_client_message(b.data(), b.size(), lim);
  EXPECT_EQ(d.error.code, errc::too_large);
  EXPECT_NE(d.error.message.find("tokens has 4 entries; at most 3"), std::string::npos) << d.error.message;
}

TEST(wire_client_reject, envelope_fields_of_submit) {
  expect_rejected(submit_with("add_bos", "yes"), malformed, "add_bos must be a bool", "bad");
  expect_rejected(submit_with("add_bos", 1), malformed, "add_bos must be a bool", "bad");
  expect_rejected(submit_with("stream", "no"), malformed, "stream must be a bool", "bad");
  expect_rejected(submit_with("priority", "high"), malformed, "priority must be an integer", "bad");
  expect_rejected(submit_with("priority", 1.5), invalid_param, "priority", "bad");
  expect_rejected(submit_with("priority", 1ll << 31), invalid_param, "priority must be an integer in", "bad");
  expect_rejected(submit_with("priority", -(1ll << 31) - 1), invalid_param, "priority", "bad");
  expect_rejected(submit_with("deadline_ms", -1), invalid_param, "deadline_ms must be >= 1", "bad");
  expect_rejected(submit_with("deadline_ms", 0), invalid_param, "deadline_ms must be >= 1", "bad");
  expect_rejected(submit_with("deadline_ms", "soon"), malformed, "deadline_ms", "bad");
  expect_rejected(submit_with("params", mp::arr({1})), malformed, "params must be a map", "bad");
  expect_rejected(submit_with("want", "all"), malformed, "want must be a map", "bad");
  expect_rejected(submit_with("want", mp::map({{"logprobs", 21}})), invalid_param, "want.logprobs must be in 0..20", "bad");
  expect_rejected(submit_with("want", mp::map({{"logprobs", -1}})), invalid_param, "want.logprobs", "bad");
  expect_rejected(submit_with("want", mp::map({{"logprobs", true}})), malformed, "want.logprobs", "bad");
  expect_rejected(submit_with("want", mp::map({{"token_ids", "x"}})), malformed, "want.token_ids must be a bool", "bad");
  expect_rejected(submit_with("want", mp::map({{"text", 1}})), malformed, "want.text must be a bool", "bad");
  expect_rejected(submit_with("model", "no-such-model"), unknown_model, "\"no-such-model\" is not loaded", "bad");
  expect_rejected(submit_with("model", 3), malformed, "model must be a string", "bad");
}

TEST(wire_client_reject, tags) {
  expect_rejected(submit_with("tags", mp::arr({"a"})), malformed, "tags must be a map", "bad");
  expect_rejected(submit_with("tags", mp::map({{"a", 1}})), malformed, "tags[\"a\"] must be a string", "bad");
  expect_rejected(submit_with("tags", mp::map({{1, "a"}})), malformed, "tags has a key of type integer", "bad");
  expect_rejected(submit_with("tags", mp::map({{"a", "\xff"}})), invalid_param, "tags[\"a\"] is not valid UTF-8", "bad");
  expect_rejected(submit_with("tags", mp::map({{"a", std::string(1025, 'v')}})), too_large, "tags[\"a\"]", "bad");
  std::vector<std::pair<mp, mp>> many;
  for (int i = 0; i < 65; ++i) many.emplace_back("k" + std::to_string(i), "v");
  expect_rejected(submit_with("tags", mp::map(many)), too_large, "tags has 65 entries; at most 64", "bad");
}

TEST(wire_client_reject, sampling_params) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  struct param_case {
    const char* key;
    mp value;
    expected_error want;
    const char* mentions;
  };
  const param_case cases[] = {
      {"max_tokens", 0, invalid_param, "params.max_tokens must be >= 1, got 0"},
      {"max_tokens", -1, invalid_param, "params.max_tokens must be >= 1, got -1"},
      {"max_tokens", "8", malformed, "params.max_tokens must be a non-negative integer, got string"},
      {"max_tokens", 1.5, invalid_param, "params.max_tokens must be >= 1, got 1.5"},
      {"temperature", -0.5, invalid_param, "params.temperature must be >= 0 (0 = greedy), got -0.5"},
      {"temperature", "hot", malformed, "params.temperature must be a number, got string"},
      {"temperature", nan, invalid_param, "params.temperature must be a finite number"},
      {"temperature", true, malformed, "params.temperature must be a number, got bool"},
      {"top_k", -1, invalid_param, "params.top_k must be an integer in [0, 2147483647] (0 = off), got -1"},
      {"top_k", "5", malformed, "params.top_k must be an integer"},
      {"top_k", 2.0, invalid_param, "params.top_k"},
      {"top_p", 0.0, invalid_param, "params.top_p must be in (0, 1], got 0"},
      {"top_p", 1.5, invalid_param, "params.top_p must be in (0, 1], got 1.5"},
      {"top_p", mp::f32(-0.25f), invalid_param, "params.top_p must be in (0, 1], got -0.25"},
      {"min_p", -0.1, invalid_param, "params.min_p must be in [0, 1], got -0.1"},
      {"min_p", 1.5, invalid_param, "params.min_p must be in [0, 1], got 1.5"},
      {"repetition_penalty", 0.0, invalid_param, "params.repetition_penalty must be > 0"},
      {"repetition_penalty", -1.0, invalid_param, "params.repetition_penalty must be > 0"},
      {"presence_penalty", "x", malformed, "params.presence_penalty must be a number"},
      {"presence_penalty", inf, invalid_param, "params.presence_penalty must be a finite number"},
      {"presence_penalty", 1e300, invalid_param, "params.presence_penalty must be a finite number"},
      {"frequency_penalty", nan, invalid_param, "params.frequency_penalty must be a finite number"},
      {"penalty_last_n", "x", malformed, "params.penalty_last_n must be an integer"},
      {"penalty_last_n", -2, invalid_param, "params.penalty_last_n must be an integer in [-1, 2147483647]"},
      {"penalty_last_n", 1ll << 31, invalid_param, "params.penalty_last_n"},
      {"seed", -1, invalid_param, "params.seed must be an integer in [0, 2^64), got -1"},
      {"seed", "x", malformed, "params.seed"},
      {"seed", 7.5, invalid_param, "params.seed"},
      {"stop", "x", malformed, "params.stop must be an array of strings, got string"},
      {"stop", mp::arr({1}), malformed, "params.stop[0] must be a string"},
      {"stop", mp::arr({"ok", ""}), invalid_param, "params.stop[1] is empty"},
      {"stop", mp::arr({"\xe2\x82"}), invalid_param, "params.stop[0] is not valid UTF-8"},
      {"stop", mp::arr({std::string(257, 'a')}), too_large, "params.stop[0] is 257 bytes; at most 256"},
      {"stop_token_ids", 5, malformed, "params.stop_token_ids must be an array of token ids"},
      {"stop_token_ids", mp::arr({-1}), invalid_param, "params.stop_token_ids[0] must be a token id"},
      {"stop_token_ids", mp::arr({1, "2"}), malformed, "params.stop_token_ids[1]"},
      {"ignore_eos", "x", malformed, "params.ignore_eos must be a bool"},
      {"min_tokens", -1, invalid_param, "params.min_tokens"},
      {"min_tokens", "x", malformed, "params.min_tokens"},
      {"min_tokens", 300, invalid_param, "params.min_tokens (300) must not exceed params.max_tokens (256)"},
      {"logit_bias", mp::arr({1}), malformed, "params.logit_bias must be a map"},
      {"logit_bias", mp::map({{1, 100.5}}), invalid_param, "params.logit_bias[1] must be in [-100, 100]"},
      {"logit_bias", mp::map({{1, -101.0}}), invalid_param, "params.logit_bias[1] must be in [-100, 100] (-100 bans the token), got -101"},
      {"logit_bias", mp::map({{1, nan}}), invalid_param, "params.logit_bias[1] must be a finite number"},
      {"logit_bias", mp::map({{"a", 1.0}}), malformed, "params.logit_bias keys must be token ids"},
      {"logit_bias", mp::map({{-3, 1.0}}), invalid_param, "params.logit_bias key must be a token id"},
      {"logit_bias", mp::map({{1, "x"}}), malformed, "params.logit_bias[1] must be a number"},
      {"logit_bias", mp::map({{4, 1.0}, {4, 2.0}}), invalid_param, "params.logit_bias has token 4 twice"},
      {"speculative", 3, malformed, "params.speculative must be a map {ngram, max_draft}"},
      {"speculative", mp::map({{"ngram", 0}}), invalid_param, "params.speculative.ngram must be an integer in [1, 16], got 0"},
      {"speculative", mp::map({{"ngram", 17}}), invalid_param, "params.speculative.ngram must be an integer in [1, 16]"},
      {"speculative", mp::map({{"max_draft", 33}}), invalid_param,
       "params.speculative.max_draft must be an integer in [0, 32] (0 = off), got 33"},
      {"speculative", mp::map({{"max_draft", "8"}}), malformed, "params.speculative.max_draft must be an integer"},
  };
  for (const param_case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + ": " + c.mentions);
    expect_rejected(submit_with_param(c.key, c.value), c.want, c.mentions, "bad");
  }
  std::vector<mp> stops(17, mp("s"));
  expect_rejected(submit_with_param("stop", mp::arr(stops)), too_large, "params.stop has 17 strings; at most 16", "bad");
  std::vector<std::pair<mp, mp>> bias;
  for (int i = 0; i < 1025; ++i) bias.emplace_back(i, 1.0);
  expect_rejected(submit_with_param("logit_bias", mp::map(bias)), too_large,
                  "params.logit_bias has 1025 entries; at most 1024", "bad");
  expect_rejected(submit_with_param("stop_token_ids", mp::arr(std::vector<mp>(1025, mp(1)))), too_large,
                  "params.stop_token_ids has 1025 entries", "bad");
}

TEST(wire_client_reject, cancel) {
  expect_rejected(envelope("cancel"), invalid_param, "cancel needs id");
  expect_rejected(envelope("cancel", {{"id", mp::nil()}}), invalid_param, "cancel needs id");
  expect_rejected(envelope("cancel", {{"ids", "a"}}), malformed, "ids must be an array");
  expect_rejected(envelope("cancel", {{"ids", mp::arr({"a", 5})}}), malformed, "ids[1] must be a string");
  expect_rejected(envelope("cancel", {{"ids", mp::arr({"a", ""})}}), invalid_param, "ids[1] must be 1..64 bytes");
  expect_rejected(envelope("cancel", {{"ids", mp::arr({std::string(65, 'i')})}}), too_large, "ids[0] is 65 bytes");
  expect_rejected(envelope("cancel", {{"id", "c"}, {"ids", mp::arr(std::vector<mp>(1025, mp("x")))}}), too_large,
                  "ids has 1025 entries", "c");
}

TEST(wire_client_reject, ping_nonce_is_bounded) {
  expect_rejected(envelope("ping", {{"nonce", std::string(2000, 'n')}}), too_large, "nonce is 2003 bytes");
}

TEST(wire_client_reject, first_error_in_message_order_wins) {
  mp m = envelope("submit", {{"id", "f"}, {"prompt", "x"}, {"stream", 1}, {"priority", "z"}});
  expect_rejected(m, malformed, "stream", "f");
}

}  // namespace
}  // namespace cortex::wire
