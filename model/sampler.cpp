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

float sampler::prepare(const float* logits, int n_vocab, const std::vector<int32_t>& history,
                       const uint64_t* allowed) {
  logits_.assign(logits, logits + n_vocab);
  apply_penalties(n_vocab, history);
  apply_logit_bias(n_vocab);
  if (allowed != nullptr) {
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (((allowed[i >> 6] >> (i & 63)) & 1) == 0) logits_[i] = -INFINITY;
    }
  }
  const float log_z = kernels::log_sum_exp(logits_.data(), n_vocab);
  if (params_.temperature <= 0.0f) return log_z;
  // Truncation in llama.cpp's order: top-k, top-p, min-p. Each step builds
  // or filters candidates_ without sorting the whole vocabulary.
  bool min_p_done = false;
  if (params_.top_k > 0 && params_.top_k < n_vocab) {
    select_best(static_cast<size_t>(params_.top_k));
    if (params_.top_p < 1.0f) apply_top_p_sorted();
  } else if (params_.top_p < 1.0f) {
    select_top_p(n_vocab);
  } else {
    // No top-k / top-p: everything at or above min-p's cut survives.
    float m = -INFINITY;
    for (int32_t i = 0; i < n_vocab; ++i) m = std::max(m, logits_[i]);
    const float cut = params_.min_p > 0.0f ? m + std::log(params_.min_p) : -INFINITY;
    candidates_.clear();
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (logits_[i] != -INFINITY && logits_[i] >= cut) candidates_.push_back({logits_[i], i});
    }
    min_p_done = true;
  }
  if (params_.min_p > 0.0f && !min_p_done) {
    float m = -INFINITY;
    for (const auto& c : candidates_) m = std::max(m, c.logit);
    const float threshold = m + std::log(params_.min_p);
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [&](const candidate& c) { return c.logit < threshold; }),
                      candidates_.end());
  }
  return log_z;
}

int32_t sampler::argmax(int n_vocab) const {
  int32_t best = 0;
  for (int32_t i = 1; i < n_vocab; ++i) {
    if (logits_[i] > logits_[best]) best = i;
  }
  return best;
}

void sampler::fill_top(sampled_token& out, float log_z) {
  out.logprob = logits_[out.id] - log_z;
  if (params_.n_logprobs > 0) {
    select_best(static_cast<size_t>(params_.n_logprobs));
    out.top.reserve(candidates_.size());
    for (const auto& c : candidates_) out.top.emplace_back(c.id, c.logit - log_z);
  }
}

sampled_token sampler::sample(const float* logits, int n_vocab,
                              const std::vector<int32_t>& history, const uint64_t* allowed) {
  const float log_z = prepare(logits, n_vocab, history, allowed);
  sampled_token out{};
  out.id = params_.temperature <= 0.0f ? argmax(n_vocab) : draw();
  fill_top(out, log_z);
  return out;
}

sampled_token sampler::verify(const float* logits, int n_vocab, const std::vector<int32_t>& history,
                              const uint64_t* allowed, int32_t draft, bool& accepted) {
  const float log_z = prepare(logits, n_vocab, history, allowed);
  sampled_token out{};
  if (params_.temperature <= 0.0f) {
    out.id = argmax(n_vocab);
    accepted = out.id == draft;
  } else if (candidates_.empty()) {
    out.id = 0;  // everything banned (outside the REQUIRES), as draw()
    accepted = out.id == draft;
  } else {
    candidate_probs();
    size_t at = probs_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (candidates_[i].id == draft) at = i;
    }
    const double p_draft = at < probs_.size() ? probs_[at] : 0.0;
    const double u = uniform();
    accepted = u < p_draft;
    if (accepted) {
      out.id = draft;
    } else {
      // Rejected: p with the draft zeroed, renormalized. The residual
      // max(0, p - q) of the general rule is exactly that for a one-hot q.
      out.id = draw_from(uniform() * (1.0 - p_draft), at);
    }
  }
  fill_top(out, log_z);
  return out;
}

// candidates_ = the min(k, finite) best of logits_, sorted best first. One
// pass with a heap of the k best so far (worst on top): most tokens only
// cost a comparison with the current k-th logit.
void sampler::select_best(size_t k) {
  const size_t n = logits_.size();
  candidates_.clear();
  if (k == 0) return;
  size_t i = 0;
  for (; i < n && candidates_.size() < k; ++i) {
    if (logits_[i] != -INFINITY) candidates_.push_back({logits_[i], static_cast<int32_t>(i)});
  }
  std::make_heap(candidates_.begin(), candidates_.end(), ranks_before);
  float worst = candidates_.empty() ? INFINITY : candidates_.front().logit;
  for (; i < n; ++i) {
    // Ids only grow: a token equal to the worst never ranks before it.
    if (logits_[i] > worst) {
      std::pop_heap(candidates_.begin(), candidates_.end(), ranks_before);
      candidates_.back() = {logits_[i], static_cast<int32_t>(i)};
      std::push_heap(candidates_.begin(), candidates_.end(), ranks_before);
      worst = candidates_.front().logit;
    }
  }
  std::sort(candidates_.begin(), candidates_.end(), ranks_before);
}

