#include "model/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"

namespace cortex {

linear_group make_linear_group(const std::vector<const kernels::weight_view*>& parts, kernels::thread_pool& pool,
                               const gguf::file& f, bool all_prefill) {
  // Runs of consecutive parts with one packable type and cols share a packed
  // matrix (one activation quantization, one parallel_for); others use matmul.
  linear_group g;
  const int n = static_cast<int>(parts.size());
  for (int i = 0; i < n;) {
    linear_unit u;
    u.first = i;
    const auto& w = *parts[static_cast<size_t>(i)];
    if (all_prefill && kernels::float_panels_supported(w.type) && w.rows > 0 && w.cols > 0) {
      u.panels = kernels::pack_float_panels(w, pool);
      f.release_pages(w.data, static_cast<size_t>(w.rows) * w.row_bytes);
      g.units.push_back(std::move(u));
      ++i;
      continue;
    }
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
    const bool all_prefill = m.hparams().encoder.enabled;
    ll.qkv = make_linear_group(mm.qkv, pool, f, all_prefill);
    ll.wo = make_linear_group(mm.wo, pool, f, all_prefill);
    ll.gate_up = make_linear_group(mm.gate_up, pool, f, all_prefill);
    ll.down = make_linear_group(mm.down, pool, f, all_prefill);
    ll.per_layer_gate = make_linear_group(mm.per_layer_gate, pool, f);
    ll.per_layer_proj = make_linear_group(mm.per_layer_proj, pool, f);
    if (L.ffn_gate_inp.data != nullptr) ll.router = make_linear_group({&L.ffn_gate_inp}, pool, f);
    for (size_t e = 0; e < L.gate_exps.size(); ++e) {
      ll.exp_gate_up.push_back(make_linear_group({&L.gate_exps[e], &L.up_exps[e]}, pool, f));
      ll.exp_down.push_back(make_linear_group({&L.down_exps[e]}, pool, f));
    }
    linears_.push_back(std::move(ll));
  }
  if (w.per_layer_model_proj.data != nullptr) per_layer_model_proj_ = make_linear_group({&w.per_layer_model_proj}, pool, f);
}

void blocks::run_group(const linear_group& g, const float* x, int n_tokens, float* const* ys) {
  for (const auto& u : g.units) {
    if (!u.packed.empty()) {
      kernels::matmul_packed(u.packed, x, n_tokens, ys + u.first, pool_, mm_scratch_);
    } else if (!u.panels.empty()) {
      kernels::matmul_float_panels(u.panels, x, n_tokens, ys[u.first], pool_, mm_scratch_);
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
  const size_t dq = static_cast<size_t>(std::max(h.n_embd_q(), h.max_n_embd_q()));
  const size_t dkv = static_cast<size_t>(std::max(h.n_embd_kv(), h.max_n_embd_kv()));
  q_.resize(T * dq);
  attn_.resize(T * dq);
  k_.resize(T * dkv);
  v_.resize(T * dkv);
  const size_t ff = static_cast<size_t>(std::max({h.n_ff, h.max_n_ff(), h.moe.n_ff_exp}));
  if (h.n_embd_per_layer > 0) {
    ple_.resize(T * h.n_layer * h.n_embd_per_layer);
    ple_gate_.resize(T * h.n_embd_per_layer);
  }
  gate_.resize(T * ff);
  up_.resize(T * ff);
  bool q_gate = false;
  for (const auto& a : h.attn) q_gate = q_gate || a.q_gate;
  if (q_gate) {
    qg_.resize(T * 2 * dq);
    q_gate_.resize(T * dq);
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
    moe_order_.resize(static_cast<size_t>(h.moe.n_expert));
    side_.resize(T * h.n_embd);
    router_in_.resize(T * h.n_embd);
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
    if (state_floats > 0 && s.state == nullptr) {
      throw std::invalid_argument("a model with recurrent layers needs batch_seq::state for every sequence");
    }
    if (state_floats > 0 && s.pos0 == 0) std::fill(s.state, s.state + state_floats, 0.0f);
    if (hp().encoder.enabled && (s.pos0 != 0 || s.embd == nullptr)) {
      throw std::invalid_argument("an encoder computes a sequence's whole input in one step (pos0 0) into batch_seq::embd");
    }
  }
}

void blocks::norm(const float* in, const std::vector<float>& w, float* out) {
  const int d = hp().n_embd;
  for_token_ranges([&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) {
      kernels::rmsnorm(in + static_cast<size_t>(t) * d, w.data(), out + static_cast<size_t>(t) * d, d, hp().rms_eps);
    }
  });
}

void blocks::norm_scaled(const float* in, const std::vector<float>& w, float factor, float* out) {
  norm(in, w, out);
  const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd;
  for (size_t i = 0; i < n; ++i) out[i] *= factor;
}

void blocks::add_to_out(const float* in) {
  kernels::add_inplace(tmp_.data(), in, n_tokens_ * hp().n_embd);
}

void blocks::residual() {
  const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd;
  if (hp().residual_scale != 1.0f) {
    for (size_t i = 0; i < n; ++i) tmp_[i] *= hp().residual_scale;
  }
  const int d = hp().n_embd;
  for_token_ranges([&](int t0, int t1) {
    const size_t at = static_cast<size_t>(t0) * d;
    kernels::add_inplace(x_.data() + at, tmp_.data() + at, (t1 - t0) * d);
  });
}

void blocks::per_layer_inputs() {
  const auto& h = hp();
  const auto& w = m_.weights();
  const int P = h.n_embd_per_layer, n_all = h.n_layer * P;
  float* const out[1] = {ple_.data()};
  run_group(per_layer_model_proj_, x_.data(), n_tokens_, out);
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd));
  const float embd_scale = std::sqrt(static_cast<float>(P));
  const float input_scale = 1.0f / std::sqrt(2.0f);
  std::vector<float>& row = ple_gate_;  // scratch for one token's looked-up row (n_layer * P <= T * P)
  row.resize(std::max(row.size(), static_cast<size_t>(n_all)));
  int t = 0;
  for (const auto& s : *batch_) {
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      float* p = ple_.data() + static_cast<size_t>(t) * n_all;
      const auto* src = static_cast<const uint8_t*>(w.per_layer_token_embd.data) +
                        static_cast<size_t>(s.tokens[i]) * w.per_layer_token_embd.row_bytes;
      dequantize_row(w.per_layer_token_embd.type, src, row.data(), n_all);
      for (int j = 0; j < n_all; ++j) p[j] *= proj_scale;
      for (int l = 0; l < h.n_layer; ++l) {
        float* pl = p + static_cast<size_t>(l) * P;
        kernels::rmsnorm(pl, w.per_layer_proj_norm.data(), pl, P, h.rms_eps);
      }
      for (int j = 0; j < n_all; ++j) p[j] = (p[j] + row[static_cast<size_t>(j)] * embd_scale) * input_scale;
    }
  }
}

