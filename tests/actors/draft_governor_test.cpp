// draft_governor: the draft length that maximises expected tokens per unit
// of step time, worked out by hand from the acceptance and a linear cost
// (cost_ratio(k) = 1 + r * k): E(k) = 1 + a + ... + a^k, gain E(k) / (1 + r k).
#include <gtest/gtest.h>

#include "actors/scheduler/draft_governor.hpp"

namespace cortex {
namespace {

draft_record with_acceptance(double accepted, double rejected) {
  draft_record r;
  r.accepted = accepted;
  r.rejected = rejected;
  return r;
}

draft_cost_fn linear(double r) {
  return [r](int32_t k) { return 1.0 + r * k; };
}

TEST(draft_governor, a_costly_verify_with_middling_acceptance_does_not_draft) {
  // stories260K's measured verify: 1 + 8 tokens at 4.68x a decode (r = 0.46).
  // a = 0.62: E(1) / 1.46 = 1.11, E(2) / 1.92 = 1.04... best 1.11 >= 1.05: one token.
  EXPECT_EQ(choose_draft_length(with_acceptance(62, 38), 8, linear(0.46)), 1);
  // a = 0.5: E(1) / 1.46 = 1.03 < 1.05: none.
  EXPECT_EQ(choose_draft_length(with_acceptance(50, 50), 8, linear(0.46)), 0);
}

TEST(draft_governor, cheap_verify_and_high_acceptance_drafts_the_most) {
  // tinyllama Q4_0: 1 + 8 at 2.11x (r = 0.14); a = 0.95: the gain still grows at k = 8.
  EXPECT_EQ(choose_draft_length(with_acceptance(95, 5), 8, linear(0.14)), 8);
  // ... but never beyond n_max.
  EXPECT_EQ(choose_draft_length(with_acceptance(95, 5), 3, linear(0.14)), 3);
  EXPECT_EQ(choose_draft_length(with_acceptance(95, 5), 0, linear(0.14)), 0);
  // a = 0.5, r = 0.14: E(1)/1.14 = 1.316, E(2)/1.28 = 1.367, E(3)/1.42 = 1.320: two.
  EXPECT_EQ(choose_draft_length(with_acceptance(1, 1), 8, linear(0.14)), 2);
}

TEST(draft_governor, rejections_lower_the_estimate_and_probes_recover_it) {
  draft_record r;
  EXPECT_DOUBLE_EQ(r.acceptance(), 0.5);
  for (int i = 0; i < 5; ++i) record_draft(r, 4, 0);
  EXPECT_LT(r.acceptance(), 0.15);  // 0.9^5 / (0.9^5 + 0.9^5 + 4.1) = 0.11
  EXPECT_EQ(choose_draft_length(r, 8, linear(0.14)), 0);
  draft_governor_config cfg;
  for (int i = 0; i + 1 < cfg.probe_every; ++i) {
    EXPECT_EQ(choose_draft_length(r, 8, linear(0.14)), 0) << "step " << i;
    record_draft(r, 0, 0);
  }
  EXPECT_EQ(choose_draft_length(r, 8, linear(0.14)), cfg.probe_length) << "a probe after probe_every plain steps";
  for (int i = 0; i < 6; ++i) record_draft(r, 2, 2);  // the text starts repeating: probes accepted
  EXPECT_GT(r.acceptance(), 0.7);
  EXPECT_GE(choose_draft_length(r, 8, linear(0.14)), 3);
}

}  // namespace
}  // namespace cortex