// Top-p over sorted candidates_ (after top-k): the shortest prefix whose
// probability mass, renormalized over candidates_, reaches top_p.
void sampler::apply_top_p_sorted() {
  const size_t n = candidates_.size();
  if (n == 0) return;
  std::vector<float>& p = probs_;
  p.resize(n);
  for (size_t i = 0; i < n; ++i) p[i] = candidates_[i].logit;
  kernels::softmax(p.data(), static_cast<int>(n));
  double cum = 0.0;
  size_t keep = 0;
  while (keep < n && cum < params_.top_p) cum += p[keep++];
  candidates_.resize(std::max<size_t>(keep, 1));
}

// Top-p over the whole vocabulary: candidates_ = the smallest set of best
// tokens (by logit, then id) whose probability mass reaches top_p. Linear
// time whatever the nucleus size: tokens are bucketed by how far their logit
// is below the best one; buckets are kept whole while the mass stays below
// the target, and only the bucket where it crosses is sorted.
void sampler::select_top_p(int n_vocab) {
  const auto n = static_cast<size_t>(n_vocab);
  work_.assign(logits_.begin(), logits_.end());
  kernels::softmax(work_.data(), n_vocab);  // probabilities
  const double target = params_.top_p;
  // 64 buckets of 1/4 nat below the best logit; the last one takes the rest.
  constexpr int n_buckets = 64;
  constexpr float per_nat = 4.0f;
  float m = -INFINITY;
  for (size_t i = 0; i < n; ++i) m = std::max(m, logits_[i]);
  const auto bucket_of = [&](float logit) {
    const float b = (m - logit) * per_nat;
    return b < static_cast<float>(n_buckets - 1) ? static_cast<int>(b) : n_buckets - 1;
  };
  // Four interleaved histograms: consecutive tokens in one bucket (the tail
  // of a flat distribution) would otherwise chain every add through memory.
  double mass[4][n_buckets] = {};
  for (size_t i = 0; i < n; ++i) mass[i & 3][bucket_of(logits_[i])] += work_[i];
  double cum = 0.0;
  int edge = 0;  // the bucket where the mass reaches the target
  auto mass_of = [&](int b) { return (mass[0][b] + mass[1][b]) + (mass[2][b] + mass[3][b]); };
  while (edge < n_buckets - 1 && cum + mass_of(edge) < target) cum += mass_of(edge++);
  // Branch-free compaction: write every token, advance only for the chosen.
  candidates_.resize(n);
  boundary_.resize(n);
  size_t n_kept = 0, n_edge = 0;
  for (size_t i = 0; i < n; ++i) {
    const int b = bucket_of(logits_[i]);
    const bool finite = logits_[i] != -INFINITY;
    candidates_[n_kept] = {logits_[i], static_cast<int32_t>(i)};
    n_kept += static_cast<size_t>(finite && b < edge);
    boundary_[n_edge] = static_cast<uint32_t>(i);
    n_edge += static_cast<size_t>(finite && b == edge);
  }
  candidates_.resize(n_kept);
  boundary_.resize(n_edge);
  std::sort(boundary_.begin(), boundary_.end(), [&](uint32_t x, uint32_t y) {
    return ranks_before({logits_[x], static_cast<int32_t>(x)}, {logits_[y], static_cast<int32_t>(y)});
  });
  for (size_t j = 0; j < boundary_.size() && (cum < target || candidates_.empty()); ++j) {
    candidates_.push_back({logits_[boundary_[j]], static_cast<int32_t>(boundary_[j])});
    cum += work_[boundary_[j]];
  }
}

void sampler::candidate_probs() {
  const size_t n = candidates_.size();
  probs_.resize(n);
  for (size_t i = 0; i < n; ++i) probs_[i] = candidates_[i].logit / params_.temperature;
  kernels::softmax(probs_.data(), static_cast<int>(n));
}

int32_t sampler::draw_from(double u, size_t skip) {
  const size_t n = candidates_.size();
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (i == skip) continue;
    cum += probs_[i];
    if (u < cum) return candidates_[i].id;
  }
  // u fell in the rounding gap above the last cumulative sum: take the last
  // token with non-zero probability.
  for (size_t i = n; i-- > 0;) {
    if (i != skip && probs_[i] > 0.0f) return candidates_[i].id;
  }
  return candidates_[skip == 0 && n > 1 ? 1 : 0].id;
}

int32_t sampler::draw() {
  // softmax(logit / T) over the survivors, then inverse-CDF with one uniform.
  if (candidates_.empty()) return 0;  // everything banned (outside the REQUIRES): no draw to make, but no bad read either
  candidate_probs();
  return draw_from(uniform(), candidates_.size());
}

}  // namespace cortex
