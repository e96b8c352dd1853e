// Hostile input to the client decoder: it must never crash, throw, or
// allocate beyond O(message size), and every answer must be one of
// protocol.md's errors. Fixed seeds.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_decode.hpp"
#include "messages/wire/utf8.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::envelope;
using test::mp;

decode_result decode(const std::vector<uint8_t>& b) {
  decode_limits lim;
  lim.model_names = {"m"};
  return decode_client_message(b.data(), b.size(), lim);
}

// An answer is either ok with a type, or an error protocol.md lets decode give.
void expect_well_formed_answer(const decode_result& d) {
  if (d.ok()) {
    EXPECT_NE(d.type, client_message_type::none);
    // Chat turns and template variables pass on as JSON that parses.
    for (const std::string* text : {&d.request.messages_json, &d.request.chat_template_kwargs_json}) {
      if (!text->empty()) {
        EXPECT_TRUE(nlohmann::json::accept(*text)) << *text;
      }
    }
    return;
  }
  static const std::set<errc> decode_errors = {errc::malformed,   errc::invalid_param, errc::unknown_type,
                                               errc::unknown_model, errc::too_large,    errc::unsupported_version};
  EXPECT_EQ(decode_errors.count(d.error.code), 1u) << errc_name(d.error.code) << ": " << d.error.message;
  EXPECT_FALSE(d.error.message.empty());
  EXPECT_LE(d.id.size(), 64u);
  EXPECT_TRUE(is_valid_utf8(d.id));
}

std::vector<std::vector<uint8_t>> valid_messages() {
  return {
      envelope("submit", {{"id", "s1"}, {"prompt", "Once upon a time"},
                          {"params", mp::map({{"temperature", 0.5}, {"stop", mp::arr({"\n", "end"})},
                                              {"logit_bias", mp::map({{3, -100}, {4, 2.5}})}})},
                          {"want", mp::map({{"token_ids", true}, {"logprobs", 5}})},
                          {"tags", mp::map({{"a", "b"}})}, {"model", "m"}})
          .bytes(),
      envelope("submit", {{"id", "s2"}, {"tokens", mp::arr({1, 2, 3, 400})}, {"stream", false}}).bytes(),
      envelope("submit", {{"id", "s3"},
                          {"messages", mp::arr({mp::map({{"role", "system"}, {"content", "Be \"brief\"\n"}}),
                                                mp::map({{"role", "user"},
                                                         {"content", mp::arr({mp::map({{"type", "text"},
                                                                                       {"text", "caf\xc3\xa9"}})})}}),
                                                mp::map({{"role", "assistant"},
                                                         {"tool_calls", mp::arr({mp::map({{"w", mp::f32(0.5f)},
                                                                                          {"n", -3}, {"z", mp::nil()}})})}})})},
                          {"chat_template_kwargs", mp::map({{"enable_thinking", false}, {"x", mp::arr({1.5})}})}})
          .bytes(),
      envelope("cancel", {{"ids", mp::arr({"a", "b"})}}).bytes(),
      envelope("ping", {{"nonce", mp::arr({1, "x", mp::map({{"k", mp::nil()}})})}}).bytes(),
      envelope("stats").bytes(),
  };
}

TEST(wire_hostile, every_strict_prefix_of_a_valid_message_is_malformed) {
  for (const std::vector<uint8_t>& full : valid_messages()) {
    ASSERT_TRUE(decode(full).ok()) << decode(full).error.message;
    for (size_t n = 0; n < full.size(); ++n) {
      const decode_result d = decode(std::vector<uint8_t>(full.begin(), full.begin() + n));
      ASSERT_FALSE(d.ok()) << "prefix of " << n << " bytes accepted";
      EXPECT_EQ(d.error.code, errc::malformed) << d.error.message;
    }
  }
}

TEST(wire_hostile, random_bytes) {
  std::mt19937 rng(1234);
  int n_ok = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b(rng() % 64);
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
    if (!b.empty() && iter % 2 == 0) b[0] = static_cast<uint8_t>(0x80 | (rng() % 16));  // often a fixmap header
    const decode_result d = decode(b);
    expect_well_formed_answer(d);
    n_ok += d.ok();
    const server_message m = decode_server_message(b.data(), b.size());
    (void)m;
  }
  EXPECT_EQ(n_ok, 0);  // random bytes essentially never form {"v": 1, "t": <type>}
}

