// Sampler properties with fixed seeds: greedy, truncation supports, bans,
// penalties, determinism, and the empirical distribution of temperature
// sampling against softmax (chi-square).
#include "model/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace cortex {
namespace {

std::vector<float> random_logits(int n, uint64_t seed, float lo = -5.0f, float hi = 5.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Logits whose softmax is exactly the given probabilities (up to rounding).
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::map<int32_t, int> histogram(sampler& s, const std::vector<float>& logits, int n_draws) {
  std::map<int32_t, int> h;
  const std::vector<int32_t> history;
  for (int i = 0; i < n_draws; ++i) ++h[s.sample(logits.data(), static_cast<int>(logits.size()), history).id];
  return h;
}

std::set<int32_t> support(const std::map<int32_t, int>& h) {
  std::set<int32_t> out;
  for (const auto& [id, n] : h) out.insert(id);
  return out;
}

TEST(sampler, greedy_is_argmax_with_ties_to_lowest_id) {
  sampling_params p;
  p.temperature = 0.0f;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto l = random_logits(1000, seed);
    sampler s(p);
    const auto want = std::max_element(l.begin(), l.end()) - l.begin();
    EXPECT_EQ(s.sample(l.data(), 1000, {}).id, want);
  }
  std::vector<float> tie = {0.0f, 1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
  sampler s(p);
  EXPECT_EQ(s.sample(tie.data(), 6, {}).id, 2);
}

TEST(sampler, top_k_one_is_greedy_at_any_temperature) {
  for (float t : {0.3f, 1.0f, 5.0f}) {
    sampling_params p;
    p.temperature = t;
    p.top_k = 1;
    p.seed = 7;
    sampler s(p);
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const auto l = random_logits(300, seed, -1.0f, 1.0f);
      const auto want = std::max_element(l.begin(), l.end()) - l.begin();
      ASSERT_EQ(s.sample(l.data(), 300, {}).id, want) << "t=" << t;
    }
  }
}

TEST(sampler, top_k_restricts_support_to_the_k_best) {
  sampling_params p;
  p.top_k = 3;
  p.temperature = 2.0f;
  p.seed = 3;
  sampler s(p);
  const std::vector<float> l = {0.1f, 0.9f, 0.2f, 0.8f, 0.7f, 0.3f};
  EXPECT_EQ(support(histogram(s, l, 3000)), (std::set<int32_t>{1, 3, 4}));
}

TEST(sampler, banned_tokens_are_never_sampled) {
  sampling_params p;
  p.temperature = 1.5f;
  p.seed = 11;
  p.logit_bias = {{0, -100.0f}, {4, -100.0f}, {9, -1000.0f}, {12345, -100.0f}};
  p.n_logprobs = 10;
  std::vector<float> l(10, 0.0f);
  l[0] = 5.0f;  // the favourite, banned
  sampler s(p);
  const auto h = histogram(s, l, 5000);
  EXPECT_EQ(support(h), (std::set<int32_t>{1, 2, 3, 5, 6, 7, 8}));
  const auto t = s.sample(l.data(), 10, {});
  EXPECT_EQ(t.top.size(), 7u);  // banned ids have probability 0: not listed
  for (const auto& [id, lp] : t.top) EXPECT_NEAR(lp, std::log(1.0 / 7.0), 1e-5) << id;

  p.temperature = 0.0f;
  sampler greedy(p);
  l[3] = 4.0f;
  EXPECT_EQ(greedy.sample(l.data(), 10, {}).id, 3);
}

TEST(sampler, positive_bias_shifts_the_logit) {
  sampling_params p;
  p.temperature = 0.0f;
  p.logit_bias = {{2, 3.0f}};
  const std::vector<float> l = {1.0f, 2.5f, 0.0f};
  sampler s(p);
  const auto t = s.sample(l.data(), 3, {});
  EXPECT_EQ(t.id, 2);
  const double z = std::log(std::exp(1.0) + std::exp(2.5) + std::exp(3.0));
  EXPECT_NEAR(t.logprob, 3.0 - z, 1e-5);
}

TEST(sampler, penalties_change_exactly_the_tokens_in_the_window) {
  sampling_params p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.penalty_last_n = 4;
  p.n_logprobs = 6;
  const std::vector<float> l = {1.0f, 3.0f, -1.0f, 2.0f, 0.5f, 4.0f};
  // Id 5 is outside the window (too old); 1 appears twice, 2 once, 99 is
  // out of vocabulary.
  const std::vector<int32_t> history = {5, 1, 2, 99, 1};
  std::vector<double> want(l.begin(), l.end());
  want[1] = 3.0 / 2.0 - 2 * 0.25 - 0.5;   // positive: divided
  want[2] = -1.0 * 2.0 - 1 * 0.25 - 0.5;  // negative: multiplied
  sampler s(p);
  const auto t = s.sample(l.data(), 6, history);
  EXPECT_EQ(t.id, 5);
  ASSERT_EQ(t.top.size(), 6u);
  // Log-probabilities differ exactly by the adjusted logits' differences.
  std::map<int32_t, double> lp;
  for (const auto& [id, v] : t.top) lp[id] = v;
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(lp[i] - lp[0], want[i] - want[0], 1e-5) << i;

  p.penalty_last_n = 0;  // disabled
  sampler off(p);
  const auto u = off.sample(l.data(), 6, history);
  for (const auto& [id, v] : u.top) lp[id] = v;
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(lp[i] - lp[0], l[i] - l[0], 1e-5) << i;
}

TEST(sampler, same_seed_same_tokens_whatever_else_runs) {
  sampling_params p;
  p.temperature = 1.0f;
  p.top_p = 0.95f;
  p.seed = 1234;
  const auto l = random_logits(500, 9, -2.0f, 2.0f);
  sampler a(p), b(p);
  sampling_params other_p = p;
  other_p.seed = 99;
  sampler other(other_p), c(other_p);
  std::vector<int32_t> seq_a, seq_b, seq_other, seq_c;
  for (int i = 0; i < 200; ++i) {
    seq_a.push_back(a.sample(l.data(), 500, {}).id);
    seq_other.push_back(other.sample(l.data(), 500, {}).id);  // interleaved
  }
  for (int i = 0; i < 200; ++i) seq_b.push_back(b.sample(l.data(), 500, {}).id);
  for (int i = 0; i < 200; ++i) seq_c.push_back(c.sample(l.data(), 500, {}).id);
  EXPECT_EQ(seq_a, seq_b);
  EXPECT_EQ(seq_other, seq_c);
  EXPECT_NE(seq_a, seq_other);
}

TEST(sampler, temperature_sampling_matches_softmax_chi_square) {
  const std::vector<float> l = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f};
  for (float t : {0.7f, 1.0f, 1.8f}) {
    sampling_params p;
    p.temperature = t;
    p.seed = 2024;
    sampler s(p);
    const int n = 30000;
    const auto h = histogram(s, l, n);
    std::vector<double> prob(l.size());
    double z = 0.0;
    for (size_t i = 0; i < l.size(); ++i) z += prob[i] = std::exp(l[i] / t);
    double chi2 = 0.0;
    for (size_t i = 0; i < l.size(); ++i) {
      const double expected = n * prob[i] / z;
      const auto it = h.find(static_cast<int32_t>(i));
      const double observed = it == h.end() ? 0.0 : it->second;
      chi2 += (observed - expected) * (observed - expected) / expected;
    }
    // 5 degrees of freedom: P(chi2 > 20.52) = 0.001.
    EXPECT_LT(chi2, 20.52) << "t=" << t;
  }
}