void blocks::per_layer_input(int il) {
  const auto& h = hp();
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  const int P = h.n_embd_per_layer;
  float* const gate[1] = {ple_gate_.data()};
  run_group(LL.per_layer_gate, x_.data(), n_tokens_, gate);
  for (int t = 0; t < n_tokens_; ++t) {
    float* g = ple_gate_.data() + static_cast<size_t>(t) * P;
    const float* e = ple_.data() + (static_cast<size_t>(t) * h.n_layer + il) * P;
    kernels::gelu_mul(g, e, g, P);
  }
  float* const out[1] = {tmp_.data()};
  run_group(LL.per_layer_proj, ple_gate_.data(), n_tokens_, out);
  norm(tmp_.data(), L.per_layer_post_norm, tmp_.data());
  kernels::add_inplace(x_.data(), tmp_.data(), n_tokens_ * h.n_embd);
}

void blocks::scale_output(int il) {
  const std::vector<float>& s = weights(il).out_scale;
  if (s.empty()) return;
  const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd;
  for (size_t i = 0; i < n; ++i) x_[i] *= s[0];
}

void blocks::add_bias(float* y, const std::vector<float>& b) {
  if (b.empty()) return;
  const size_t n = b.size();
  for_token_ranges([&](int t0, int t1) { add_bias_rows(y + static_cast<size_t>(t0) * n, b, t1 - t0); });
}

void add_bias_rows(float* y, const std::vector<float>& b, int n_tokens) {
  if (b.empty()) return;
  const int n = static_cast<int>(b.size());
  for (int t = 0; t < n_tokens; ++t) kernels::add_inplace(y + static_cast<size_t>(t) * n, b.data(), n);
}

void blocks::head_norm(float* x, int n_heads, int hd, const std::vector<float>& w) {
  if (w.empty()) return;
  for (int r = 0; r < n_tokens_ * n_heads; ++r) {
    float* row = x + static_cast<size_t>(r) * hd;
    kernels::rmsnorm(row, w.data(), row, hd, hp().rms_eps);
  }
}

