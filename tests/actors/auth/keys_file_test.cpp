// The keys file: auth.md's example parses; every documented error is an
// error whose message names the place.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "actors/auth/keys_file.hpp"
#include "actors/auth/secrets.hpp"

namespace cortex::auth {
namespace {

const std::string hash_a(64, 'a'), hash_b(64, 'b');

std::string file(const std::string& tiers, const std::string& keys) {
  return R"({"tiers": )" + tiers + R"(, "keys": )" + keys + "}";
}

void expect_error(const std::string& text, const std::string& needle) {
  auto r = parse_keys_file(text, "k.json");
  ASSERT_FALSE(r.has_value()) << text;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.rfind("k.json: ", 0), 0u) << r.error().message;
}

TEST(keys_file, parses_the_documented_example) {
  auto r = parse_keys_file(file(R"({"free": {"requests_per_minute": 20, "tokens_per_minute": 20000, "max_concurrent": 2,
                                              "max_tokens": 512, "max_priority": 0},
                                    "pro": {"requests_per_minute": 600, "tokens_per_minute": 1000000, "max_concurrent": 32,
                                            "max_tokens": 4096, "max_priority": 10}})",
                                R"([{"id": "alice", "tier": "pro", "sha256": ")" + std::string(64, 'A') +
                                    R"(", "curve_public": "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"}])"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const tier_limits& free = r->tiers.at("free");
  EXPECT_EQ(*free.requests_per_minute, 20);
  EXPECT_EQ(*free.tokens_per_minute, 20000);
  EXPECT_EQ(*free.max_concurrent, 2u);
  EXPECT_EQ(*free.max_tokens, 512u);
  EXPECT_EQ(*free.max_priority, 0);
  ASSERT_EQ(r->keys.size(), 1u);
  EXPECT_EQ(r->keys[0].id, "alice");
  EXPECT_EQ(r->keys[0].sha256, std::string(64, 'a'));  // normalised to lowercase
  EXPECT_EQ(r->keys[0].curve_public, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
}

TEST(keys_file, absent_fields_mean_no_limit) {
  auto r = parse_keys_file(file(R"({"open": {}})", R"([{"id": "a", "tier": "open", "sha256": ")" + hash_a + R"("}])"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const tier_limits& t = r->tiers.at("open");
  EXPECT_FALSE(t.requests_per_minute || t.tokens_per_minute || t.max_concurrent || t.max_tokens || t.max_priority);
}

TEST(keys_file, errors_name_the_place) {
  const std::string key_a = R"({"id": "a", "tier": "t", "sha256": ")" + hash_a + R"("})";
  expect_error("{", "not valid JSON");
  expect_error("[]", "must be a JSON object");
  expect_error(R"({"tiers": {}, "keys": [], "extra": 1})", "unknown top-level field \"extra\"");
  expect_error(file(R"({"t": {"rpm": 3}})", "[]"), "unknown field tiers.t.rpm");
  expect_error(file(R"({"t": {"requests_per_minute": 0}})", "[]"), "tiers.t.requests_per_minute must be a number > 0");
  expect_error(file(R"({"t": {"max_concurrent": 1.5}})", "[]"), "tiers.t.max_concurrent must be an integer >= 1");
  expect_error(file(R"({"t": {}})", R"([{"id": "a", "tier": "t", "sha256": ")" + hash_a + R"(", "secret": "x"}])"),
               "unknown field keys[0].secret");
  expect_error(file(R"({"t": {}})", R"([{"id": "a", "tier": "gold", "sha256": ")" + hash_a + R"("}])"),
               "unknown tier \"gold\"");
  expect_error(file(R"({"t": {}})", "[" + key_a + "," + R"({"id": "a", "tier": "t", "sha256": ")" + hash_b + R"("}])"),
               "duplicate key id \"a\"");
  expect_error(file(R"({"t": {}})", "[" + key_a + "," + R"({"id": "b", "tier": "t", "sha256": ")" + hash_a + R"("}])"),
               "same sha256");
  expect_error(file(R"({"t": {}})", R"([{"id": "a", "tier": "t", "sha256": "cs-notahash"}])"), "64 hex digits");
  expect_error(file(R"({"t": {}})", R"([{"id": "a", "tier": "t"}])"), "lacks \"sha256\"");
  expect_error(file(R"({"t": {}})", R"([{"id": "a b", "tier": "t", "sha256": ")" + hash_a + R"("}])"), "keys[0].id");
  expect_error(file(R"({"t": {}})", R"([{"id": "a", "tier": "t", "sha256": ")" + hash_a + R"(", "curve_public": "short"}])"),
               "40-character Z85");
}

TEST(keys_file, add_key_creates_then_appends_and_refuses_duplicates) {
  char dir[] = "/tmp/cortex_keys_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/keys.json";
  bool created = false;
  ASSERT_TRUE(add_key_to_file(path, {"alice", "free", hash_a, ""}, &created).is_ok());
  EXPECT_TRUE(created);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the file names who may use the service: owner only
  ASSERT_TRUE(add_key_to_file(path, {"bob", "free", hash_b, ""}, &created).is_ok());
  EXPECT_FALSE(created);
  auto dup = add_key_to_file(path, {"alice", "free", std::string(64, 'c'), ""});
  EXPECT_FALSE(dup.is_ok());
  EXPECT_NE(dup.message.find("duplicate key id"), std::string::npos);
  auto tier = add_key_to_file(path, {"carol", "gold", std::string(64, 'c'), ""});
  EXPECT_NE(tier.message.find("no tier \"gold\""), std::string::npos) << tier.message;
  auto r = load_keys_file(path);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->keys.size(), 2u);
  EXPECT_EQ(r->keys[1].id, "bob");
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(keys_file, missing_file_is_a_clear_error) {
  auto r = load_keys_file("/nonexistent/keys.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("cannot open keys file /nonexistent/keys.json"), std::string::npos);
}

}  // namespace
}  // namespace cortex::auth
