#include "model/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"

namespace cortex {

linear_group make_linear_group(const std::vector<const kernels::weight_view*>& parts, kernels::thread_pool& pool,
                               const gguf::file& f) {
  // Runs of consecutive parts with one packable type and cols share a packed
  // matrix (one activation quantization, one parallel_for); others use matmul.
  linear_group g;
  const int n = static_cast<int>(parts.size());
  for (int i = 0; i < n;) {
    linear_unit u;
    u.first = i;
    const auto& w = *parts[static_cast<size_t>(i)];
    if (!kernels::packed_is_faster(w.type)) {
      u.view = &w;
      g.units.push_back(std::move(u));
      ++i;
      continue;
    }
    std::vector<kernels::weight_view> run;
    while (i < n && parts[static_cast<size_t>(i)]->type == w.type && parts[static_cast<size_t>(i)]->cols == w.cols) {
      run.push_back(*parts[static_cast<size_t>(i)]);
      ++i;
    }
    u.n = static_cast<int>(run.size());
    u.packed = kernels::pack_matrix(run.data(), u.n, pool);
    // The packed copy is what the pass reads: the mapped originals leave the
    // resident set (an 8B model would otherwise count twice), re-read from
    // the file only if something else needs them.
    for (const auto& v : run) f.release_pages(v.data, static_cast<size_t>(v.rows) * v.row_bytes);
    g.units.push_back(std::move(u));
  }
  return g;
}

blocks::blocks(const model& m, kernels::thread_pool& pool, int n_ctx_seq) : m_(m), pool_(pool) {
  const auto& f = m.file();
  const auto& w = m.weights();
  const int n_ctx = n_ctx_seq > 0 ? n_ctx_seq : m.hparams().n_ctx_train;
  if (!w.rope_freqs.empty()) {
    rope_factors_ = w.rope_freqs.data();
  } else if (!w.rope_long.empty() && n_ctx > m.hparams().n_ctx_orig) {
    rope_factors_ = w.rope_long.data();
  } else if (!w.rope_short.empty()) {
    rope_factors_ = w.rope_short.data();
  }
  size_t state_offset = 0;
  for (const auto& a : m.hparams().attn) {
    state_offset_.push_back(state_offset);
    if (a.recurrent) state_offset += m.hparams().delta_net.layer_state_floats();
  }
  for (const auto& L : m.weights().layers) {
    const layer_matrices mm = matrices_of(L);
    layer_linears ll;
    ll.qkv = make_linear_group(mm.qkv, pool, f);
    ll.wo = make_linear_group(mm.wo, pool, f);
    ll.gate_up = make_linear_group(mm.gate_up, pool, f);
    ll.down = make_linear_group(mm.down, pool, f);
    if (L.ffn_gate_inp.data != nullptr) ll.router = make_linear_group({&L.ffn_gate_inp}, pool, f);
    for (size_t e = 0; e < L.gate_exps.size(); ++e) {
      ll.exp_gate_up.push_back(make_linear_group({&L.gate_exps[e], &L.up_exps[e]}, pool, f));
      ll.exp_down.push_back(make_linear_group({&L.down_exps[e]}, pool, f));
    }
    linears_.push_back(std::move(ll));
  }
}

void blocks::run_group(const linear_group& g, const float* x, int n_tokens, float* const* ys) {
  for (const auto& u : g.units) {
    if (!u.packed.empty()) {
      kernels::matmul_packed(u.packed, x, n_tokens, ys + u.first, pool_, mm_scratch_);
    } else {
      kernels::matmul(*u.view, x, n_tokens, ys[u.first], pool_, mm_scratch_);
    }
  }
}

void blocks::ensure_capacity(int n_tokens) {
  if (n_tokens <= capacity_tokens_) return;
  const auto& h = hp();
  const size_t T = static_cast<size_t>(n_tokens);
  x_.resize(T * h.n_embd);
  xn_.resize(T * h.n_embd);
  tmp_.resize(T * h.n_embd);
  q_.resize(T * h.n_embd_q());
  attn_.resize(T * h.n_embd_q());
  k_.resize(T * h.n_embd_kv());
  v_.resize(T * h.n_embd_kv());
  const size_t ff = static_cast<size_t>(std::max(h.n_ff, h.moe.n_ff_exp));
  gate_.resize(T * ff);
  up_.resize(T * ff);
  bool q_gate = false;
  for (const auto& a : h.attn) q_gate = q_gate || a.q_gate;
  if (q_gate) {
    qg_.resize(T * 2 * h.n_embd_q());
    q_gate_.resize(T * h.n_embd_q());
  }
  if (h.delta_net.conv_kernel > 0) {
    const auto& dn = h.delta_net;
    dn_mixed_.resize(T * dn.conv_channels());
    dn_conv_.resize(T * dn.conv_channels());
    dn_z_.resize(T * dn.value_dim());
    dn_beta_.resize(T * dn.n_v_heads);
    dn_alpha_.resize(T * dn.n_v_heads);
    dn_out_.resize(T * dn.value_dim());
  }
  if (h.moe.enabled()) {
    const size_t K = static_cast<size_t>(h.moe.n_used);
    moe_logits_.resize(T * h.moe.n_expert);
    moe_sel_.resize(T * K);
    moe_w_.resize(T * K);
    moe_x_.resize(T * h.n_embd);
    moe_out_.resize(T * K * h.n_embd);
    moe_slots_.resize(static_cast<size_t>(h.moe.n_expert));
  }
  capacity_tokens_ = n_tokens;
}

void blocks::begin_step(const std::vector<batch_seq>& batch, kv_arena& kv, int n_tokens) {
  batch_ = &batch;
  kv_ = &kv;
  n_tokens_ = n_tokens;
  ensure_capacity(n_tokens);
  seq_first_.clear();
  int t = 0;
  const size_t state_floats = hp().state_floats();
  for (const auto& s : batch) {
    seq_first_.push_back(t);
    t += s.n_tokens;
    if (state_floats > 0 && s.pos0 == 0) std::fill(s.state, s.state + state_floats, 0.0f);
  }
}

void blocks::norm(const float* in, const std::vector<float>& w, float* out) {
  const int d = hp().n_embd;
  for (int t = 0; t < n_tokens_; ++t) {
    kernels::rmsnorm(in + static_cast<size_t>(t) * d, w.data(), out + static_cast<size_t>(t) * d, d, hp().rms_eps);
  }
}

void blocks::residual() {
  const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd;
  if (hp().residual_scale != 1.0f) {
    for (size_t i = 0; i < n; ++i) tmp_[i] *= hp().residual_scale;
  }
  kernels::add_inplace(x_.data(), tmp_.data(), static_cast<int>(n));
}

namespace {

void add_bias(float* y, const std::vector<float>& b, int n_tokens) {
  if (b.empty()) return;
  const int n = static_cast<int>(b.size());
  for (int t = 0; t < n_tokens; ++t) kernels::add_inplace(y + static_cast<size_t>(t) * n, b.data(), n);
}

}  // namespace

void blocks::head_norm(float* x, int n_heads, const std::vector<float>& w) {
  if (w.empty()) return;
  const int hd = hp().head_dim;
  for (int r = 0; r < n_tokens_ * n_heads; ++r) {
    float* row = x + static_cast<size_t>(r) * hd;
    kernels::rmsnorm(row, w.data(), row, hd, hp().rms_eps);
  }
}

void blocks::rope_qk(int il) {
  const auto& h = hp();
  const layer_attention& a = h.attn[static_cast<size_t>(il)];
  if (a.rope == rope_kind::none) return;
  const float* factors = a.rope_factors ? rope_factors_ : nullptr;
  const bool neox = a.rope == rope_kind::neox;
  const kernels::yarn_params yarn =
      a.yarn_ext_factor != 0.0f
          ? kernels::yarn_corr_dims(h.n_rot, h.n_ctx_orig, a.rope_freq_base, a.yarn_beta_fast, a.yarn_beta_slow, a.yarn_ext_factor)
          : kernels::yarn_params{};
  const int dq = h.n_embd_q(), dkv = h.n_embd_kv();
  int t = 0;
  for (const auto& s : *batch_) {
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      kernels::rope(q_.data() + static_cast<size_t>(t) * dq, h.n_head, h.head_dim, h.n_rot, pos, a.rope_freq_base, neox,
                    a.rope_freq_scale, factors, a.rope_attn_factor, yarn);
      kernels::rope(k_.data() + static_cast<size_t>(t) * dkv, h.n_head_kv, h.head_dim, h.n_rot, pos, a.rope_freq_base,
                    neox, a.rope_freq_scale, factors, a.rope_attn_factor, yarn);
    }
  }
}