void blocks::head_norm_unweighted(float* x, int n_heads, int hd) {
  // ggml_rms_norm without a weight: x / sqrt(mean(x^2) + eps).
  if (ones_.size() < static_cast<size_t>(hd)) ones_.assign(static_cast<size_t>(hd), 1.0f);
  for (int r = 0; r < n_tokens_ * n_heads; ++r) {
    float* row = x + static_cast<size_t>(r) * hd;
    kernels::rmsnorm(row, ones_.data(), row, hd, hp().rms_eps);
  }
}

void blocks::rope_qk(int il) {
  const auto& h = hp();
  const layer_attention& a = h.attn[static_cast<size_t>(il)];
  if (a.rope == rope_kind::none) return;
  const float* factors = a.rope_factors ? rope_factors_ : nullptr;
  const bool neox = a.rope == rope_kind::neox;
  const int hd = h.head_dim_of(il), n_rot = h.n_rot_of(il), n_kv = h.n_head_kv_of(il);
  const kernels::yarn_params yarn =
      a.yarn_ext_factor != 0.0f
          ? kernels::yarn_corr_dims(n_rot, h.n_ctx_orig, a.rope_freq_base, a.yarn_beta_fast, a.yarn_beta_slow, a.yarn_ext_factor)
          : kernels::yarn_params{};
  const int dq = h.n_embd_q(il), dkv = h.n_embd_kv(il);
  const bool own_kv = h.has_own_kv(il);
  int t = 0;
  for (const auto& s : *batch_) {
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      kernels::rope(q_.data() + static_cast<size_t>(t) * dq, h.n_head, hd, n_rot, pos, a.rope_freq_base, neox,
                    a.rope_freq_scale, factors, a.rope_attn_factor, yarn);
      if (!own_kv) continue;
      kernels::rope(k_.data() + static_cast<size_t>(t) * dkv, n_kv, hd, n_rot, pos, a.rope_freq_base, neox,
                    a.rope_freq_scale, factors, a.rope_attn_factor, yarn);
    }
  }
}

void blocks::attention(int il) {
  const layer_weights& L = weights(il);
  const auto& LL = linears_[static_cast<size_t>(il)];
  // A layer that shares an earlier layer's K/V has only its q projection
  // here; one with a query gate projects [q; gate] per head (split below).
  const bool q_gate = hp().attn[static_cast<size_t>(il)].q_gate;
  float* const qkv[3] = {q_gate ? qg_.data() : q_.data(), k_.data(), v_.data()};
  run_group(LL.qkv, xn_.data(), n_tokens_, qkv);
  const auto& h = hp();
  const int hd = h.head_dim_of(il), n_kv = h.n_head_kv_of(il);
  if (q_gate) split_query_gate(hd);
  const bool own_kv = h.has_own_kv(il);
  // A layer without a V projection uses its K projection as V (Gemma 4's
  // full layers), taken before the K norm.
  if (own_kv && L.wv.data == nullptr) std::copy_n(k_.data(), static_cast<size_t>(n_tokens_) * h.n_embd_kv(il), v_.data());
  add_bias(q_.data(), L.bq);
  add_bias(k_.data(), L.bk);
  add_bias(v_.data(), L.bv);
  head_norm(q_.data(), h.n_head, hd, L.attn_q_norm);
  if (own_kv) {
    head_norm(k_.data(), n_kv, hd, L.attn_k_norm);
    if (h.attn[static_cast<size_t>(il)].v_norm) head_norm_unweighted(v_.data(), n_kv, hd);
  }
  rope_qk(il);
  if (h.encoder.enabled) {
    attend_bidirectional(il);
  } else {
    attend(il);
  }
  if (q_gate) {
    const size_t n = static_cast<size_t>(n_tokens_) * hp().n_embd_q(il);
    for (size_t i = 0; i < n; ++i) attn_[i] *= 1.0f / (1.0f + std::exp(-q_gate_[i]));
  }
  float* const out[1] = {tmp_.data()};
  run_group(LL.wo, attn_.data(), n_tokens_, out);
  add_bias(tmp_.data(), L.bo);
}

void blocks::activate(float* gate, const float* up, int n, ffn_activation act) {
  switch (act) {
    case ffn_activation::gelu_tanh: kernels::gelu_mul(gate, up, gate, n); break;
    case ffn_activation::silu: kernels::silu_mul(gate, up, gate, n); break;
    case ffn_activation::swiglu_oai: kernels::swiglu_oai(gate, up, gate, n, 1.702f, 7.0f); break;
    case ffn_activation::gelu_fp16:
      kernels::gelu_fp16_table(gate, gate, n);
      for (int i = 0; i < n; ++i) gate[i] *= up[i];
      break;
  }
}

