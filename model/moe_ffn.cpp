// The mixture-of-experts FFN of blocks (model/blocks.hpp): the router picks
// each token's experts and weights as the file's gating says (hp().moe,
// llama.cpp's build_moe_ffn), then each expert with tokens runs once over
// just its tokens, gathered into one block of rows: every active expert's
// weights are read once per step, inactive experts not at all. A token's
// output is the sum of its experts' outputs times their weights, added in
// the order the router ranked them, as llama.cpp adds them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/ops.hpp"
#include "model/blocks.hpp"

namespace cortex {

void blocks::moe_route(int il, const float* router_in) {
  const moe_spec& moe = hp().moe;
  const layer_weights& L = weights(il);
  const int E = moe.n_expert, K = moe.n_used;
  float* const logits_out[1] = {moe_logits_.data()};
  run_group(linears_[static_cast<size_t>(il)].router, router_in, n_tokens_, logits_out);
  std::vector<int32_t>& order = moe_order_;  // (n_expert,) sized once: no allocation per layer
  for (int t = 0; t < n_tokens_; ++t) {
    float* logits = moe_logits_.data() + static_cast<size_t>(t) * E;
    if (!L.ffn_gate_inp_b.empty()) kernels::add_inplace(logits, L.ffn_gate_inp_b.data(), E);
    if (moe.gating == moe_gating::softmax) kernels::softmax(logits, E);  // rank and weigh by probability
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    int32_t* sel = moe_sel_.data() + static_cast<size_t>(t) * K;
    float* w = moe_w_.data() + static_cast<size_t>(t) * K;
    for (int k = 0; k < K; ++k) {
      sel[k] = order[static_cast<size_t>(k)];
      w[k] = logits[sel[k]];
    }
    if (moe.gating == moe_gating::softmax_weight) kernels::softmax(w, K);
    if (moe.norm_weights) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k) sum += w[k];
      sum = std::max(sum, 6.103515625e-5f);  // llama.cpp's clamp: the smallest normal f16
      for (int k = 0; k < K; ++k) w[k] /= sum;
    }
    if (moe.weights_scale != 1.0f) {
      for (int k = 0; k < K; ++k) w[k] *= moe.weights_scale;
    }
  }
}

void blocks::moe_ffn(int il, ffn_activation act, const float* router_in) {
  const moe_spec& moe = hp().moe;
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  const int d = hp().n_embd, F = moe.n_ff_exp, K = moe.n_used;
  moe_route(il, router_in);
  for (auto& slots : moe_slots_) slots.clear();
  for (int s = 0; s < n_tokens_ * K; ++s) moe_slots_[static_cast<size_t>(moe_sel_[static_cast<size_t>(s)])].push_back(s);
  for (int e = 0; e < moe.n_expert; ++e) {
    const auto& slots = moe_slots_[static_cast<size_t>(e)];
    const int n = static_cast<int>(slots.size());
    if (n == 0) continue;
    for (int i = 0; i < n; ++i) {
      std::memcpy(moe_x_.data() + static_cast<size_t>(i) * d, xn_.data() + static_cast<size_t>(slots[i] / K) * d,
                  sizeof(float) * d);
    }
    float* const gate_up[2] = {gate_.data(), up_.data()};
    run_group(LL.exp_gate_up[static_cast<size_t>(e)], moe_x_.data(), n, gate_up);
    if (!L.gate_exps_b.empty()) {
      for (int i = 0; i < n; ++i) {
        kernels::add_inplace(gate_.data() + static_cast<size_t>(i) * F, L.gate_exps_b.data() + static_cast<size_t>(e) * F, F);
        kernels::add_inplace(up_.data() + static_cast<size_t>(i) * F, L.up_exps_b.data() + static_cast<size_t>(e) * F, F);
      }
    }
    activate(gate_.data(), up_.data(), n * F, act);
    float* const down[1] = {moe_x_.data()};
    run_group(LL.exp_down[static_cast<size_t>(e)], gate_.data(), n, down);
    for (int i = 0; i < n; ++i) {
      float* y = moe_x_.data() + static_cast<size_t>(i) * d;
      if (!L.down_exps_b.empty()) kernels::add_inplace(y, L.down_exps_b.data() + static_cast<size_t>(e) * d, d);
      const float w = moe_w_[static_cast<size_t>(slots[i])];
      float* dst = moe_out_.data() + static_cast<size_t>(slots[i]) * d;
      if (!L.down_exps_s.empty()) {
        const float s = L.down_exps_s[static_cast<size_t>(e)];  // llama.cpp: (down · h) * scale, then * weight
        for (int j = 0; j < d; ++j) dst[j] = (y[j] * s) * w;
      } else {
        for (int j = 0; j < d; ++j) dst[j] = y[j] * w;
      }
    }
  }
  for (int t = 0; t < n_tokens_; ++t) {
    float* out = tmp_.data() + static_cast<size_t>(t) * d;
    const float* slot0 = moe_out_.data() + static_cast<size_t>(t) * K * d;
    std::memcpy(out, slot0, sizeof(float) * d);
    for (int k = 1; k < K; ++k) kernels::add_inplace(out, slot0 + static_cast<size_t>(k) * d, d);
  }
}

void blocks::shared_expert(int il, ffn_activation act) {
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  const int d = hp().n_embd;
  float* const gate_up[2] = {gate_.data(), up_.data()};
  run_group(LL.gate_up, xn_.data(), n_tokens_, gate_up);
  activate(gate_.data(), up_.data(), n_tokens_ * hp().n_ff_of(il), act);
  float* const down[1] = {moe_x_.data()};
  run_group(LL.down, gate_.data(), n_tokens_, down);
  for (int t = 0; t < n_tokens_; ++t) {
    const float* x = xn_.data() + static_cast<size_t>(t) * d;
    float dot = 0.0f;
    for (int j = 0; j < d; ++j) dot += x[j] * L.ffn_gate_inp_shexp[static_cast<size_t>(j)];
    const float g = 1.0f / (1.0f + std::exp(-dot));
    float* out = tmp_.data() + static_cast<size_t>(t) * d;
    const float* y = moe_x_.data() + static_cast<size_t>(t) * d;
    for (int j = 0; j < d; ++j) out[j] += g * y[j];
  }
}

}  // namespace cortex