// For each (value, support) case: set `knob` to value, sample 4000 times from
// probabilities {0.05, 0.5, 0.15, 0.3}, and compare the ids seen with support.
void expect_supports(float sampling_params::*knob,
                     const std::vector<std::pair<float, std::set<int32_t>>>& cases) {
  const auto l = logits_of({0.05, 0.5, 0.15, 0.3});
  for (const auto& [value, want] : cases) {
    sampling_params p;
    p.*knob = value;
    p.seed = 5;
    sampler s(p);
    EXPECT_EQ(support(histogram(s, l, 4000)), want) << "knob value " << value;
  }
}

TEST(sampler, top_p_keeps_the_smallest_prefix_reaching_p) {
  expect_supports(&sampling_params::top_p,
                  {{0.4f, {1}}, {0.7f, {1, 3}}, {0.85f, {1, 3, 2}}, {0.99f, {1, 3, 2, 0}}});
}

TEST(sampler, min_p_keeps_tokens_above_a_fraction_of_the_best) {
  // p_max = 0.5: min_p 0.25 keeps p >= 0.125, 0.5 keeps p >= 0.25, ...
  expect_supports(&sampling_params::min_p,
                  {{0.25f, {1, 2, 3}}, {0.5f, {1, 3}}, {0.9f, {1}}, {0.05f, {0, 1, 2, 3}}});
}

