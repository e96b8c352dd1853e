// Speculative verification (sampler::verify): the token it returns for a
// one-hot draft must be distributed exactly as sample()'s, whatever the
// draft; greedy accepts exactly the argmax. Expected distributions come from
// the probabilities the logits are built from (first principles).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/sampler.hpp"

namespace cortex {
namespace {

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Chi-square of counts against probabilities (cells with p > 0), and fails
// on any count in a cell of probability 0.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(SamplerVerify, SampledTokenKeepsTheDistributionForEveryDraft) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const std::vector<float> logits = logits_of(p);
  const std::vector<int32_t> history;
  constexpr int n = 40000;
  for (int32_t draft = 0; draft < 4; ++draft) {
    sampling_params sp;
    sp.temperature = 1.0f;
    sp.seed = 1234 + static_cast<uint64_t>(draft);
    sampler s(sp);
    std::vector<int> counts(4, 0);
    int n_accepted = 0;
    for (int i = 0; i < n; ++i) {
      bool accepted = false;
      const sampled_token t = s.verify(logits.data(), 4, history, nullptr, draft, accepted);
      ASSERT_EQ(accepted, t.id == draft);
      n_accepted += accepted;
      ++counts[static_cast<size_t>(t.id)];
    }
    // 3 degrees of freedom, p = 0.001: 16.27. Always-accept gives ~n * 9.
    EXPECT_LT(chi_square(counts, p, n), 16.27) << "draft " << draft;
    // Acceptance rate is p(draft): 4 standard deviations.
    const double sd = std::sqrt(p[static_cast<size_t>(draft)] * (1 - p[static_cast<size_t>(draft)]) / n);
    EXPECT_NEAR(static_cast<double>(n_accepted) / n, p[static_cast<size_t>(draft)], 4 * sd) << "draft " << draft;
  }
}

TEST(SamplerVerify, DraftOutsideTheTruncatedSupportIsAlwaysRejected) {
  // top_k = 2 keeps tokens 3 and 2 (renormalized 0.4/0.7, 0.3/0.7); a draft
  // of token 0 has probability 0 after truncation.
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const std::vector<double> expect = {0, 0, 0.3 / 0.7, 0.4 / 0.7};
  const std::vector<float> logits = logits_of(p);
  sampling_params sp;
  sp.top_k = 2;
  sp.seed = 7;
  sampler s(sp);
  constexpr int n = 20000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < n; ++i) {
    bool accepted = true;
    const sampled_token t = s.verify(logits.data(), 4, {}, nullptr, 0, accepted);
    ASSERT_FALSE(accepted);
    ++counts[static_cast<size_t>(t.id)];
  }
  EXPECT_LT(chi_square(counts, expect, n), 10.83);  // 1 dof, p = 0.001
}

TEST(SamplerVerify, TemperatureAndMaskApplyBeforeTheRule) {
  // T = 0.5 squares the probabilities: 1, 4, 9, 16 over 30; a mask bans
  // token 3, leaving 1, 4, 9 over 14.
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const std::vector<double> expect = {1.0 / 14, 4.0 / 14, 9.0 / 14, 0};
  const std::vector<float> logits = logits_of(p);
  const uint64_t mask = 0b0111;
  sampling_params sp;
  sp.temperature = 0.5f;
  sp.seed = 99;
  sampler s(sp);
  constexpr int n = 30000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < n; ++i) {
    bool accepted = false;
    ++counts[static_cast<size_t>(s.verify(logits.data(), 4, {}, &mask, 1, accepted).id)];
  }
  EXPECT_LT(chi_square(counts, expect, n), 13.82);  // 2 dof, p = 0.001
}

TEST(SamplerVerify, GreedyAcceptsExactlyTheArgmax) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.9f};
  sampling_params sp;
  sp.temperature = 0.0f;
  sampler s(sp);
  for (int32_t draft = 0; draft < 4; ++draft) {
    bool accepted = false;
    const sampled_token t = s.verify(logits.data(), 4, {}, nullptr, draft, accepted);
    EXPECT_EQ(t.id, 1);
    EXPECT_EQ(accepted, draft == 1);
  }
}

TEST(SamplerVerify, PenaltiesSeeTheGivenHistory) {
  // Greedy with a repetition penalty of 4: token 1 (logit 2) seen in the
  // history drops to 0.5, so token 3 (1.9) wins; without it token 1 wins.
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.9f};
  sampling_params sp;
  sp.temperature = 0.0f;
  sp.repetition_penalty = 4.0f;
  sampler s(sp);
  bool accepted = false;
  EXPECT_EQ(s.verify(logits.data(), 4, {1}, nullptr, 1, accepted).id, 3);
  EXPECT_FALSE(accepted);
  EXPECT_EQ(s.verify(logits.data(), 4, {0}, nullptr, 1, accepted).id, 1);
  EXPECT_TRUE(accepted);
}

TEST(SamplerVerify, LogprobIsThatOfTheReturnedToken) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const std::vector<float> logits = logits_of(p);
  sampling_params sp;
  sp.seed = 3;
  sp.n_logprobs = 2;
  sampler s(sp);
  for (int i = 0; i < 50; ++i) {
    bool accepted = false;
    const sampled_token t = s.verify(logits.data(), 4, {}, nullptr, 2, accepted);
    EXPECT_NEAR(t.logprob, std::log(p[static_cast<size_t>(t.id)]), 1e-5);
    ASSERT_EQ(t.top.size(), 2u);
    EXPECT_EQ(t.top[0].first, 3);
  }
}

}  // namespace
}  // namespace cortex
