// What an engine step costs, learnt online from measured step times, so the
// scheduler can size prefill chunks to keep steps that carry decode tokens
// under a latency target. No CAF.
//
// Model: ms = fixed + per_token * n_tokens + per_kpos * n_attended / 1024,
// where n_attended counts query-key pairs of the causal attention (a token
// at position p attends to p + 1 positions). On a CPU the fixed part is
// mostly reading the weights once per step (decode is memory-bound), the
// per-token part the matmuls, the per-position part attention.
//
// Fit: exponentially weighted least squares on relative errors (each step
// weighs 1 / its time^2, so short decode steps count as much as long
// prefill steps; forgetting factor `decay` per observation, so the model
// follows a machine whose load changes), with a small ridge pull towards
// zero that keeps the 3x3 system solvable while the steps seen so far do not
// separate the terms (decode-only steps all look alike). Coefficients stay >= 0 (a negative term is dropped and the rest
// refitted), so predictions grow with the work and max_tokens_within can
// bisect. Robust to a noisy, shared machine: once calibrated, an
// observation far from the prediction (a step stalled by another process)
// counts with a Huber weight, k * scale / |relative residual|, so one outlier moves
// the fit a little rather than doubling it.
//
// Not thread-safe: one owner (the scheduler core).
#pragma once

#include <array>
#include <cstdint>

namespace cortex {

// The work of a step (or of part of one), additive over entries.
struct step_work {
  double n_tokens = 0;    // tokens computed
  double n_attended = 0;  // sum over tokens of the positions each attends to

  // One entry: n tokens at positions [pos0, pos0 + n). REQUIRES: pos0, n >= 0.
  static step_work entry(int32_t pos0, int32_t n) {
    const double p = pos0, k = n;
    return {k, k * p + k * (k + 1) / 2};
  }
  step_work& operator+=(const step_work& o) {
    n_tokens += o.n_tokens;
    n_attended += o.n_attended;
    return *this;
  }
};

struct step_cost_config {
  double decay = 0.97;          // weight of the past per new observation, (0, 1]
  int32_t n_warmup = 4;         // observations before estimate() holds (and before outliers are damped)
  double huber_k = 3.0;         // residuals beyond k scales count with weight k * scale / |residual|
};

class step_cost_model {
 public:
  static constexpr int n_terms = 3;  // fixed, per token, per 1024 attended positions
  using coefficients = std::array<double, n_terms>;

  explicit step_cost_model(const step_cost_config& cfg = {});

  // Records that a step doing `w` took `ms` (wall time of its forward pass).
  // Ignores non-finite or negative times and empty steps.
  void observe(const step_work& w, double ms);

  // True once n_warmup observations came in and they told steps of
  // different sizes apart (until then predictions are not to be planned on).
  bool calibrated() const { return n_obs_ >= cfg_.n_warmup && n_sizes_ >= 2; }
  // Predicted ms of a step doing `w`; 0 before the first observation.
  double predict_ms(const step_work& w) const;
  // The largest n in [0, n_max] such that a step doing base plus n tokens
  // at positions [pos0, pos0 + n) is predicted to take at most target_ms
  // (0 if even n = 1 is over it).
  int32_t max_tokens_within(const step_work& base, int32_t pos0, int32_t n_max, double target_ms) const;

  const coefficients& coef() const { return coef_; }
  int32_t n_observations() const { return n_obs_; }
  // The typical |residual| / predicted time (exponentially weighted), the outlier scale.
  double residual_scale() const { return scale_rel_; }

 private:
  static std::array<double, n_terms> features(const step_work& w);
  void refit();

  step_cost_config cfg_;
  std::array<std::array<double, n_terms>, n_terms> xtx_{};  // weighted sum of x x^T
  std::array<double, n_terms> xty_{};                        // weighted sum of x y
  coefficients coef_{};
  double scale_rel_ = 0;
  double first_tokens_ = -1;  // tokens of the first step seen (to notice a second size)
  int32_t n_obs_ = 0;
  int32_t n_sizes_ = 0;       // 1 after the first observation, 2 once a different size came
};

}  // namespace cortex