void blocks::attention(int il) {
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  const bool q_gate = hp().attn[static_cast<size_t>(il)].q_gate;
  float* const qkv[3] = {q_gate ? qg_.data() : q_.data(), k_.data(), v_.data()};
  run_group(LL.qkv, xn_.data(), n_tokens_, qkv);
  if (q_gate) split_query_gate();
  add_bias(q_.data(), L.bq, n_tokens_);
  add_bias(k_.data(), L.bk, n_tokens_);
  add_bias(v_.data(), L.bv, n_tokens_);
  head_norm(q_.data(), hp().n_head, L.attn_q_norm);
  head_norm(k_.data(), hp().n_head_kv, L.attn_k_norm);
  rope_qk(il);
  attend(il);
  if (q_gate) {
    const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd_q();
    for (size_t i = 0; i < n; ++i) attn_[i] *= 1.0f / (1.0f + std::exp(-q_gate_[i]));
  }
  float* const out[1] = {tmp_.data()};
  run_group(LL.wo, attn_.data(), n_tokens_, out);
  add_bias(tmp_.data(), L.bo, n_tokens_);
}

void blocks::activate(float* gate, const float* up, int n, ffn_activation act) {
  switch (act) {
    case ffn_activation::gelu_tanh: kernels::gelu_mul(gate, up, gate, n); break;
    case ffn_activation::silu: kernels::silu_mul(gate, up, gate, n); break;
    case ffn_activation::swiglu_oai: kernels::swiglu_oai(gate, up, gate, n, 1.702f, 7.0f); break;
  }
}