// The top-p nucleus by a full sort in double: the shortest prefix of tokens
// by decreasing logit whose mass reaches top_p.
std::set<int32_t> exact_nucleus(const std::vector<float>& l, float top_p) {
  std::vector<int32_t> order(l.size());
  for (size_t i = 0; i < l.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  double z = 0.0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  std::set<int32_t> nucleus;
  double cum = 0.0;
  for (int32_t id : order) {
    if (cum >= top_p * z) break;
    cum += std::exp(static_cast<double>(l[id]));
    nucleus.insert(id);
  }
  return nucleus;
}

TEST(sampler, top_p_over_a_wide_nucleus) {
  // Flat-ish logits: the nucleus holds hundreds of tokens, deeper than the
  // first partial sort.
  const auto l = random_logits(1000, 77, 0.0f, 1.0f);
  const std::set<int32_t> nucleus = exact_nucleus(l, 0.6f);
  ASSERT_GT(nucleus.size(), 100u);
  sampling_params p;
  p.top_p = 0.6f;
  p.seed = 8;
  sampler s(p);
  const auto seen = support(histogram(s, l, 5000));
  EXPECT_TRUE(std::includes(nucleus.begin(), nucleus.end(), seen.begin(), seen.end()));
  EXPECT_GT(seen.size(), nucleus.size() * 9 / 10);  // and it is not narrower
}

// The nucleus ends inside a run of equal logits: ties go to the lower ids.
// p = {0.649, 0.088 x4, ~0}: cumulative 0.649, 0.737, 0.825 >= 0.8 -> {0, 1, 2}.
TEST(sampler, top_p_breaks_ties_at_the_edge_by_id) {
  std::vector<float> l(3000, -20.0f);
  l[0] = 5.0f;
  for (int i = 1; i <= 4; ++i) l[i] = 3.0f;
  sampling_params p;
  p.top_p = 0.8f;
  p.seed = 9;
  sampler s(p);
  EXPECT_EQ(support(histogram(s, l, 3000)), (std::set<int32_t>{0, 1, 2}));
}

// Logits spread over 30 nats (the nucleus spans many of the sampler's
// internal buckets) in shuffled id order: the support is exactly the sorted
// prefix reaching top_p, computed here by a full sort.
TEST(sampler, top_p_matches_a_full_sort_over_a_wide_range) {
  const int n_vocab = 5000;
  std::vector<float> l(n_vocab);
  for (int i = 0; i < n_vocab; ++i) l[i] = -0.006f * static_cast<float>(i);  // 0 .. -30
  std::shuffle(l.begin(), l.end(), std::mt19937_64(3));
  for (const float top_p : {0.3f, 0.9f}) {
    const std::set<int32_t> nucleus = exact_nucleus(l, top_p);
    ASSERT_GT(nucleus.size(), 40u);
    sampling_params p;
    p.top_p = top_p;
    p.temperature = 50.0f;  // nearly uniform over the nucleus: every member shows up
    p.seed = 10;
    sampler s(p);
    const auto seen = support(histogram(s, l, 25 * static_cast<int>(nucleus.size())));
    EXPECT_EQ(seen, nucleus) << "top_p " << top_p;
  }
}

TEST(sampler, logprobs_are_the_full_distribution_before_temperature) {
  sampling_params p;
  p.temperature = 0.5f;
  p.top_k = 2;
  p.seed = 1;
  p.n_logprobs = 3;
  const std::vector<float> l = {0.0f, 1.0f, 2.0f, -1.0f};
  double z = 0.0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  sampler s(p);
  for (int i = 0; i < 20; ++i) {
    const auto t = s.sample(l.data(), 4, {});
    ASSERT_TRUE(t.id == 1 || t.id == 2);
    EXPECT_NEAR(t.logprob, l[t.id] - std::log(z), 1e-5);
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_EQ(t.top[0].first, 2);
    EXPECT_EQ(t.top[1].first, 1);
    EXPECT_EQ(t.top[2].first, 0);
    EXPECT_NEAR(t.top[2].second, -std::log(z), 1e-5);
  }
}

}  // namespace
}  // namespace cortex
