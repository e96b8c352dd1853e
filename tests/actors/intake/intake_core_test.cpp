// intake_core::admit: a submit is admitted (rid, queue position, the request
// resolved for the scheduler and the session) or rejected with the error its
// client gets, checks in order: draining, API key, validation, the key's
// tier, the waiting queue; a refused request consumes nothing.
#include <gtest/gtest.h>

#include <string>

#include "actors/auth/secrets.hpp"
#include "actors/intake/intake_core.hpp"
#include "tests/actors/stories_tokenizer.hpp"

namespace cortex {
namespace {

using testing_support::stories_tokenizer;

intake_config config(uint32_t max_waiting = 8) {
  intake_config c;
  c.limits.n_ctx = 64;
  c.limits.n_vocab = 512;
  c.max_waiting = max_waiting;
  c.seed = 7;
  return c;
}

intake_config with_access(intake_config c, const auth::tier_limits& t) {
  auth::keys_config k;
  k.tiers["t"] = t;
  k.keys.push_back({"k", "t", auth::sha256_hex("cs-k"), ""});
  c.access = auth::access_policy::create(k);
  return c;
}

generation_request request(const std::string& id, const std::string& key = "") {
  generation_request r;
  r.client_id = id;
  r.prompt = "Once upon a time";
  r.key_id = key;
  return r;
}

TEST(intake_core, admits_with_ids_in_order_and_the_params_resolved) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  intake_core core(config(), *tok);
  generation_request r = request("a");
  r.params.max_tokens = 1000;  // capped to what the context leaves
  r.params.json_schema = R"({"type": "boolean"})";
  r.priority = 3;
  const intake_decision first = core.admit(r);
  ASSERT_TRUE(first.ok()) << first.error.message;
  const intake_admission& a = first.admitted;
  EXPECT_EQ(a.rid, 1u);
  EXPECT_EQ(a.queue_pos, 0u);
  EXPECT_EQ(a.n_tokens_prompt, a.sequence.tokens_prompt.size());
  EXPECT_EQ(a.sequence.tokens_prompt, tok->encode("Once upon a time", true));
  EXPECT_EQ(a.sequence.rid, 1u);
  EXPECT_EQ(a.sequence.priority, 3);
  EXPECT_EQ(a.sequence.params.max_tokens, 64 - a.n_tokens_prompt);
  EXPECT_EQ(a.request.params.max_tokens, a.sequence.params.max_tokens);  // the session's and the scheduler's agree
  EXPECT_FALSE(a.request.params.grammar.empty());                        // the schema, as a grammar
  EXPECT_TRUE(a.request.params.json_schema.empty());
  EXPECT_EQ(a.request.client_id, "a");
  EXPECT_FALSE(a.ticket);  // no access control

  const intake_decision second = core.admit(request("b"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.admitted.rid, 2u);
  EXPECT_EQ(second.admitted.queue_pos, 1u);
  EXPECT_EQ(core.n_waiting(), 2u);
}

TEST(intake_core, a_request_the_validator_refuses_is_rejected_with_its_error) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  intake_core core(config(), *tok);
  generation_request r = request("a");
  r.use_tokens = true;
  r.tokens = {1, 9999};
  const intake_decision d = core.admit(r);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.error.code, errc::invalid_param);
  EXPECT_EQ(core.n_waiting(), 0u);
  EXPECT_EQ(core.admit(request("b")).admitted.rid, 1u);  // a rejection uses no id
}

TEST(intake_core, draining_rejects_every_submit_as_retryable) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  intake_core core(config(), *tok);
  core.drain();
  EXPECT_TRUE(core.draining());
  const intake_decision d = core.admit(request("a"));
  EXPECT_EQ(d.error.code, errc::draining);
  EXPECT_EQ(d.error.retry_after_ms, 1000u);
}

TEST(intake_core, a_full_queue_is_overloaded_until_a_request_leaves_it) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  intake_core core(config(1), *tok);
  const intake_decision a = core.admit(request("a"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(core.admit(request("b")).error.code, errc::overloaded);
  core.release(a.admitted.n_tokens_prompt);
  EXPECT_TRUE(core.admit(request("c")).ok());
}

TEST(intake_core, with_access_control_a_request_needs_a_key_and_the_tier_bounds_it) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  auth::tier_limits t;
  t.max_tokens = 8;
  intake_core core(with_access(config(), t), *tok);
  EXPECT_EQ(core.admit(request("a")).error.code, errc::unauthenticated);

  const intake_decision d = core.admit(request("b", "k"));  // no max_tokens: the tier's cap is the default
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.admitted.sequence.params.max_tokens, 8u);
  EXPECT_TRUE(d.admitted.ticket);

  generation_request more = request("c", "k");
  more.params.max_tokens = 9;
  more.params.max_tokens_given = true;  // asked for more than the tier allows: 403, not capped
  EXPECT_EQ(core.admit(more).error.code, errc::forbidden);
}

TEST(intake_core, a_request_the_queue_refuses_gives_back_what_the_tier_charged) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  auth::tier_limits t;
  t.requests_per_minute = 2;  // a fresh bucket holds two requests
  intake_core core(with_access(config(1), t), *tok);
  const intake_decision a = core.admit(request("a", "k"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(core.admit(request("b", "k")).error.code, errc::overloaded);  // refused by the queue, not charged
  core.release(a.admitted.n_tokens_prompt);
  const intake_decision c = core.admit(request("c", "k"));
  EXPECT_TRUE(c.ok()) << c.error.message;  // the second request token was given back
}

}  // namespace
}  // namespace cortex
