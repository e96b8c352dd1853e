// Credentials as each gateway presents them.
#include <gtest/gtest.h>

#include "actors/auth/credentials.hpp"
#include "actors/auth/secrets.hpp"

namespace cortex::auth {
namespace {

std::shared_ptr<access_policy> policy() {
  keys_config c;
  c.tiers["t"] = {};
  c.keys.push_back({"alice", "t", sha256_hex("cs-alice"), ""});
  return access_policy::create(c);
}

TEST(credentials, bearer_token_shapes) {
  EXPECT_EQ(bearer_token("Bearer cs-x"), std::optional<std::string_view>("cs-x"));
  EXPECT_EQ(bearer_token("bearer   cs-x  "), std::optional<std::string_view>("cs-x"));
  EXPECT_EQ(bearer_token("BEARER\tcs-x"), std::optional<std::string_view>("cs-x"));
  EXPECT_FALSE(bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l").has_value());
  EXPECT_FALSE(bearer_token("Bearer").has_value());
  EXPECT_FALSE(bearer_token("Bearer ").has_value());
  EXPECT_FALSE(bearer_token("Bearercs-x").has_value());
  EXPECT_FALSE(bearer_token("Bearer a b").has_value());
  EXPECT_FALSE(bearer_token("").has_value());
}

TEST(credentials, bearer_check_names_what_to_fix) {
  auto p = policy();
  auto ok = check_bearer(*p, "Bearer cs-alice");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.key_id, "alice");
  auto missing = check_bearer(*p, "");
  EXPECT_EQ(missing.error.code, errc::unauthenticated);
  EXPECT_NE(missing.error.message.find("Authorization: Bearer"), std::string::npos);
  auto wrong = check_bearer(*p, "Bearer cs-bob");
  EXPECT_EQ(wrong.error.code, errc::unauthenticated);
  EXPECT_EQ(wrong.error.message.find("cs-bob"), std::string::npos);  // never echo a secret
  EXPECT_EQ(check_bearer(*p, "Basic cs-alice").error.code, errc::unauthenticated);
}

TEST(credentials, auth_field_check) {
  auto p = policy();
  EXPECT_EQ(check_auth_field(*p, "cs-alice").key_id, "alice");
  auto missing = check_auth_field(*p, "");
  EXPECT_EQ(missing.error.code, errc::unauthenticated);
  EXPECT_NE(missing.error.message.find("`auth`"), std::string::npos);
  EXPECT_EQ(check_auth_field(*p, "cs-mallory").error.code, errc::unauthenticated);
}

}  // namespace
}  // namespace cortex::auth
