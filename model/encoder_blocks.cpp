// The blocks that encoders (BERT family, hp.encoder) add: input embeddings
// by position and token type, LayerNorm with bias, the sequential GELU FFN,
// and bidirectional attention over a step's own K/V rows.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"
#include "model/blocks.hpp"

namespace cortex {

void blocks::add_to_every_token(const float* row) {
  const int d = hp().n_embd;
  for (int t = 0; t < n_tokens_; ++t) kernels::add_inplace(x_.data() + static_cast<size_t>(t) * d, row, d);
}

void blocks::add_position_rows(const std::vector<float>& table) {
  const int d = hp().n_embd;
  const int n_positions = static_cast<int>(table.size() / static_cast<size_t>(d));
  int t = 0;
  for (const auto& s : *batch_) {
    if (s.pos0 + s.n_tokens > n_positions) {
      throw std::invalid_argument("a sequence reaches position " + std::to_string(s.pos0 + s.n_tokens - 1) +
                                  "; the model has position embeddings for " + std::to_string(n_positions));
    }
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      kernels::add_inplace(x_.data() + static_cast<size_t>(t) * d, table.data() + static_cast<size_t>(s.pos0 + i) * d, d);
    }
  }
}

void blocks::layer_norm(const float* in, const std::vector<float>& w, const std::vector<float>& b, float* out) {
  const int d = hp().n_embd;
  const float eps = hp().encoder.norm_eps;
  for_token_ranges([&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      kernels::layernorm(in + static_cast<size_t>(t) * d, w.data(), b.empty() ? nullptr : b.data(),
                         out + static_cast<size_t>(t) * d, d, eps);
    }
  });
}

void blocks::copy_to_input() { std::copy_n(x_.data(), static_cast<size_t>(n_tokens_) * hp().n_embd, xn_.data()); }

void blocks::residual_layer_norm(const std::vector<float>& out_bias, const std::vector<float>& w,
                                 const std::vector<float>& b) {
  const int d = hp().n_embd;
  const float eps = hp().encoder.norm_eps;
  const float scale = hp().residual_scale;
  for_token_ranges([&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      const size_t at = static_cast<size_t>(t) * d;
      float* o = tmp_.data() + at;
      float* x = x_.data() + at;
      if (!out_bias.empty()) kernels::add_inplace(o, out_bias.data(), d);
      if (scale != 1.0f) {
        for (int i = 0; i < d; ++i) o[i] *= scale;
      }
      kernels::add_inplace(x, o, d);
      kernels::layernorm(x, w.data(), b.empty() ? nullptr : b.data(), x, d, eps);
      std::copy_n(x, d, xn_.data() + at);
    }
  });
}

void blocks::ffn_sequential(int il) {
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  const int ff = hp().n_ff_of(il);
  // The layer has no gate: its gate_up group is just `up`, written to its first output.
  float* const up[1] = {gate_.data()};
  run_group(LL.gate_up, xn_.data(), n_tokens_, up);
  for_token_ranges([&](int t0, int t1) {
    float* g = gate_.data() + static_cast<size_t>(t0) * ff;
    add_bias_rows(g, L.b_up, t1 - t0);
    kernels::gelu_fp16_table(g, g, (t1 - t0) * ff);
  });
  float* const out[1] = {tmp_.data()};
  run_group(LL.down, gate_.data(), n_tokens_, out);
}

void blocks::attend_bidirectional(int il) {
  const auto& h = hp();
  const layer_attention& spec = h.attn[static_cast<size_t>(il)];
  const auto& batch = *batch_;
  const int hd = h.head_dim_of(il), n_kv = h.n_head_kv_of(il);
  const int dq = h.n_embd_q(il), dkv = h.n_embd_kv(il);
  // The step's K/V rows (T, n_kv * hd) f32 are already an arena layout: a
  // sequence's rows, from its first token on, are blocks 0, 1, 2, ... of
  // block_size contiguous positions.
  constexpr int block_size = 32;
  int longest = 0;
  for (const auto& s : batch) longest = std::max(longest, s.n_tokens);
  const size_t n_blocks = static_cast<size_t>((longest + block_size - 1) / block_size);
  if (identity_table_.size() < n_blocks) {
    identity_table_.resize(n_blocks);
    std::iota(identity_table_.begin(), identity_table_.end(), 0);
  }
  const kernels::kv_layout layout{block_size, n_kv, hd, kernels::kv_type::f32};
  if (h.encoder.alibi_max_bias > 0.0f && alibi_slopes_.empty()) {
    alibi_slopes_.resize(static_cast<size_t>(h.n_head));
    kernels::alibi_slopes(h.n_head, h.encoder.alibi_max_bias, alibi_slopes_.data());
  }
  // Tasks: per sequence, KV head and 32-query tile, longest first.
  attn_tasks_.clear();
  n_key_parts_ = 1;
  for (int si = 0; si < static_cast<int>(batch.size()); ++si) {
    const int n_tiles = (batch[static_cast<size_t>(si)].n_tokens + 31) / 32;
    for (int tile = n_tiles - 1; tile >= 0; --tile) {
      const int q_begin = tile * 32, q_end = std::min(batch[static_cast<size_t>(si)].n_tokens, q_begin + 32);
      for (int g = 0; g < n_kv; ++g) attn_tasks_.push_back({si, g, q_begin, q_end, -1});
    }
  }
  const int group = h.n_head / n_kv;
  pool_.parallel_for(static_cast<int>(attn_tasks_.size()), [&](int ti, int) {
    const attn_task& task = attn_tasks_[static_cast<size_t>(ti)];
    const auto& s = batch[static_cast<size_t>(task.seq)];
    const size_t seq_first = static_cast<size_t>(seq_first_[static_cast<size_t>(task.seq)]);
    const size_t first = seq_first + static_cast<size_t>(task.q_begin);
    kernels::attention_args a;
    a.q = q_.data() + first * dq;
    a.n_q = task.q_end - task.q_begin;
    a.pos0 = task.q_begin;
    a.n_heads = h.n_head;
    a.head_begin = task.kv_head * group;
    a.head_end = (task.kv_head + 1) * group;
    a.k_arena = k_.data() + seq_first * dkv;
    a.v_arena = v_.data() + seq_first * dkv;
    a.block_table = identity_table_.data();
    a.layout = layout;
    a.scale = spec.scale;
    a.softcap = spec.softcap;
    a.n_keys = s.n_tokens;
    a.window = spec.window_symmetric;
    a.alibi_slopes = alibi_slopes_.empty() ? nullptr : alibi_slopes_.data();
    a.part_keys = kernels::attention_part_keys;  // as causal attention: a row's bits depend on the row alone
    a.out = attn_.data() + first * dq;
    kernels::attention_paged(a);
  });
}

}  // namespace cortex