void blocks::split_query_gate(int hd) {
  // qg_ rows are, per head, hd query values then hd gate values.
  const int n_head = hp().n_head;
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
    moe_ffn(il, act, xn_.data());
    if (!weights(il).ffn_gate_inp_shexp.empty()) shared_expert(il, act);
    return;
  }
  ffn_dense(il, act);
}

void blocks::experts(int il, ffn_activation act, const float* router_in) { moe_ffn(il, act, router_in); }

void blocks::ffn_dense(int il, ffn_activation act) {
  const auto& LL = linears_[static_cast<size_t>(il)];
  float* const gate_up[2] = {gate_.data(), up_.data()};
  run_group(LL.gate_up, xn_.data(), n_tokens_, gate_up);
  activate(gate_.data(), up_.data(), n_tokens_ * hp().n_ff_of(il), act);
  float* const out[1] = {tmp_.data()};
  run_group(LL.down, gate_.data(), n_tokens_, out);
}

void blocks::attend(int il) {
  const auto& h = hp();
  const layer_attention& spec = h.attn[static_cast<size_t>(il)];
  const auto& batch = *batch_;
  kv_arena& kv = *kv_;
  const int dq = h.n_embd_q(il);
  const int dkv = h.n_embd_kv(il);
  const int bs = kv.block_size();
  const int kv_layer = h.kv_layer_of(il);   // whose cache this layer reads (itself unless it shares)
  const int kv_group = kv.group_of(il);  // whose block table holds this layer's K/V
  // Write this step's K/V rows into each sequence's blocks, converted to the arena's type.
  int t = 0;
  for (const auto& s : batch) {
    if (kv_layer != il) break;  // a sharing layer writes nothing
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      const size_t slot = static_cast<size_t>(s.table(kv_group)[pos / bs]) * bs + pos % bs;
      kv.store_token(il, slot, k_.data() + static_cast<size_t>(t) * dkv, v_.data() + static_cast<size_t>(t) * dkv);
    }
  }
  plan_attention(il, spec.window);
  const std::vector<float>& sink_logits = weights(il).attn_sinks;
  const bool sinks = !sink_logits.empty();
  if (sinks) lse_.resize(static_cast<size_t>(capacity_tokens_) * h.n_head);
  const int group = h.n_head / h.n_head_kv_of(kv_layer);
  const size_t part_floats = static_cast<size_t>(n_tokens_) * dq;
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
    a.k_arena = kv.k(kv_layer);
    a.v_arena = kv.v(kv_layer);
    a.block_table = s.table(kv_group);
    a.layout = kv.layout(kv_layer);
    a.scale = spec.scale;
    a.softcap = spec.softcap;
    a.window = spec.window;
    a.part_keys = kernels::attention_part_keys;
    if (task.part < 0) {
      a.out = attn_.data() + first * dq;
      if (sinks) a.lse = lse_.data() + first * h.n_head;
    } else {
      // One key part on its own: its output and log-sum-exp, folded below.
      a.out = part_out_.data() + static_cast<size_t>(task.part) * part_floats + first * dq;
      a.lse = part_lse_.data() + (static_cast<size_t>(task.part) * n_tokens_ + first) * h.n_head;
      a.key_begin = task.part * kernels::attention_part_keys;
      a.key_end = a.key_begin + kernels::attention_part_keys;
    }
    kernels::attention_paged(a);
  });
  if (n_key_parts_ > 1) merge_key_parts(il, sinks);
  if (sinks) apply_sinks(il, sink_logits);
}

void blocks::apply_sinks(int il, const std::vector<float>& sink_logits) {
  // A sink is one more logit per head in the softmax's denominator with no
  // value: the output normalised over the keys (log-sum-exp L) becomes
  // out * e^L / (e^L + e^sink) = out / (1 + e^(sink - L)).
  const auto& h = hp();
  const int hd = h.head_dim_of(il);
  for (int r = 0; r < n_tokens_ * h.n_head; ++r) {
    const float lse = lse_[static_cast<size_t>(r)];
    const float sink = sink_logits[static_cast<size_t>(r % h.n_head)];
    const float keep = static_cast<float>(1.0 / (1.0 + std::exp(static_cast<double>(sink) - lse)));
    float* row = attn_.data() + static_cast<size_t>(r) * hd;
    for (int i = 0; i < hd; ++i) row[i] *= keep;
  }
}

