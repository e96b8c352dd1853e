#include "actors/scheduler/draft_governor.hpp"

#include <algorithm>

namespace cortex {

namespace {
constexpr double fallback_token_cost = 0.25;  // an uncalibrated guess: a drafted token costs a quarter step
}

int32_t choose_draft_length(const draft_record& r, int32_t n_max, const draft_cost_fn& cost_ratio,
                            const draft_governor_config& cfg) {
  if (n_max <= 0) return 0;
  const double a = r.acceptance();
  const auto cost = [&](int32_t k) { return cost_ratio ? std::max(1.0, cost_ratio(k)) : 1.0 + fallback_token_cost * k; };
  double expected = 1.0, term = 1.0, best_gain = 1.0;
  int32_t best = 0;
  for (int32_t k = 1; k <= n_max; ++k) {
    term *= a;
    expected += term;
    const double gain = expected / cost(k);
    if (gain > best_gain) {
      best_gain = gain;
      best = k;
    }
  }
  if (best_gain >= cfg.min_gain) return best;
  // Not worth it on the estimate: probe now and then with a short draft.
  if (r.steps_without_draft + 1 >= cfg.probe_every) return std::min(n_max, cfg.probe_length);
  return 0;
}

void record_draft(draft_record& r, int32_t n_drafted, int32_t n_accepted, const draft_governor_config& cfg) {
  if (n_drafted <= 0) {
    ++r.steps_without_draft;
    return;
  }
  r.steps_without_draft = 0;
  r.accepted = r.accepted * cfg.decay + n_accepted;
  r.rejected = r.rejected * cfg.decay + (n_accepted < n_drafted ? 1.0 : 0.0);
}

}  // namespace cortex