void blocks::split_query_gate() {
  // qg_ rows are, per head, hd query values then hd gate values.
  const int hd = hp().head_dim, n_head = hp().n_head;
  for (int t = 0; t < n_tokens_; ++t) {
    for (int h = 0; h < n_head; ++h) {
      const float* src = qg_.data() + (static_cast<size_t>(t) * n_head + h) * 2 * hd;
      const size_t dst = (static_cast<size_t>(t) * n_head + h) * hd;
      std::copy(src, src + hd, q_.data() + dst);
      std::copy(src + hd, src + 2 * hd, q_gate_.data() + dst);
    }
  }
}

void blocks::ffn(int il, ffn_activation act) {
  if (hp().moe.enabled()) {
    moe_ffn(il, act);
    if (!weights(il).ffn_gate_inp_shexp.empty()) shared_expert(il, act);
    return;
  }
  const auto& LL = linears_[static_cast<size_t>(il)];
  float* const gate_up[2] = {gate_.data(), up_.data()};
  run_group(LL.gate_up, xn_.data(), n_tokens_, gate_up);
  activate(gate_.data(), up_.data(), n_tokens_ * hp().n_ff, act);
  float* const out[1] = {tmp_.data()};
  run_group(LL.down, gate_.data(), n_tokens_, out);
}