void blocks::plan_attention(int il, int window) {
  const auto& h = hp();
  const int n_kv = h.n_head_kv_of(il);
  const auto& batch = *batch_;
  const int n_seqs = static_cast<int>(batch.size());
  const int n_threads = pool_.size();
  const int pk = kernels::attention_part_keys;
  attn_tasks_.clear();
  // Every row's keys are cut into parts at the same absolute positions
  // (attention_part_keys), in one task (the kernel folds them) or, where
  // (sequence, KV head) pairs are fewer than the threads and the step is
  // small (decode, verify), one task per part so that every thread streams
  // K/V, folded in the same order afterwards: the same bits either way, so
  // a row's output does not depend on the batch or the thread count.
  n_key_parts_ = 1;
  if (n_seqs * n_kv < n_threads && n_tokens_ <= k_split_max_tokens) {
    int max_keys = 0;
    for (const auto& s : batch) max_keys = std::max(max_keys, s.pos0 + s.n_tokens);
    const int n_parts = (max_keys + pk - 1) / pk;
    if (n_parts >= 2 && n_parts <= k_split_max_parts) n_key_parts_ = n_parts;
  }
  if (n_key_parts_ > 1) {
    const size_t n = static_cast<size_t>(n_key_parts_) * n_tokens_;
    part_out_.resize(n * static_cast<size_t>(std::max(h.n_embd_q(), h.max_n_embd_q())));
    part_lse_.assign(n * h.n_head, -INFINITY);  // parts a row has no key in stay empty
  }
  for (int si = 0; si < n_seqs; ++si) {
    const auto& s = batch[static_cast<size_t>(si)];
    // Prefill chunks: query tiles of 32 tokens, latest (longest) first, so
    // that the dynamic task queue ends on short ones.
    const int q_tile = 32;
    const int n_tiles = (s.n_tokens + q_tile - 1) / q_tile;
    for (int tile = n_tiles - 1; tile >= 0; --tile) {
      const int q_begin = tile * q_tile, q_end = std::min(s.n_tokens, q_begin + q_tile);
      for (int g = 0; g < n_kv; ++g) {
        if (n_key_parts_ == 1) {
          attn_tasks_.push_back({si, g, q_begin, q_end, -1});
          continue;
        }
        // The parts holding keys [k0, n_keys): with a window, the tile's
        // first query sees nothing before k0, nor does any later one.
        const int n_keys = s.pos0 + q_end;
        const int k0 = window > 0 ? std::max(0, s.pos0 + q_begin - window + 1) : 0;
        for (int part = k0 / pk; part * pk < n_keys; ++part) attn_tasks_.push_back({si, g, q_begin, q_end, part});
      }
    }
  }
}

void blocks::merge_key_parts(int il, bool with_lse) {
  const auto& h = hp();
  const size_t part_floats = static_cast<size_t>(n_tokens_) * h.n_embd_q(il);
  std::vector<const float*>& outs = part_outs_;
  std::vector<const float*>& lses = part_lses_;
  outs.resize(static_cast<size_t>(n_key_parts_));
  lses.resize(static_cast<size_t>(n_key_parts_));
  for (int j = 0; j < n_key_parts_; ++j) {
    outs[static_cast<size_t>(j)] = part_out_.data() + static_cast<size_t>(j) * part_floats;
    lses[static_cast<size_t>(j)] = part_lse_.data() + static_cast<size_t>(j) * n_tokens_ * h.n_head;
  }
  // Rows (token, head) of the whole step are contiguous in every part.
  kernels::attention_merge(outs.data(), lses.data(), n_key_parts_, n_tokens_ * h.n_head, h.head_dim_of(il),
                           attn_.data(), with_lse ? lse_.data() : nullptr);
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

void sandwich_attention(blocks& b, int il) {
  const layer_weights& L = b.weights(il);
  b.norm(b.x(), L.attn_norm, b.xn());
  b.attention(il);
  b.norm(b.out(), L.post_attn_norm, b.out());
  b.residual();
}

void sandwich_norm_layer(blocks& b, int il, ffn_activation act) {
  const layer_weights& L = b.weights(il);
  sandwich_attention(b, il);
  b.norm(b.x(), L.ffn_norm, b.xn());
  b.ffn(il, act);
  b.norm(b.out(), L.post_ffn_norm, b.out());
  b.residual();
}

}  // namespace cortex
