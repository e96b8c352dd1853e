// step_cost_model: fits a known linear cost from noisy synthetic step times,
// shrugs off stalled steps, follows a machine that slows down, and sizes
// chunks exactly at the target. The truth is chosen here (a CPU-like split:
// a fixed weight read, a per-token matmul cost, a small attention term), so
// every expected value comes from it, not from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "actors/scheduler/step_cost_model.hpp"

namespace cortex {
namespace {

struct truth {
  double fixed = 30, per_token = 4.5, per_kpos = 0.4;  // ms, ms/token, ms per 1024 attended positions
  double ms(const step_work& w) const { return fixed + per_token * w.n_tokens + per_kpos * w.n_attended / 1024; }
};

// A mix a serving engine sees: decode batches of 1..16 sequences at
// positions 60..300, sometimes with a prefill chunk of 16..512 tokens.
step_work random_step(std::mt19937_64& rng) {
  step_work w;
  const int n_decode = int(rng() % 17);
  for (int i = 0; i < n_decode; ++i) w += step_work::entry(60 + int(rng() % 240), 1);
  if (n_decode == 0 || rng() % 3 == 0) w += step_work::entry(int(rng() % 64), 16 + int(rng() % 497));
  return w;
}

double noisy(std::mt19937_64& rng, double ms, double rel) {
  return ms * (1 + rel * (double(rng() >> 11) * 0x1.0p-53 * 2 - 1));
}

// Feeds n random steps, each timed by measure(rng, the step's true ms).
template <class Measure>
void train(step_cost_model& m, std::mt19937_64& rng, const truth& t, int n, Measure measure) {
  for (int i = 0; i < n; ++i) {
    const step_work w = random_step(rng);
    m.observe(w, measure(rng, t.ms(w)));
  }
}
const auto exact = [](std::mt19937_64&, double ms) { return ms; };

step_work decode_batch(int n, int32_t pos) {
  step_work w;
  for (int i = 0; i < n; ++i) w += step_work::entry(pos, 1);
  return w;
}

TEST(step_cost_model, converges_to_the_true_costs_under_noise) {
  const truth t;
  step_cost_model m;
  std::mt19937_64 rng(7);
  train(m, rng, t, 300, [](std::mt19937_64& r, double ms) { return noisy(r, ms, 0.05); });
  ASSERT_TRUE(m.calibrated());
  EXPECT_NEAR(m.coef()[0], t.fixed, 0.1 * t.fixed);
  EXPECT_NEAR(m.coef()[1], t.per_token, 0.1 * t.per_token);
  // Steps the scheduler plans: 16 decodes alone, 16 decodes + 64 prefill, a 512-token prefill.
  const step_work decode16 = decode_batch(16, 100);
  step_work mixed = decode16;
  mixed += step_work::entry(0, 64);
  for (const step_work& w : {decode16, mixed, step_work::entry(0, 512)}) {
    EXPECT_NEAR(m.predict_ms(w), t.ms(w), 0.04 * t.ms(w)) << w.n_tokens << " tokens";
  }
}

TEST(step_cost_model, stalled_steps_barely_move_the_fit) {
  const truth t;
  step_cost_model m;
  std::mt19937_64 rng(11);
  train(m, rng, t, 400, [](std::mt19937_64& r, double ms) {
    const bool stalled = r() % 10 == 0;  // another process took the cores: 3-6x as long
    return ms * (stalled ? 3.0 + double(r() % 4) : 1.0);
  });
  const step_work decode16 = decode_batch(16, 100);
  // A plain average would put every prediction ~40% high; the robust fit stays near the typical step.
  EXPECT_NEAR(m.predict_ms(decode16), t.ms(decode16), 0.12 * t.ms(decode16));
  EXPECT_NEAR(m.predict_ms(step_work::entry(0, 256)), t.ms(step_work::entry(0, 256)), 0.12 * t.ms(step_work::entry(0, 256)));
}

TEST(step_cost_model, follows_a_machine_that_slows_down) {
  truth t;
  step_cost_model m;
  std::mt19937_64 rng(3);
  train(m, rng, t, 200, exact);
  t.fixed *= 2;  // the steady state moves (not a few outliers): the fit must follow
  t.per_token *= 2;
  t.per_kpos *= 2;
  train(m, rng, t, 300, exact);
  const step_work probe = step_work::entry(0, 128);
  EXPECT_NEAR(m.predict_ms(probe), t.ms(probe), 0.05 * t.ms(probe));
}

TEST(step_cost_model, not_calibrated_until_warm_and_two_step_sizes_seen) {
  step_cost_model m;
  EXPECT_FALSE(m.calibrated());
  EXPECT_EQ(m.predict_ms(step_work::entry(0, 100)), 0.0);
  for (int i = 0; i < 10; ++i) m.observe(step_work::entry(50, 1), 30);  // one size only: the terms cannot be told apart
  EXPECT_FALSE(m.calibrated());
  m.observe(step_work::entry(0, 200), 930);
  EXPECT_TRUE(m.calibrated());
}

TEST(step_cost_model, ignores_unusable_observations) {
  step_cost_model m;
  m.observe(step_work{}, 50);  // nothing computed
  m.observe(step_work::entry(0, 8), -1);
  m.observe(step_work::entry(0, 8), std::numeric_limits<double>::quiet_NaN());
  m.observe(step_work::entry(0, 8), std::numeric_limits<double>::infinity());
  EXPECT_EQ(m.n_observations(), 0);
  EXPECT_EQ(m.coef()[0], 0.0);
}

TEST(step_cost_model, coefficients_stay_non_negative) {
  step_cost_model m;
  // Bigger steps that took less time (noise on a busy machine) would fit a
  // negative per-token cost; a prediction must never fall as work grows.
  m.observe(step_work::entry(0, 10), 100);
  m.observe(step_work::entry(0, 100), 60);
  m.observe(step_work::entry(0, 200), 50);
  m.observe(step_work::entry(0, 20), 90);
  for (double c : m.coef()) EXPECT_GE(c, 0.0);
  EXPECT_LE(m.predict_ms(step_work::entry(0, 10)), m.predict_ms(step_work::entry(0, 300)));
}

TEST(step_cost_model, max_tokens_within_is_the_last_chunk_under_the_target) {
  const truth t;
  step_cost_model m;
  std::mt19937_64 rng(5);
  train(m, rng, t, 100, exact);  // exact times: the fit is the truth (up to the ridge)
  const step_work decode8 = decode_batch(8, 200);
  const double target = 2 * m.predict_ms(decode8);
  const int32_t n = m.max_tokens_within(decode8, 40, 512, target);
  step_work at = decode8, over = decode8;
  at += step_work::entry(40, n);
  over += step_work::entry(40, n + 1);
  EXPECT_LE(m.predict_ms(at), target);
  EXPECT_GT(m.predict_ms(over), target);
  // From the truth: 30 + 4.5 (8 + n) + attention ~ 2 (30 + 36): n is about 14.
  EXPECT_GE(n, 12);
  EXPECT_LE(n, 15);
  EXPECT_EQ(m.max_tokens_within(decode8, 40, 5, target), 5);           // capped by n_max
  EXPECT_EQ(m.max_tokens_within(decode8, 40, 512, target / 4), 0);     // even one token is over
  EXPECT_EQ(m.max_tokens_within(step_work{}, 0, 512, 1e9), 512);
}

}  // namespace
}  // namespace cortex
