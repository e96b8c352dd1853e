// The policy on a fake clock: auth.md's rules (charges, refunds, 403 vs
// 429, concurrency released on every end, reload keeps running requests).
#include <gtest/gtest.h>

#include "actors/auth/access_policy.hpp"
#include "actors/auth/secrets.hpp"

namespace cortex::auth {
namespace {

using namespace std::chrono_literals;

struct fake_clock {
  std::chrono::steady_clock::time_point t{};
  access_policy::clock_fn fn() {
    return [this] { return t; };
  }
};

keys_config config(tier_limits free, tier_limits pro = {}) {
  keys_config c;
  c.tiers["free"] = free;
  c.tiers["pro"] = pro;
  c.keys.push_back({"alice", "free", sha256_hex("cs-alice"), ""});
  c.keys.push_back({"bob", "pro", sha256_hex("cs-bob"), "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"});
  return c;
}

admission_request req(const std::string& key, uint32_t prompt, uint32_t max_tokens, int32_t priority = 0) {
  return {key, prompt, max_tokens, max_tokens, priority};
}

TEST(access_policy, authenticates_by_secret_hash_and_curve_key) {
  auto p = access_policy::create(config({}));
  EXPECT_EQ(p->authenticate_secret("cs-alice"), std::optional<std::string>("alice"));
  EXPECT_EQ(p->authenticate_secret("cs-bob"), std::optional<std::string>("bob"));
  EXPECT_FALSE(p->authenticate_secret("cs-mallory").has_value());
  EXPECT_FALSE(p->authenticate_secret(sha256_hex("cs-alice")).has_value());  // the hash is not the secret
  EXPECT_FALSE(p->authenticate_secret("").has_value());
  EXPECT_EQ(p->authenticate_curve("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"), std::optional<std::string>("bob"));
  EXPECT_FALSE(p->authenticate_curve("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID").has_value());
}

TEST(access_policy, tier_caps_are_403_and_consume_nothing) {
  fake_clock clk;
  tier_limits t;
  t.max_tokens = 100;
  t.max_priority = 1;
  t.requests_per_minute = 1;
  auto p = access_policy::create(config(t), clk.fn());
  auto over = p->admit(req("alice", 5, 101));
  EXPECT_EQ(over.error.code, errc::forbidden);
  EXPECT_NE(over.error.message.find("max_tokens 101"), std::string::npos) << over.error.message;
  EXPECT_EQ(p->admit(req("alice", 5, 10, 2)).error.code, errc::forbidden);
  auto ok = p->admit(req("alice", 5, 100, 1));  // the one request per minute is still there
  EXPECT_TRUE(ok.error.is_ok()) << ok.error.message;
  ASSERT_TRUE(ok.ticket);
}

TEST(access_policy, a_charge_no_bucket_could_hold_is_403_not_429) {
  tier_limits t;
  t.tokens_per_minute = 1000;
  auto p = access_policy::create(config(t));
  auto r = p->admit(req("alice", 600, 401));
  EXPECT_EQ(r.error.code, errc::forbidden);
  EXPECT_TRUE(p->admit(req("alice", 600, 400)).error.is_ok());
}

TEST(access_policy, requests_per_minute_burst_then_429_with_the_wait) {
  fake_clock clk;
  tier_limits t;
  t.requests_per_minute = 3;  // one per 20 s
  auto p = access_policy::create(config(t), clk.fn());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(p->admit(req("alice", 1, 1)).error.is_ok()) << i;
  auto r = p->admit(req("alice", 1, 1));
  EXPECT_EQ(r.error.code, errc::rate_limited);
  EXPECT_EQ(r.error.retry_after_ms, 20000u);
  clk.t += 19999ms;
  EXPECT_EQ(p->admit(req("alice", 1, 1)).error.code, errc::rate_limited);
  clk.t += 1ms;
  EXPECT_TRUE(p->admit(req("alice", 1, 1)).error.is_ok());
}

TEST(access_policy, tokens_charged_at_admission_and_unused_part_refunded) {
  fake_clock clk;
  tier_limits t;
  t.tokens_per_minute = 1000;
  auto p = access_policy::create(config(t), clk.fn());
  auto a = p->admit(req("alice", 100, 500));  // charge 600, 400 left
  ASSERT_TRUE(a.error.is_ok());
  auto b = p->admit(req("alice", 100, 400));  // needs 500
  EXPECT_EQ(b.error.code, errc::rate_limited);
  EXPECT_EQ(b.error.retry_after_ms, 6000u);   // 100 tokens at 1000 per minute
  a.ticket->finish(50);                       // 450 of max_tokens unused: refunded, 850 left
  auto d = p->admit(req("alice", 100, 400));  // 350 left (while d's ticket lives)
  EXPECT_TRUE(d.error.is_ok());
  auto c = p->admit(req("alice", 100, 400));
  EXPECT_EQ(c.error.code, errc::rate_limited);
  EXPECT_EQ(c.error.retry_after_ms, 9000u);  // 150 missing
  auto use = p->usage();
  ASSERT_EQ(use[0].id, "alice");
  EXPECT_EQ(use[0].tokens, 150u);  // prompt + completion of the ended request
  EXPECT_EQ(use[0].admitted, 2u);
  EXPECT_EQ(use[0].rejected_limited, 2u);
}

TEST(access_policy, finish_is_once_and_destruction_releases) {
  tier_limits t;
  t.max_concurrent = 1;
  t.tokens_per_minute = 100;
  auto p = access_policy::create(config(t));
  {
    auto a = p->admit(req("alice", 10, 20));
    ASSERT_TRUE(a.error.is_ok());
    auto busy = p->admit(req("alice", 10, 20));
    EXPECT_EQ(busy.error.code, errc::rate_limited);
    EXPECT_GT(busy.error.retry_after_ms, 0u);
    a.ticket->finish(20);
    a.ticket->finish(0);  // a second finish does nothing (no second refund)
  }
  EXPECT_EQ(p->usage()[0].tokens, 30u);
  {
    auto b = p->admit(req("alice", 10, 20));  // 70 - 30 = 40 left after the first; this takes 30
    ASSERT_TRUE(b.error.is_ok()) << b.error.message;
  }  // destroyed without finish (e.g. a session that died): the slot is free again and max_tokens refunded
  EXPECT_EQ(p->usage()[0].running, 0u);
  EXPECT_TRUE(p->admit(req("alice", 10, 20)).error.is_ok());
}

TEST(access_policy, keys_are_isolated) {
  tier_limits free;
  free.requests_per_minute = 1;
  auto p = access_policy::create(config(free));
  EXPECT_TRUE(p->admit(req("alice", 1, 1)).error.is_ok());
  EXPECT_EQ(p->admit(req("alice", 1, 1)).error.code, errc::rate_limited);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(p->admit(req("bob", 1, 1)).error.is_ok());
}

TEST(access_policy, reload_revokes_new_requests_but_running_ones_finish) {
  fake_clock clk;
  tier_limits t;
  t.requests_per_minute = 2;
  auto p = access_policy::create(config(t), clk.fn());
  auto running = p->admit(req("alice", 1, 10));
  ASSERT_TRUE(running.error.is_ok());
  keys_config next = config(t);
  next.keys.erase(next.keys.begin());  // alice revoked
  next.keys.push_back({"carol", "free", sha256_hex("cs-carol"), ""});
  p->reload(next);
  EXPECT_FALSE(p->authenticate_secret("cs-alice").has_value());
  EXPECT_EQ(p->authenticate_secret("cs-carol"), std::optional<std::string>("carol"));
  EXPECT_EQ(p->admit(req("alice", 1, 1)).error.code, errc::unauthenticated);
  EXPECT_TRUE(p->admit(req("carol", 1, 1)).error.is_ok());
  auto use = p->usage();
  auto alice = std::find_if(use.begin(), use.end(), [](const key_usage& u) { return u.id == "alice"; });
  ASSERT_NE(alice, use.end());
  EXPECT_TRUE(alice->revoked);
  EXPECT_EQ(alice->running, 1u);
  running.ticket->finish(3);  // the running request ends normally
  use = p->usage();
  EXPECT_TRUE(std::none_of(use.begin(), use.end(), [](const key_usage& u) { return u.id == "alice"; }));
}

TEST(access_policy, reload_keeps_a_surviving_keys_bucket) {
  fake_clock clk;
  tier_limits t;
  t.requests_per_minute = 2;
  auto p = access_policy::create(config(t), clk.fn());
  EXPECT_TRUE(p->admit(req("alice", 1, 1)).error.is_ok());
  EXPECT_TRUE(p->admit(req("alice", 1, 1)).error.is_ok());
  p->reload(config(t));  // same file again: the empty bucket is not refilled by a reload
  EXPECT_EQ(p->admit(req("alice", 1, 1)).error.code, errc::rate_limited);
}

TEST(access_policy, default_max_tokens_is_bounded_by_the_cap) {
  tier_limits t;
  t.max_tokens = 64;
  auto p = access_policy::create(config(t));
  EXPECT_EQ(p->max_tokens_cap("alice"), std::optional<uint32_t>(64));
  EXPECT_FALSE(p->max_tokens_cap("bob").has_value());
  admission_request r = req("alice", 1, 64);
  r.max_tokens_asked = 0;  // not asked: not checked against the cap
  EXPECT_TRUE(p->admit(r).error.is_ok());
}

}  // namespace
}  // namespace cortex::auth

namespace cortex::auth {
namespace {

TEST(access_policy, a_reverted_admission_consumes_nothing) {
  fake_clock clk;
  tier_limits t;
  t.requests_per_minute = 1;
  t.tokens_per_minute = 100;
  t.max_concurrent = 1;
  auto p = access_policy::create(config(t), clk.fn());
  auto a = p->admit(req("alice", 40, 60));
  ASSERT_TRUE(a.error.is_ok());
  a.ticket->revert();
  auto use = p->usage();
  EXPECT_EQ(use[0].admitted, 0u);
  EXPECT_EQ(use[0].running, 0u);
  EXPECT_EQ(use[0].tokens, 0u);
  auto b = p->admit(req("alice", 40, 60));  // the full minute's amount of both buckets is there again
  EXPECT_TRUE(b.error.is_ok()) << b.error.message;
}

}  // namespace
}  // namespace cortex::auth
