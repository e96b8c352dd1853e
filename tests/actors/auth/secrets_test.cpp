// SHA-256 against FIPS 180-2's examples, base64url against RFC 4648's
// vectors (section 10, with the URL-safe alphabet of section 5).
#include <gtest/gtest.h>

#include "actors/auth/secrets.hpp"

namespace cortex::auth {
namespace {

TEST(secrets, sha256_matches_fips_180_examples) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(secrets, base64url_matches_rfc_4648_vectors) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  EXPECT_EQ(base64url("fooba"), "Zm9vYmE");
  EXPECT_EQ(base64url("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64url(std::string("\xfb\xff", 2)), "-_8");  // the two URL-safe characters
}

TEST(secrets, new_secret_has_the_documented_shape_and_differs_each_time) {
  auto a = new_secret(), b = new_secret();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->size(), 46u);  // "cs-" + 43 base64url characters of 32 bytes
  EXPECT_EQ(a->substr(0, 3), "cs-");
  EXPECT_EQ(a->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 3), std::string::npos);
  EXPECT_NE(*a, *b);
}

TEST(secrets, constant_time_equality_is_equality) {
  EXPECT_TRUE(equal_constant_time("abcd", "abcd"));
  EXPECT_FALSE(equal_constant_time("abcd", "abce"));
  EXPECT_FALSE(equal_constant_time("abcd", "abc"));
}

TEST(secrets, z85_key_shape) {
  EXPECT_TRUE(is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"));  // ZeroMQ's documented example server public key
  EXPECT_FALSE(is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf"));
  EXPECT_FALSE(is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf\""));
}

}  // namespace
}  // namespace cortex::auth
