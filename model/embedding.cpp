#include "model/embedding.hpp"

#include <cmath>
#include <string>

namespace cortex {

std::vector<float> pooled_embedding(const float* sum, int n_embd, int n_tokens) {
  // Double for the mean and the norm: the reference divides in float, but
  // the difference is far below the 1e-4 the golden data allows.
  std::vector<double> mean(static_cast<size_t>(n_embd));
  double sq = 0;
  for (int i = 0; i < n_embd; ++i) {
    mean[static_cast<size_t>(i)] = static_cast<double>(sum[i]) / n_tokens;
    sq += mean[static_cast<size_t>(i)] * mean[static_cast<size_t>(i)];
  }
  const double inv = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
  std::vector<float> out(static_cast<size_t>(n_embd));
  for (int i = 0; i < n_embd; ++i) out[static_cast<size_t>(i)] = static_cast<float>(mean[static_cast<size_t>(i)] * inv);
  return out;
}

expected<std::vector<float>> embed_tokens(single_sequence& seq, const model& m, const std::vector<int32_t>& tokens,
                                          int chunk) {
  const auto& hp = m.hparams();
  if (tokens.empty()) return fail(errc::invalid_param, "the input has no tokens; an embedding needs at least one");
  if (static_cast<int64_t>(tokens.size()) > seq.n_ctx()) {
    return fail(errc::context_overflow, "the input has " + std::to_string(tokens.size()) + " tokens; the context holds " +
                      std::to_string(seq.n_ctx()));
  }
  for (const int32_t id : tokens) {
    if (id < 0 || id >= hp.n_vocab) {
      return fail(errc::invalid_param, "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                        std::to_string(hp.n_vocab) + ")");
    }
  }
  if (chunk < 1) return fail(errc::invalid_param, "the prefill chunk must be at least 1 token");
  std::vector<float> sum(static_cast<size_t>(hp.n_embd), 0.0f);
  seq.reset();
  seq.feed(tokens, logits_mode::none, chunk, sum.data());
  return pooled_embedding(sum.data(), hp.n_embd, static_cast<int>(tokens.size()));
}

}  // namespace cortex
