// The gated delta net of blocks (model/blocks.hpp): Qwen3.5's linear-
// attention layers, as llama.cpp's qwen35 graph computes them. Per token:
//   [q; k; v] = silu(causal depthwise conv1d over the last conv_kernel
//               projections of x), q and k L2-normalised per head, q scaled
//               by 1/sqrt(head_k_dim);
//   per value head h (key head h % n_k_heads):
//     S = S * exp(softplus(alpha_h + dt_bias_h) * a_h)    (decay; a = -exp(A_log))
//     S = S + k ((v - S^T k) sigmoid(beta_h))^T           (delta rule)
//     o = S^T q
//   out = ssm_out(rmsnorm(o) * ssm_norm * silu(z)), z = ssm_gate x.
// The state (the conv's last conv_kernel - 1 inputs and S) is the
// sequence's (batch_seq::state), carried across steps: a token's output
// depends on every earlier token through it, so a sequence's tokens run in
// order while sequences and value heads run in parallel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/blocks.hpp"

namespace cortex {

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// x (n,) -> out = x / sqrt(sum x^2 + eps) * scale (llama.cpp's gdn L2 norm).
void l2_norm(const float* x, float* out, int n, float eps, float scale) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float inv = scale / std::sqrt(static_cast<float>(sum) + eps);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv;
}

constexpr int max_head_dim = 256;  // the arch file refuses wider heads

}  // namespace

void blocks::delta_net(int il) {
  const delta_net_spec& dn = hp().delta_net;
  const auto& LL = linears_[static_cast<size_t>(il)];
  float* const in[4] = {dn_mixed_.data(), dn_z_.data(), dn_beta_.data(), dn_alpha_.data()};
  run_group(LL.qkv, xn_.data(), n_tokens_, in);
  const auto& batch = *batch_;
  const int n_seqs = static_cast<int>(batch.size());
  pool_.parallel_for(n_seqs, [&](int si, int) {
    delta_net_conv(il, batch[static_cast<size_t>(si)], seq_first_[static_cast<size_t>(si)]);
  });
  const int H = dn.n_v_heads;
  pool_.parallel_for(n_seqs * H, [&](int task, int) {
    const int si = task / H;
    delta_net_head(il, batch[static_cast<size_t>(si)], seq_first_[static_cast<size_t>(si)], task % H);
  });
  float* const out[1] = {tmp_.data()};
  run_group(LL.wo, dn_out_.data(), n_tokens_, out);
}

void blocks::delta_net_conv(int il, const batch_seq& s, int first) {
  const delta_net_spec& dn = hp().delta_net;
  const int K = dn.conv_kernel, C = dn.conv_channels();
  const float* w = weights(il).ssm_conv1d.data();  // w[c * K + j]: tap j of channel c, oldest first
  float* past = s.state + state_offset_[static_cast<size_t>(il)];  // (K - 1, C), oldest row first
  for (int i = 0; i < s.n_tokens; ++i) {
    const float* x = dn_mixed_.data() + static_cast<size_t>(first + i) * C;
    float* y = dn_conv_.data() + static_cast<size_t>(first + i) * C;
    for (int c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int j = 0; j < K - 1; ++j) acc += past[static_cast<size_t>(j) * C + c] * w[static_cast<size_t>(c) * K + j];
      acc += x[c] * w[static_cast<size_t>(c) * K + K - 1];
      y[c] = silu(acc);
    }
    if (K > 1) {
      std::memmove(past, past + C, sizeof(float) * static_cast<size_t>(K - 2) * C);
      std::memcpy(past + static_cast<size_t>(K - 2) * C, x, sizeof(float) * C);
    }
  }
}

void blocks::delta_net_head(int il, const batch_seq& s, int first, int h) {
  const delta_net_spec& dn = hp().delta_net;
  const layer_weights& L = weights(il);
  const int Sk = dn.head_k_dim, Sv = dn.head_v_dim, Hk = dn.n_k_heads, C = dn.conv_channels(), V = dn.value_dim();
  const int kh = h % Hk;
  const float eps = hp().rms_eps;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(Sk));
  float* S = s.state + state_offset_[static_cast<size_t>(il)] + dn.conv_state_floats() +
             static_cast<size_t>(h) * Sk * Sv;  // S[i * Sv + j]: key i, value j
  float q[max_head_dim], k[max_head_dim], d[max_head_dim], o[max_head_dim];
  for (int i = 0; i < s.n_tokens; ++i) {
    const size_t t = static_cast<size_t>(first + i);
    const float* y = dn_conv_.data() + t * C;
    l2_norm(y + kh * Sk, q, Sk, eps, q_scale);
    l2_norm(y + Hk * Sk + kh * Sk, k, Sk, eps, 1.0f);
    const float* v = y + 2 * Hk * Sk + h * Sv;
    const float decay = std::exp(softplus(dn_alpha_[t * dn.n_v_heads + h] + L.ssm_dt_b[static_cast<size_t>(h)]) *
                                 L.ssm_a[static_cast<size_t>(h)]);
    const float beta = 1.0f / (1.0f + std::exp(-dn_beta_[t * dn.n_v_heads + h]));
    // d = (v - (decay S)^T k) beta, with S decayed in the same pass.
    std::fill(d, d + Sv, 0.0f);
    for (int a = 0; a < Sk; ++a) {
      float* row = S + static_cast<size_t>(a) * Sv;
      for (int j = 0; j < Sv; ++j) {
        row[j] *= decay;
        d[j] += row[j] * k[a];
      }
    }
    for (int j = 0; j < Sv; ++j) d[j] = (v[j] - d[j]) * beta;
    // S += k d^T; o = S^T q.
    std::fill(o, o + Sv, 0.0f);
    for (int a = 0; a < Sk; ++a) {
      float* row = S + static_cast<size_t>(a) * Sv;
      for (int j = 0; j < Sv; ++j) {
        row[j] += k[a] * d[j];
        o[j] += row[j] * q[a];
      }
    }
    // Gated RMS norm over the head.
    double ss = 0.0;
    for (int j = 0; j < Sv; ++j) ss += static_cast<double>(o[j]) * o[j];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / Sv) + eps);
    const float* z = dn_z_.data() + t * V + static_cast<size_t>(h) * Sv;
    float* out = dn_out_.data() + t * V + static_cast<size_t>(h) * Sv;
    for (int j = 0; j < Sv; ++j) out[j] = o[j] * inv * L.ssm_norm[static_cast<size_t>(j)] * silu(z[j]);
  }
}

}  // namespace cortex
