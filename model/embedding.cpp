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

void l2_normalize(float* x, int n) {
  double sq = 0.0;
  for (int i = 0; i < n; ++i) sq += static_cast<double>(x[i]) * x[i];
  const float scale = sq > 0.0 ? static_cast<float>(1.0 / std::sqrt(sq)) : 0.0f;
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

status check_encoder_inputs(const model& m, const std::vector<std::vector<int32_t>>& inputs, pooling_kind pooling) {
  const auto& hp = m.hparams();
  if (!hp.encoder.enabled) return fail(errc::invalid_param, "model '" + m.name() + "' is not an encoder");
  if (pooling == pooling_kind::rank && m.weights().cls_out.data == nullptr) {
    return fail(errc::invalid_param, "model '" + m.name() + "' has no classifier head (cls.output): it cannot rank");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    const std::string which = inputs.size() > 1 ? "input " + std::to_string(i) + " " : "the input ";
    if (in.empty()) return fail(errc::invalid_param, which + "has no tokens; an embedding needs at least one");
    if (static_cast<int64_t>(in.size()) > hp.n_ctx_train) {
      return fail(errc::context_overflow, which + "has " + std::to_string(in.size()) + " tokens; the encoder takes at most " +
                                              std::to_string(hp.n_ctx_train) + " at once (shorten or split it)");
    }
    for (const int32_t id : in) {
      if (id < 0 || id >= hp.n_vocab) {
        return fail(errc::invalid_param, which + "has token id " + std::to_string(id) + ", outside the vocabulary [0, " +
                                             std::to_string(hp.n_vocab) + ")");
      }
    }
  }
  return status::ok();
}

expected<std::vector<std::vector<float>>> encode_inputs(forward_pass& fwd, kv_arena& kv, const model& m,
                                                        const std::vector<std::vector<int32_t>>& inputs,
                                                        pooling_kind pooling, bool normalize, int max_step_tokens) {
  if (auto st = check_encoder_inputs(m, inputs, pooling); !st) return st;
  const auto& hp = m.hparams();
  std::vector<std::vector<float>> out(inputs.size());
  std::vector<batch_seq> batch;
  for (size_t begin = 0; begin < inputs.size();) {
    // Whole inputs up to the step's budget; an input longer than it goes alone.
    size_t end = begin;
    int n_step = 0;
    while (end < inputs.size() && (end == begin || n_step + static_cast<int>(inputs[end].size()) <= max_step_tokens)) {
      n_step += static_cast<int>(inputs[end].size());
      ++end;
    }
    batch.clear();
    for (size_t i = begin; i < end; ++i) {
      const int n = static_cast<int>(inputs[i].size());
      out[i].assign(static_cast<size_t>(pooled_size(hp, pooling, n)), 0.0f);
      batch_seq s;
      s.tokens = inputs[i].data();
      s.n_tokens = n;
      s.logits = logits_mode::none;
      s.embd = out[i].data();
      s.pooling = pooling;
      batch.push_back(s);
    }
    fwd.run(batch, kv);
    begin = end;
  }
  if (normalize && pooling != pooling_kind::rank) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int rows = pooling == pooling_kind::none ? static_cast<int>(inputs[i].size()) : 1;
      for (int r = 0; r < rows; ++r) l2_normalize(out[i].data() + static_cast<size_t>(r) * hp.n_embd, hp.n_embd);
    }
  }
  return out;
}

}  // namespace cortex