void blocks::attend(int il) {
  const auto& h = hp();
  const layer_attention& spec = h.attn[static_cast<size_t>(il)];
  const auto& batch = *batch_;
  kv_arena& kv = *kv_;
  const int dq = h.n_embd_q();
  const int dkv = h.n_embd_kv();
  const int bs = kv.block_size();
  const int kv_group = kv.group_of(il);  // whose block table holds this layer's K/V
  // Write this step's K/V rows into each sequence's blocks, converted to the arena's type.
  int t = 0;
  for (const auto& s : batch) {
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      const size_t slot = static_cast<size_t>(s.table(kv_group)[pos / bs]) * bs + pos % bs;
      kv.store_token(il, slot, k_.data() + static_cast<size_t>(t) * dkv, v_.data() + static_cast<size_t>(t) * dkv);
    }
  }
  plan_attention(bs, spec.window);
  const std::vector<float>& sink_logits = weights(il).attn_sinks;
  const bool sinks = !sink_logits.empty();
  if (sinks) lse_.resize(static_cast<size_t>(capacity_tokens_) * h.n_head);
  const int group = h.n_head / h.n_head_kv;
  const size_t part_floats = static_cast<size_t>(capacity_tokens_) * dq;
  pool_.parallel_for(static_cast<int>(attn_tasks_.size()), [&](int ti, int) {
    const attn_task& task = attn_tasks_[static_cast<size_t>(ti)];
    const auto& s = batch[static_cast<size_t>(task.seq)];
    const size_t first = static_cast<size_t>(seq_first_[static_cast<size_t>(task.seq)]) + task.q_begin;
    kernels::attention_args a;
    a.q = q_.data() + first * dq;
    a.n_q = task.q_end - task.q_begin;
    a.pos0 = s.pos0 + task.q_begin;
    a.n_heads = h.n_head;
    a.head_begin = task.kv_head * group;
    a.head_end = (task.kv_head + 1) * group;
    a.k_arena = kv.k(il);
    a.v_arena = kv.v(il);
    a.block_table = s.table(kv_group);
    a.layout = kv.layout();
    a.scale = spec.scale;
    a.softcap = spec.softcap;
    a.window = spec.window;
    if (task.part < 0) {
      a.out = attn_.data() + first * dq;
      if (sinks) a.lse = lse_.data() + first * h.n_head;
    } else {
      // A key-range part: its own output and log-sum-exp, merged below.
      a.out = part_out_.data() + static_cast<size_t>(task.part) * part_floats + first * dq;
      a.lse = part_lse_.data() + (static_cast<size_t>(task.part) * capacity_tokens_ + first) * h.n_head;
      a.key_begin = task.key_begin;
      a.key_end = task.key_end;
    }
    kernels::attention_paged(a);
  });
  if (n_key_parts_ > 1) merge_key_parts();
  if (sinks) apply_sinks(sink_logits);
}

void blocks::apply_sinks(const std::vector<float>& sink_logits) {
  // A sink is one more logit per head in the softmax's denominator with no
  // value: the output normalised over the keys (log-sum-exp L) becomes
  // out * e^L / (e^L + e^sink) = out / (1 + e^(sink - L)).
  const auto& h = hp();
  const size_t part_rows = static_cast<size_t>(capacity_tokens_) * h.n_head;
  for (int r = 0; r < n_tokens_ * h.n_head; ++r) {
    float lse = -INFINITY;
    if (n_key_parts_ == 1) {
      lse = lse_[static_cast<size_t>(r)];
    } else {
      float top = -INFINITY;
      for (int j = 0; j < n_key_parts_; ++j) top = std::max(top, part_lse_[j * part_rows + static_cast<size_t>(r)]);
      double sum = 0.0;
      for (int j = 0; j < n_key_parts_; ++j) sum += std::exp(static_cast<double>(part_lse_[j * part_rows + static_cast<size_t>(r)]) - top);
      lse = top + static_cast<float>(std::log(sum));
    }
    const float sink = sink_logits[static_cast<size_t>(r % h.n_head)];
    const float keep = static_cast<float>(1.0 / (1.0 + std::exp(static_cast<double>(sink) - lse)));
    float* row = attn_.data() + static_cast<size_t>(r) * h.head_dim;
    for (int i = 0; i < h.head_dim; ++i) row[i] *= keep;
  }
}

