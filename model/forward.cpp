#include "model/forward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "kernels/ops.hpp"
#include "kernels/quant.hpp"
#include "model/arch.hpp"

namespace cortex {

forward_pass::forward_pass(const model& m, kernels::thread_pool& pool, int n_ctx_seq)
    : m_(m), blocks_(m, pool, n_ctx_seq), n_vocab_(m.hparams().n_vocab) {
  const auto& w = m.weights();
  if (w.output.data != nullptr) output_ = make_linear_group({&w.output}, pool, m.file());
  if (w.cls.data != nullptr) cls_ = make_linear_group({&w.cls}, pool, m.file());
  if (w.cls_out.data != nullptr) cls_out_ = make_linear_group({&w.cls_out}, pool, m.file());
}

namespace {

// out (d,) = the mean of rows (n, d), as llama.cpp's pooling matmul computes
// it: each row times 1/n, summed.
void mean_rows(const float* rows, int n, int d, float* out) {
  const float inv = 1.0f / static_cast<float>(n);
  for (int j = 0; j < d; ++j) {
    double acc = 0.0;
    for (int i = 0; i < n; ++i) acc += static_cast<double>(rows[static_cast<size_t>(i) * d + j] * inv);
    out[j] = static_cast<float>(acc);
  }
}

}  // namespace

void forward_pass::pool_encoder_rows(const batch_seq& s, int first) {
  const auto& hp = m_.hparams();
  const auto& w = m_.weights();
  const int d = hp.n_embd;
  const float* rows = blocks_.x() + static_cast<size_t>(first) * d;
  switch (s.pooling) {
    case pooling_kind::none:
      std::copy_n(rows, static_cast<size_t>(s.n_tokens) * d, s.embd);
      return;
    case pooling_kind::mean:
      mean_rows(rows, s.n_tokens, d, s.embd);
      return;
    case pooling_kind::cls:
      std::copy_n(rows, static_cast<size_t>(d), s.embd);
      return;
    case pooling_kind::last:
      std::copy_n(rows + static_cast<size_t>(s.n_tokens - 1) * d, static_cast<size_t>(d), s.embd);
      return;
    case pooling_kind::rank: {
      // The classifier head on the first token's row (or the mean row):
      // cls_out · cls_norm(act(cls · h + cls_b)) + cls_out_b, act tanh (or GELU).
      if (w.cls_out.data == nullptr) throw std::invalid_argument("rank pooling needs a classifier head (cls.output)");
      head_.resize(static_cast<size_t>(d));
      if (hp.encoder.rank_reads_mean) {
        mean_rows(rows, s.n_tokens, d, head_.data());
      } else {
        head_.assign(rows, rows + d);
      }
      if (w.cls.data != nullptr) {
        head_out_.resize(static_cast<size_t>(d));
        float* const out[1] = {head_out_.data()};
        blocks_.run_group(cls_, head_.data(), 1, out);
        for (int j = 0; j < d; ++j) {
          const float b = w.cls_b.empty() ? 0.0f : w.cls_b[static_cast<size_t>(j)];
          head_[static_cast<size_t>(j)] = head_out_[static_cast<size_t>(j)] + b;
        }
        if (hp.encoder.rank_gelu) {
          kernels::gelu_fp16_table(head_.data(), head_.data(), d);
        } else {
          for (float& v : head_) v = std::tanh(v);
        }
        if (!w.cls_norm.empty()) kernels::layernorm(head_.data(), w.cls_norm.data(), nullptr, head_.data(), d, hp.encoder.norm_eps);
      }
      float* const out[1] = {s.embd};
      blocks_.run_group(cls_out_, head_.data(), 1, out);
      for (size_t j = 0; j < w.cls_out_b.size(); ++j) s.embd[j] += w.cls_out_b[j];
      return;
    }
  }
}

void forward_pass::ensure_rows(int n_rows) {
  if (n_rows <= capacity_rows_) return;
  sel_.resize(static_cast<size_t>(n_rows) * m_.hparams().n_embd);
  logits_.resize(static_cast<size_t>(n_rows) * n_vocab_);
  capacity_rows_ = n_rows;
}

void forward_pass::add_hidden_rows(const batch_seq& s, int first) {
  const auto& hp = m_.hparams();
  const int d = hp.n_embd;
  normed_.resize(static_cast<size_t>(d));
  for (int i = 0; i < s.n_tokens; ++i) {
    kernels::rmsnorm(blocks_.x() + static_cast<size_t>(first + i) * d, m_.weights().output_norm.data(), normed_.data(), d,
                     hp.rms_eps);
    kernels::add_inplace(s.hidden_sum, normed_.data(), d);
  }
}

int forward_pass::run(const std::vector<batch_seq>& batch, kv_arena& kv) {
  const auto& hp = m_.hparams();
  const auto& w = m_.weights();
  const bool encoder = hp.encoder.enabled;
  int n_tokens = 0, n_rows = 0;
  for (const auto& s : batch) {
    n_tokens += s.n_tokens;
    if (!encoder) n_rows += s.logits == logits_mode::all ? s.n_tokens : s.logits == logits_mode::last ? 1 : 0;
  }
  if (n_tokens == 0) return 0;
  blocks_.begin_step(batch, kv, n_tokens);
  ensure_rows(n_rows);
  const int d = hp.n_embd;
  const size_t sd = static_cast<size_t>(d);
  float* x = blocks_.x();

  {
    int t = 0;
    for (const auto& s : batch) {
      for (int i = 0; i < s.n_tokens; ++i, ++t) {
        const auto* row = static_cast<const uint8_t*>(w.token_embd.data) + static_cast<size_t>(s.tokens[i]) * w.token_embd.row_bytes;
        dequantize_row(w.token_embd.type, row, x + t * sd, d);
        if (hp.embd_scale != 1.0f) {
          for (int j = 0; j < d; ++j) x[t * sd + j] *= hp.embd_scale;
        }
      }
    }
  }

  const arch_def& arch = m_.arch();
  if (arch.step_inputs != nullptr) arch.step_inputs(blocks_);
  for (int l = 0; l < hp.n_layer; ++l) arch.layer(blocks_, l);

  if (encoder) {
    int first = 0;
    for (const auto& s : batch) {
      pool_encoder_rows(s, first);
      first += s.n_tokens;
    }
    return 0;
  }
  int row = 0, t = 0;
  for (const auto& s : batch) {
    if (s.hidden_sum != nullptr) add_hidden_rows(s, t);
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const bool want = s.logits == logits_mode::all || (s.logits == logits_mode::last && i == s.n_tokens - 1);
      if (!want) continue;
      kernels::rmsnorm(x + t * sd, w.output_norm.data(), sel_.data() + static_cast<size_t>(row) * d, d, hp.rms_eps);
      ++row;
    }
  }
  float* const logits_out[1] = {logits_.data()};
  if (n_rows > 0) {
    blocks_.run_group(output_, sel_.data(), n_rows, logits_out);
    const int n = n_rows * n_vocab_;
    if (hp.logit_scale != 1.0f) {
      for (int i = 0; i < n; ++i) logits_[static_cast<size_t>(i)] *= hp.logit_scale;
    }
    if (hp.final_softcap > 0.0f) kernels::softcap_inplace(logits_.data(), n, hp.final_softcap);
  }
  return n_rows;
}

}  // namespace cortex