TEST(wire_hostile, mutated_valid_messages) {
  std::mt19937 rng(99);
  const std::vector<std::vector<uint8_t>> seeds = valid_messages();
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b = seeds[iter % seeds.size()];
    const int n_mutations = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_mutations; ++k) {
      const size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0: b[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: b[at] = static_cast<uint8_t>(rng()); break;
        case 2: b.insert(b.begin() + static_cast<long>(at), static_cast<uint8_t>(rng())); break;
        default:
          if (b.size() > 1) b.erase(b.begin() + static_cast<long>(at));
          break;
      }
    }
    expect_well_formed_answer(decode(b));
  }
}

TEST(wire_hostile, deep_nesting_is_refused_without_recursion) {
  for (uint8_t header : {uint8_t{0x91}, uint8_t{0x81}}) {  // [[[...]]] and {k: {k: ...}}
    std::vector<uint8_t> b;
    const int depth = 200000;
    for (int i = 0; i < depth; ++i) {
      b.push_back(header);
      if (header == 0x81) b.push_back(0xa1), b.push_back('k');
    }
    b.push_back(0xc0);
    const decode_result d = decode(b);
    EXPECT_EQ(d.error.code, errc::malformed);
    EXPECT_NE(d.error.message.find("nesting deeper than"), std::string::npos) << d.error.message;
  }
  // Deep but inside the limit: a nonce nested 10 levels is fine.
  mp nonce = mp(1);
  for (int i = 0; i < 10; ++i) nonce = mp::arr({nonce});
  EXPECT_TRUE(decode(envelope("ping", {{"nonce", nonce}}).bytes()).ok());
}

TEST(wire_hostile, huge_declared_lengths_are_refused_before_allocation) {
  // Each declares ~4 billion elements (64+ GiB as msgpack objects) in a few bytes.
  const std::vector<std::string> headers = {
      std::string("\xdd\xff\xff\xff\xff", 5),  // array32
      std::string("\xdf\xff\xff\xff\xff", 5),  // map32
  };
  for (const std::string& h : headers) {
    EXPECT_EQ(decode(std::vector<uint8_t>(h.begin(), h.end())).error.code, errc::malformed);
    mp m = envelope("submit", {{"id", "h"}, {"tokens", mp::raw(h)}});
    const decode_result d = decode(m.bytes());
    EXPECT_EQ(d.error.code, errc::malformed);
    EXPECT_NE(d.error.message.find("declares more elements"), std::string::npos) << d.error.message;
  }
  // Strings and binaries longer than the message: truncated.
  for (const char* h : {"\xdb\xff\xff\xff\xff", "\xc6\xff\xff\xff\xff", "\xc9\xff\xff\xff\xff\x01"}) {
    const std::string s(h, h[0] == '\xc9' ? 6 : 5);
    EXPECT_EQ(decode(envelope("ping", {{"nonce", mp::raw(s)}}).bytes()).error.code, errc::malformed);
  }
  // Many nested arrays each declaring as many elements as the whole message has bytes.
  std::vector<uint8_t> b;
  for (int i = 0; i < 8; ++i) b.insert(b.end(), {0xdc, 0x00, 0x40});  // array16 of 64
  EXPECT_EQ(decode(b).error.code, errc::malformed);
}

TEST(wire_hostile, large_but_valid_arrays_are_read_within_limits) {
  std::vector<mp> ids(100000, mp(7));
  const decode_result d = decode(envelope("submit", {{"id", "big"}, {"tokens", mp::arr(ids)}}).bytes());
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.request.tokens.size(), 100000u);
}

TEST(wire_hostile, utf8_validator) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  EXPECT_TRUE(is_valid_utf8(std::string("a\0b", 3)));                  // NUL is a character
  EXPECT_FALSE(is_valid_utf8("\x80"));                                 // stray continuation
  EXPECT_FALSE(is_valid_utf8("\xc3"));                                 // truncated
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));                             // truncated
  EXPECT_FALSE(is_valid_utf8("\xc1\xbf"));                             // overlong
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));                         // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xb0\x80"));                         // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));                     // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc3\x28"));                             // bad continuation
}

}  // namespace
}  // namespace cortex::wire
