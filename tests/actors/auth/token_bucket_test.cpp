// The bucket's arithmetic from auth.md's definition: capacity one minute's
// amount, refilled continuously at per_minute / 60 s.
#include <gtest/gtest.h>

#include "actors/auth/token_bucket.hpp"

namespace cortex::auth {
namespace {

using namespace std::chrono_literals;
const token_bucket::time_point t0{};

TEST(token_bucket, starts_full_and_bursts_a_minutes_worth) {
  token_bucket b(60, t0);  // one token per second
  for (int i = 0; i < 60; ++i) {
    ASSERT_EQ(b.wait_ms(1, t0), 0u) << i;
    b.take(1, t0);
  }
  EXPECT_EQ(b.wait_ms(1, t0), 1000u);  // empty: one token takes a second
}

TEST(token_bucket, refills_continuously_and_never_above_capacity) {
  token_bucket b(60, t0);
  b.take(60, t0);
  EXPECT_EQ(b.wait_ms(1, t0 + 400ms), 600u);
  EXPECT_EQ(b.wait_ms(1, t0 + 1s), 0u);
  EXPECT_NEAR(b.level(t0 + 30s), 30.0, 1e-9);
  EXPECT_NEAR(b.level(t0 + 1h), 60.0, 1e-9);  // capped at one minute's amount
}

TEST(token_bucket, wait_covers_a_large_charge) {
  token_bucket b(6000, t0);  // 100 per second
  b.take(6000, t0);
  EXPECT_EQ(b.wait_ms(250, t0), 2500u);
  EXPECT_EQ(b.wait_ms(250, t0 + 2500ms), 0u);
}

TEST(token_bucket, refund_returns_tokens_up_to_capacity) {
  token_bucket b(100, t0);
  b.take(80, t0);
  b.refund(30, t0);
  EXPECT_NEAR(b.level(t0), 50.0, 1e-9);
  b.refund(1000, t0);
  EXPECT_NEAR(b.level(t0), 100.0, 1e-9);
}

TEST(token_bucket, new_rate_keeps_level_clamped) {
  token_bucket b(100, t0);
  b.take(20, t0);
  b.set_per_minute(50, t0);
  EXPECT_NEAR(b.level(t0), 50.0, 1e-9);
  EXPECT_EQ(b.wait_ms(51, t0 + 0ms) > 0, true);
  b.set_per_minute(600, t0);  // a raise keeps the level, refills faster
  EXPECT_NEAR(b.level(t0 + 1s), 60.0, 1e-9);
}

}  // namespace
}  // namespace cortex::auth
