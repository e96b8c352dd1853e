// One client request = one admission, however many engine sequences it
// becomes (auth.md "Limits": requests_per_minute counts requests,
// max_concurrent requests admitted; a refused request consumes nothing).
#include <gtest/gtest.h>

#include "actors/auth/secrets.hpp"
#include "actors/intake/admission_groups.hpp"

namespace cortex {
namespace {

std::shared_ptr<auth::access_policy> policy(auth::tier_limits t) {
  auth::keys_config c;
  c.tiers["t"] = t;
  c.keys.push_back({"k", "t", auth::sha256_hex("cs-k"), ""});
  return auth::access_policy::create(c);
}

generation_request member(const std::string& group, uint32_t size, request_kind kind = request_kind::generate) {
  generation_request r;
  r.key_id = "k";
  r.admission_group = group;
  r.group_size = size;
  r.kind = kind;
  return r;
}

const auth::key_usage& usage(const std::shared_ptr<auth::access_policy>& p) {
  static auth::key_usage u;
  u = p->usage().at(0);
  return u;
}

TEST(admission_groups, choices_are_one_request_charged_n_times_max_tokens) {
  auth::tier_limits t;
  t.requests_per_minute = 2;
  t.max_concurrent = 1;
  t.tokens_per_minute = 1000;
  auto p = policy(t);
  admission_groups g(p);
  auto a0 = g.admit(member("g1", 3), 10, 100);  // charge 10 + 3 * 100
  ASSERT_TRUE(a0.error.is_ok()) << a0.error.message;
  auto a1 = g.admit(member("g1", 3), 10, 100);
  auto a2 = g.admit(member("g1", 3), 10, 100);
  ASSERT_TRUE(a1.error.is_ok());
  ASSERT_EQ(a1.ticket, a0.ticket);
  EXPECT_EQ(g.n_open(), 0u);  // all members came
  EXPECT_EQ(usage(p).admitted, 1u);
  EXPECT_EQ(usage(p).running, 1u);
  // Concurrency 1 is taken by the whole request.
  EXPECT_EQ(g.admit(member("", 1), 1, 1).error.code, errc::rate_limited);
  for (auto* a : {&a0, &a1}) a->ticket->finish(50);
  EXPECT_EQ(usage(p).running, 1u);  // one choice still runs
  a2.ticket->finish(50);
  EXPECT_EQ(usage(p).running, 0u);
  EXPECT_EQ(usage(p).tokens, 10u + 150u);  // prompt once, 3 x 50 generated; 150 of 300 refunded
}

TEST(admission_groups, a_refused_group_consumes_nothing_and_refuses_every_member) {
  auth::tier_limits t;
  t.max_tokens = 16;
  t.requests_per_minute = 1;
  auto p = policy(t);
  admission_groups g(p);
  auto m = member("g", 2);
  m.params.max_tokens = 17;
  m.params.max_tokens_given = true;
  EXPECT_EQ(g.admit(m, 5, 17).error.code, errc::forbidden);
  EXPECT_EQ(g.admit(m, 5, 17).error.code, errc::forbidden);  // the second choice: the same answer, no admission
  EXPECT_EQ(usage(p).admitted, 0u);
  EXPECT_EQ(g.n_open(), 0u);
  auto ok = g.admit(member("", 1), 5, 16);  // the one request of the minute is still there
  EXPECT_TRUE(ok.error.is_ok());
}

TEST(admission_groups, embedding_inputs_join_with_their_own_prompt_tokens) {
  auth::tier_limits t;
  t.max_concurrent = 1;
  t.tokens_per_minute = 100;
  auto p = policy(t);
  admission_groups g(p);
  std::vector<std::shared_ptr<auth::admission_ticket>> tickets;
  for (int i = 0; i < 3; ++i) {
    auto a = g.admit(member("e", 3, request_kind::embed), 40, 0);  // 120 tokens in all: the last two in debt
    ASSERT_TRUE(a.error.is_ok()) << i << a.error.message;
    tickets.push_back(a.ticket);
  }
  EXPECT_EQ(usage(p).admitted, 1u);
  for (auto& tk : tickets) tk->finish(0);
  EXPECT_EQ(usage(p).running, 0u);
  EXPECT_EQ(usage(p).tokens, 120u);
  auto next = g.admit(member("", 1, request_kind::embed), 1, 0);  // the bucket is in debt: wait
  EXPECT_EQ(next.error.code, errc::rate_limited);
}

TEST(admission_groups, a_group_closed_early_releases_when_its_running_members_end) {
  auth::tier_limits t;
  t.max_concurrent = 1;
  auto p = policy(t);
  admission_groups g(p);
  auto a0 = g.admit(member("g", 4), 5, 10);
  ASSERT_TRUE(a0.error.is_ok());
  EXPECT_EQ(g.n_open(), 1u);
  g.close("g");  // the client request ended before choices 1..3 were submitted
  EXPECT_EQ(g.n_open(), 0u);
  EXPECT_EQ(usage(p).running, 1u);
  a0.ticket->finish(3);
  EXPECT_EQ(usage(p).running, 0u);
}

TEST(admission_groups, undo_of_the_first_member_refunds_and_refuses_the_rest) {
  auth::tier_limits t;
  t.requests_per_minute = 1;
  auto p = policy(t);
  admission_groups g(p);
  auto m = member("g", 2);
  auto a0 = g.admit(m, 5, 10);
  ASSERT_TRUE(a0.error.is_ok());
  g.undo(m, a0.ticket, {errc::overloaded, "queue full", 100});
  EXPECT_EQ(g.admit(m, 5, 10).error.code, errc::overloaded);
  EXPECT_EQ(usage(p).admitted, 0u);
  EXPECT_EQ(usage(p).running, 0u);
  EXPECT_TRUE(g.admit(member("", 1), 5, 10).error.is_ok());  // the request token came back
}

}  // namespace
}  // namespace cortex
