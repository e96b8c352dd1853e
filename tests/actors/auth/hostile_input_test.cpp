// Hostile input to the parsers an outsider reaches: the Authorization
// header (any bytes a client sends) and the keys file (an operator's typo,
// a truncated write). Mutations of valid inputs with fixed seeds: every
// result is either a clear error or a value that keeps the file's
// invariants; nothing crashes. (Coverage-guided fuzzing of the same entry
// points belongs with the fuzzing work, issue 11.)
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "actors/auth/credentials.hpp"
#include "actors/auth/keys_file.hpp"
#include "actors/auth/secrets.hpp"

namespace cortex::auth {
namespace {

const std::string valid_file = R"({"tiers": {"free": {"requests_per_minute": 20, "tokens_per_minute": 20000,
  "max_concurrent": 2, "max_tokens": 512, "max_priority": 0}, "pro": {}},
  "keys": [{"id": "alice", "tier": "pro", "sha256": ")" + sha256_hex("cs-alice") + R"(",
            "curve_public": "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"},
           {"id": "bob", "tier": "free", "sha256": ")" + sha256_hex("cs-bob") + R"("}]})";

std::string mutate(std::string s, std::mt19937& rng) {
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n && !s.empty(); ++i) {
    const size_t at = rng() % s.size();
    switch (rng() % 5) {
      case 0: s[at] = static_cast<char>(rng() % 256); break;
      case 1: s.erase(at, 1 + rng() % 8); break;
      case 2: s.insert(at, 1, "{}[]\",:0-e\\\x00\xff"[rng() % 13]); break;
      case 3: s.resize(at); break;
      default: s.insert(at, s.substr(rng() % s.size(), 1 + rng() % 16)); break;
    }
  }
  return s;
}

TEST(hostile_input, mutated_keys_files_are_errors_or_consistent) {
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text = mutate(valid_file, rng);
    auto r = parse_keys_file(text, "k.json");
    if (!r) {
      ASSERT_FALSE(r.error().message.empty());
      ASSERT_EQ(r.error().code, errc::invalid_param);
      continue;
    }
    ++parsed;
    std::set<std::string> ids;
    for (const auto& k : r->keys) {
      ASSERT_TRUE(r->tiers.count(k.tier)) << text;
      ASSERT_TRUE(ids.insert(k.id).second) << text;
      ASSERT_EQ(k.sha256.size(), 64u);
      ASSERT_EQ(k.sha256.find_first_not_of("0123456789abcdef"), std::string::npos);
      ASSERT_TRUE(k.curve_public.empty() || is_z85_key(k.curve_public));
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations (e.g. in a value) still parse: the check above ran
}

TEST(hostile_input, authorization_headers_never_crash_or_pass_without_the_secret) {
  keys_config c;
  c.tiers["t"] = {};
  c.keys.push_back({"alice", "t", sha256_hex("cs-alice"), ""});
  auto p = access_policy::create(c);
  std::mt19937 rng(99);
  const std::string good = "Bearer cs-alice";
  for (int i = 0; i < 20000; ++i) {
    const std::string h = mutate(good, rng);
    auto r = check_bearer(*p, h);
    auto token = bearer_token(h);
    if (r.ok()) {
      ASSERT_EQ(r.key_id, "alice");
      ASSERT_TRUE(token && *token == "cs-alice") << h;
    } else {
      ASSERT_EQ(r.error.code, errc::unauthenticated);
    }
  }
  EXPECT_FALSE(check_bearer(*p, std::string(1 << 20, 'B')).ok());
  EXPECT_FALSE(check_bearer(*p, std::string("Bearer cs-alice\0x", 17)).ok());
}

}  // namespace
}  // namespace cortex::auth
