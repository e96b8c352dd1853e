#include "actors/scheduler/step_cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace cortex {

namespace {

// Ridge added to the diagonal, relative to the observations' weights (1 /
// ms^2): tiny beside a few real observations, it only decides the split
// between terms the data cannot tell apart.
constexpr double k_ridge = 1e-9;

}  // namespace

step_cost_model::step_cost_model(const step_cost_config& cfg) : cfg_(cfg) {}

std::array<double, step_cost_model::n_terms> step_cost_model::features(const step_work& w) {
  return {1.0, w.n_tokens, w.n_attended / 1024.0};
}

double step_cost_model::predict_ms(const step_work& w) const {
  const auto x = features(w);
  double y = 0;
  for (int i = 0; i < n_terms; ++i) y += coef_[i] * x[i];
  return y;
}

void step_cost_model::observe(const step_work& w, double ms) {
  if (!std::isfinite(ms) || ms < 0 || w.n_tokens <= 0) return;
  // Relative errors: each observation weighs 1 / size^2, so a 2-second
  // prefill step does not drown the 100 ms decode steps whose latency the
  // budget is about. The size is the prediction once there is one (the
  // measured time itself would favour steps that happened to run fast).
  const double pred = calibrated() ? predict_ms(w) : 0;
  const double size = std::max(pred > 0 ? pred : ms, 1.0);
  double weight = 1.0 / (size * size);
  if (calibrated()) {
    // Huber on the relative residual: a step far off the prediction (another
    // process took the cores) counts less. The scale has a floor so a quiet
    // machine's tiny residuals do not turn every ordinary step into an outlier.
    const double residual = std::abs(ms - pred) / size;
    const double scale = std::max(scale_rel_, 0.02);
    if (residual > cfg_.huber_k * scale) weight *= cfg_.huber_k * scale / residual;
    scale_rel_ = cfg_.decay * scale_rel_ + (1 - cfg_.decay) * std::min(residual, cfg_.huber_k * scale);
  }
  const auto x = features(w);
  for (int i = 0; i < n_terms; ++i) {
    for (int j = 0; j < n_terms; ++j) xtx_[i][j] = cfg_.decay * xtx_[i][j] + weight * x[i] * x[j];
    xty_[i] = cfg_.decay * xty_[i] + weight * x[i] * ms;
  }
  ++n_obs_;
  if (first_tokens_ < 0) {
    first_tokens_ = w.n_tokens;
    n_sizes_ = 1;
  } else if (w.n_tokens != first_tokens_) {
    n_sizes_ = 2;
  }
  refit();
  if (n_obs_ == cfg_.n_warmup) {  // the scale starts from the fit's own residual on the step just seen
    scale_rel_ = std::abs(ms - predict_ms(w)) / std::max(ms, 1.0);
  }
}

// Least squares over the active terms (Gaussian elimination with partial
// pivoting); a term whose coefficient comes out negative is dropped and the
// rest solved again, so at most n_terms solves.
void step_cost_model::refit() {
  std::array<bool, n_terms> active;
  active.fill(true);
  for (int round = 0; round < n_terms; ++round) {
    int idx[n_terms];
    int n = 0;
    for (int i = 0; i < n_terms; ++i) {
      if (active[i]) idx[n++] = i;
    }
    double a[n_terms][n_terms + 1];
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < n; ++c) a[r][c] = xtx_[idx[r]][idx[c]] + (r == c ? k_ridge : 0.0);
      a[r][n] = xty_[idx[r]];
    }
    for (int c = 0; c < n; ++c) {
      int pivot = c;
      for (int r = c + 1; r < n; ++r) {
        if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
      }
      for (int k = 0; k <= n; ++k) std::swap(a[c][k], a[pivot][k]);
      for (int r = c + 1; r < n; ++r) {
        const double f = a[r][c] / a[c][c];  // a[c][c] >= k_ridge: the matrix is positive definite
        for (int k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
      }
    }
    double sol[n_terms] = {};
    for (int r = n - 1; r >= 0; --r) {
      double s = a[r][n];
      for (int k = r + 1; k < n; ++k) s -= a[r][k] * sol[k];
      sol[r] = s / a[r][r];
    }
    int most_negative = -1;
    for (int r = 0; r < n; ++r) {
      if (sol[r] < 0 && (most_negative < 0 || sol[r] < sol[most_negative])) most_negative = r;
    }
    if (most_negative < 0) {
      coef_.fill(0.0);
      for (int r = 0; r < n; ++r) coef_[idx[r]] = sol[r];
      return;
    }
    active[idx[most_negative]] = false;
  }
  coef_.fill(0.0);  // not reached: with times >= 0, a single remaining term solves to >= 0
}

int32_t step_cost_model::max_tokens_within(const step_work& base, int32_t pos0, int32_t n_max, double target_ms) const {
  // Predictions grow with n (coefficients >= 0): bisect for the last n within the target.
  int32_t lo = 0, hi = std::max<int32_t>(0, n_max);
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    step_work w = base;
    w += step_work::entry(pos0, mid);
    if (predict_ms(w) <= target_ms) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace cortex