void blocks::plan_attention(int block_size, int window) {
  const auto& h = hp();
  const auto& batch = *batch_;
  const int n_seqs = static_cast<int>(batch.size());
  const int n_threads = pool_.size();
  attn_tasks_.clear();
  // Few (sequence, KV head) pairs for the threads, and long contexts: split
  // each one's keys into ranges (aligned to blocks, >= 256 keys each) whose
  // parts are merged by log-sum-exp, so every thread streams K/V. A window
  // bounds the keys a query can see, so it bounds the split too.
  n_key_parts_ = 1;
  if (n_seqs * h.n_head_kv < n_threads) {
    int min_ctx = INT32_MAX;
    for (const auto& s : batch) min_ctx = std::min(min_ctx, s.pos0 + s.n_tokens);
    if (window > 0) min_ctx = std::min(min_ctx, window);
    const int want = (n_threads + n_seqs * h.n_head_kv - 1) / (n_seqs * h.n_head_kv);
    n_key_parts_ = std::max(1, std::min({want, min_ctx / 256, 64}));  // 64: attention_merge's limit
  }
  if (n_key_parts_ > 1) {
    const size_t n = static_cast<size_t>(n_key_parts_) * capacity_tokens_;
    part_out_.resize(n * h.n_head * h.head_dim);
    part_lse_.resize(n * h.n_head);
  }
  for (int si = 0; si < n_seqs; ++si) {
    const auto& s = batch[static_cast<size_t>(si)];
    // Prefill chunks: query tiles of 32 tokens, latest (longest) first, so
    // that the dynamic task queue ends on short ones.
    const int q_tile = 32;
    const int n_tiles = (s.n_tokens + q_tile - 1) / q_tile;
    for (int tile = n_tiles - 1; tile >= 0; --tile) {
      const int q_begin = tile * q_tile, q_end = std::min(s.n_tokens, q_begin + q_tile);
      for (int g = 0; g < h.n_head_kv; ++g) {
        if (n_key_parts_ == 1) {
          attn_tasks_.push_back({si, g, q_begin, q_end, 0, 0, -1});
          continue;
        }
        // Keys [k0, n_keys): with a window, the tile's first query sees
        // nothing before k0, nor does any later one.
        const int n_keys = s.pos0 + s.n_tokens;
        const int k0 = window > 0 ? std::max(0, s.pos0 + q_begin - window + 1) / block_size * block_size : 0;
        const int span = n_keys - k0;
        for (int part = 0; part < n_key_parts_; ++part) {
          const int kb = k0 + static_cast<int>(static_cast<int64_t>(span) * part / n_key_parts_) / block_size * block_size;
          const int ke = part + 1 == n_key_parts_
                             ? n_keys
                             : k0 + static_cast<int>(static_cast<int64_t>(span) * (part + 1) / n_key_parts_) /
                                        block_size * block_size;
          attn_tasks_.push_back({si, g, q_begin, q_end, kb, ke, part});
        }
      }
    }
  }
}

void blocks::merge_key_parts() {
  const auto& h = hp();
  const int dq = h.n_embd_q();
  const size_t part_floats = static_cast<size_t>(capacity_tokens_) * dq;
  const float* outs[64];
  const float* lses[64];
  for (int j = 0; j < n_key_parts_; ++j) {
    outs[j] = part_out_.data() + static_cast<size_t>(j) * part_floats;
    lses[j] = part_lse_.data() + static_cast<size_t>(j) * capacity_tokens_ * h.n_head;
  }
  // Rows (token, head) of the whole step are contiguous in every part.
  kernels::attention_merge(outs, lses, n_key_parts_, n_tokens_ * h.n_head, h.head_dim, attn_.data());
}

void pre_norm_layer(blocks& b, int il, ffn_activation act) {
  const layer_weights& L = b.weights(il);
  b.norm(b.x(), L.attn_norm, b.xn());
  b.attention(il);
  b.residual();
  b.norm(b.x(), L.ffn_norm, b.xn());
  b.ffn(il, act);
  b.residual();
}

void sandwich_norm_layer(blocks& b, int il, ffn_activation act) {
  const layer_weights& L = b.weights(il);
  b.norm(b.x(), L.attn_norm, b.xn());
  b.attention(il);
  b.norm(b.out(), L.post_attn_norm, b.out());
  b.residual();
  b.norm(b.x(), L.ffn_norm, b.xn());
  b.ffn(il, act);
  b.norm(b.out(), L.post_ffn_norm, b.out());
  b.residual();
}

}  // namespace cortex
