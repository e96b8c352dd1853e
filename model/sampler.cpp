#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/ops.hpp"

namespace cortex {
namespace {

constexpr float ban_bias = -100.0f;

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

sampler::sampler(const sampling_params& p)
    : params_(p), rng_(p.seed ? *p.seed : fresh_seed()) {}

double sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void sampler::apply_penalties(int n_vocab, const std::vector<int32_t>& history) {
  const sampling_params& p = params_;
  if (p.penalty_last_n == 0 || history.empty()) return;
  if (p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) {
    return;
  }
  const size_t n = p.penalty_last_n < 0
                       ? history.size()
                       : std::min(history.size(), static_cast<size_t>(p.penalty_last_n));
  window_.assign(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
  std::sort(window_.begin(), window_.end());
  for (size_t i = 0; i < window_.size();) {
    size_t j = i;
    while (j < window_.size() && window_[j] == window_[i]) ++j;
    const int32_t id = window_[i];
    const auto count = static_cast<float>(j - i);
    i = j;
    if (id < 0 || id >= n_vocab) continue;
    float& l = logits_[id];
    if (p.repetition_penalty != 1.0f) {
      l = l <= 0.0f ? l * p.repetition_penalty : l / p.repetition_penalty;
    }
    l -= count * p.frequency_penalty + p.presence_penalty;
  }
}

void sampler::apply_logit_bias(int n_vocab) {
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id < 0 || id >= n_vocab) continue;
    logits_[id] = bias <= ban_bias ? -INFINITY : logits_[id] + bias;
  }
}

sampled_token sampler::sample(const float* logits, int n_vocab,
                              const std::vector<int32_t>& history) {
  logits_.assign(logits, logits + n_vocab);
  apply_penalties(n_vocab, history);
  apply_logit_bias(n_vocab);
  const float log_z = kernels::log_sum_exp(logits_.data(), n_vocab);

  const auto better = [](const candidate& a, const candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  sampled_token out{};
  if (params_.temperature <= 0.0f) {
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; ++i) {
      if (logits_[i] > logits_[best]) best = i;
    }
    out.id = best;
  } else {
    candidates_.clear();
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (logits_[i] != -INFINITY) candidates_.push_back({logits_[i], i});
    }
    bool sorted = false;
    const int k = params_.top_k;
    if (k > 0 && static_cast<size_t>(k) < candidates_.size()) {
      std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), better);
      candidates_.resize(k);
      sorted = true;
    }
    if (params_.top_p < 1.0f) {
      // Sort only as deep as the nucleus reaches: widen the sorted prefix
      // until its mass covers top_p of the total.
      const float m = std::max_element(candidates_.begin(), candidates_.end(),
                                       [](const candidate& a, const candidate& b) {
                                         return a.logit < b.logit;
                                       })->logit;
      double total = 0.0;
      for (const auto& c : candidates_) total += std::exp(static_cast<double>(c.logit - m));
      const double target = params_.top_p * total;
      size_t depth = sorted ? candidates_.size() : std::min<size_t>(64, candidates_.size());
      for (;;) {
        if (!sorted || depth < candidates_.size()) {
          std::partial_sort(candidates_.begin(), candidates_.begin() + depth, candidates_.end(),
                            better);
        }
        double cum = 0.0;
        size_t keep = 0;
        while (keep < depth && cum < target) {
          cum += std::exp(static_cast<double>(candidates_[keep].logit - m));
          ++keep;
        }
        if (cum >= target || depth == candidates_.size()) {
          candidates_.resize(std::max<size_t>(keep, 1));
          break;
        }
        depth = std::min(candidates_.size(), depth * 8);
      }
    }
    if (params_.min_p > 0.0f) {
      float m = -INFINITY;
      for (const auto& c : candidates_) m = std::max(m, c.logit);
      const float threshold = m + std::log(params_.min_p);
      candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                       [&](const candidate& c) { return c.logit < threshold; }),
                        candidates_.end());
    }
    out.id = draw();
  }
  out.logprob = logits_[out.id] - log_z;

  if (params_.n_logprobs > 0) {
    candidates_.clear();
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (logits_[i] != -INFINITY) candidates_.push_back({logits_[i], i});
    }
    const size_t n = std::min(candidates_.size(), static_cast<size_t>(params_.n_logprobs));
    std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), better);
    out.top.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      out.top.emplace_back(candidates_[i].id, candidates_[i].logit - log_z);
    }
  }
  return out;
}

int32_t sampler::draw() {
  // softmax(logit / T) over the survivors, then inverse-CDF with one uniform.
  const size_t n = candidates_.size();
  std::vector<float>& p = probs_;
  p.resize(n);
  for (size_t i = 0; i < n; ++i) p[i] = candidates_[i].logit / params_.temperature;
  kernels::softmax(p.data(), static_cast<int>(n));
  const double u = uniform();
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += p[i];
    if (u < cum) return candidates_[i].id;
  }
  // u fell in the rounding gap above the last cumulative sum: take the last
  // token with non-zero probability.
  for (size_t i = n; i-- > 0;) {
    if (p[i] > 0.0f) return candidates_[i].id;
  }
  return candidates_[0].id;
}

}  // namespace cortex
