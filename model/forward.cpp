#include "model/forward.hpp"

#include <cmath>
#include <cstring>

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"

namespace cortex {

forward_pass::forward_pass(const model& m, kernels::thread_pool& pool)
    : m_(m), pool_(pool), n_vocab_(m.hparams().n_vocab) {
  const auto& w = m.weights();
  const auto& f = m.file();
  for (const auto& L : w.layers) {
    layer_linears ll;
    ll.qkv = make_group({&L.wq, &L.wk, &L.wv}, pool, f);
    ll.wo = make_group({&L.wo}, pool, f);
    ll.gate_up = make_group({&L.w_gate, &L.w_up}, pool, f);
    ll.down = make_group({&L.w_down}, pool, f);
    linears_.push_back(std::move(ll));
  }
  output_ = make_group({&w.output}, pool, f);
}

forward_pass::linear_group forward_pass::make_group(const std::vector<const kernels::weight_view*>& parts,
                                                    kernels::thread_pool& pool, const gguf::file& f) {
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

void forward_pass::run_group(const linear_group& g, const float* x, int n_tokens, float* const* ys) {
  for (const auto& u : g.units) {
    if (!u.packed.empty()) {
      kernels::matmul_packed(u.packed, x, n_tokens, ys + u.first, pool_, mm_scratch_);
    } else {
      kernels::matmul(*u.view, x, n_tokens, ys[u.first], pool_, mm_scratch_);
    }
  }
}

void forward_pass::ensure_capacity(int n_tokens, int n_rows) {
  const auto& hp = m_.hparams();
  if (n_tokens > capacity_tokens_) {
    const size_t T = static_cast<size_t>(n_tokens);
    const size_t dq = static_cast<size_t>(hp.n_head) * hp.head_dim;
    x_.resize(T * hp.n_embd);
    xn_.resize(T * hp.n_embd);
    tmp_.resize(T * hp.n_embd);
    q_.resize(T * dq);
    attn_.resize(T * dq);
    k_.resize(T * hp.n_embd_kv());
    v_.resize(T * hp.n_embd_kv());
    gate_.resize(T * hp.n_ff);
    up_.resize(T * hp.n_ff);
    capacity_tokens_ = n_tokens;
  }
  if (n_rows > capacity_rows_) {
    sel_.resize(static_cast<size_t>(n_rows) * hp.n_embd);
    logits_.resize(static_cast<size_t>(n_rows) * n_vocab_);
    capacity_rows_ = n_rows;
  }
}

namespace {

void add_bias(float* y, const std::vector<float>& b, int n_tokens) {
  if (b.empty()) return;
  const int n = static_cast<int>(b.size());
  for (int t = 0; t < n_tokens; ++t) kernels::add_inplace(y + static_cast<size_t>(t) * n, b.data(), n);
}

}  // namespace

void forward_pass::attention_layer(int layer, const std::vector<batch_seq>& batch, kv_arena& kv) {
  const auto& hp = m_.hparams();
  const int dq = hp.n_head * hp.head_dim;
  const int dkv = hp.n_embd_kv();
  const int bs = kv.block_size();
  // Write this step's K/V rows into each sequence's blocks.
  seq_first_.clear();
  int t = 0;
  for (const auto& s : batch) {
    seq_first_.push_back(t);
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      const size_t slot = static_cast<size_t>(s.block_table[pos / bs]) * bs + pos % bs;
      std::memcpy(kv.k(layer) + slot * dkv, k_.data() + static_cast<size_t>(t) * dkv, sizeof(float) * dkv);
      std::memcpy(kv.v(layer) + slot * dkv, v_.data() + static_cast<size_t>(t) * dkv, sizeof(float) * dkv);
    }
  }
  // One task per (sequence, KV head): the query heads sharing a KV head read its K/V once.
  const int group = hp.n_head / hp.n_head_kv;
  const int n_tasks = static_cast<int>(batch.size()) * hp.n_head_kv;
  const kernels::kv_layout layout{bs, hp.n_head_kv, hp.head_dim};
  const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  pool_.parallel_for(n_tasks, [&](int task, int) {
    const int si = task / hp.n_head_kv;
    const int kvh = task % hp.n_head_kv;
    const int first = seq_first_[static_cast<size_t>(si)];
    const auto& s = batch[static_cast<size_t>(si)];
    kernels::attention_paged(q_.data() + static_cast<size_t>(first) * dq, s.n_tokens, s.pos0, hp.n_head,
                             kvh * group, (kvh + 1) * group, kv.k(layer), kv.v(layer), s.block_table, layout, scale,
                             attn_.data() + static_cast<size_t>(first) * dq);
  });
}

void forward_pass::add_hidden_rows(const batch_seq& s, int first) {
  const auto& hp = m_.hparams();
  const int d = hp.n_embd;
  normed_.resize(static_cast<size_t>(d));
  for (int i = 0; i < s.n_tokens; ++i) {
    kernels::rmsnorm(x_.data() + static_cast<size_t>(first + i) * d, m_.weights().output_norm.data(), normed_.data(), d,
                     hp.rms_eps);
    kernels::add_inplace(s.hidden_sum, normed_.data(), d);
  }
}

int forward_pass::run(const std::vector<batch_seq>& batch, kv_arena& kv) {
  const auto& hp = m_.hparams();
  const auto& w = m_.weights();
  int n_tokens = 0, n_rows = 0;
  for (const auto& s : batch) {
    n_tokens += s.n_tokens;
    n_rows += s.logits == logits_mode::all ? s.n_tokens : s.logits == logits_mode::last ? 1 : 0;
  }
  if (n_tokens == 0) return 0;
  ensure_capacity(n_tokens, n_rows);
  const int d = hp.n_embd;
  const int dq = hp.n_head * hp.head_dim;
  const int dkv = hp.n_embd_kv();
  const size_t sd = static_cast<size_t>(d);

  {
    int t = 0;
    for (const auto& s : batch) {
      for (int i = 0; i < s.n_tokens; ++i, ++t) {
        const auto* row = static_cast<const uint8_t*>(w.token_embd.data) + static_cast<size_t>(s.tokens[i]) * w.token_embd.row_bytes;
        dequantize_row(w.token_embd.type, row, x_.data() + t * sd, d);
      }
    }
  }

  for (int l = 0; l < hp.n_layer; ++l) {
    const auto& L = w.layers[static_cast<size_t>(l)];
    for (int t = 0; t < n_tokens; ++t) kernels::rmsnorm(x_.data() + t * sd, L.attn_norm.data(), xn_.data() + t * sd, d, hp.rms_eps);
    const auto& LL = linears_[static_cast<size_t>(l)];
    float* const qkv[3] = {q_.data(), k_.data(), v_.data()};
    run_group(LL.qkv, xn_.data(), n_tokens, qkv);
    add_bias(q_.data(), L.bq, n_tokens);
    add_bias(k_.data(), L.bk, n_tokens);
    add_bias(v_.data(), L.bv, n_tokens);
    {
      int t = 0;
      for (const auto& s : batch) {
        for (int i = 0; i < s.n_tokens; ++i, ++t) {
          const int pos = s.pos0 + i;
          kernels::rope(q_.data() + static_cast<size_t>(t) * dq, hp.n_head, hp.head_dim, hp.n_rot, pos, hp.rope_freq_base, hp.rope_neox);
          kernels::rope(k_.data() + static_cast<size_t>(t) * dkv, hp.n_head_kv, hp.head_dim, hp.n_rot, pos, hp.rope_freq_base, hp.rope_neox);
        }
      }
    }
    attention_layer(l, batch, kv);
    float* const out[1] = {tmp_.data()};
    run_group(LL.wo, attn_.data(), n_tokens, out);
    kernels::add_inplace(x_.data(), tmp_.data(), n_tokens * d);

    for (int t = 0; t < n_tokens; ++t) kernels::rmsnorm(x_.data() + t * sd, L.ffn_norm.data(), xn_.data() + t * sd, d, hp.rms_eps);
    float* const gate_up[2] = {gate_.data(), up_.data()};
    run_group(LL.gate_up, xn_.data(), n_tokens, gate_up);
    kernels::silu_mul(gate_.data(), up_.data(), gate_.data(), n_tokens * hp.n_ff);
    run_group(LL.down, gate_.data(), n_tokens, out);
    kernels::add_inplace(x_.data(), tmp_.data(), n_tokens * d);
  }

  int row = 0, t = 0;
  for (const auto& s : batch) {
    if (s.hidden_sum != nullptr) add_hidden_rows(s, t);
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const bool want = s.logits == logits_mode::all || (s.logits == logits_mode::last && i == s.n_tokens - 1);
      if (!want) continue;
      kernels::rmsnorm(x_.data() + t * sd, w.output_norm.data(), sel_.data() + static_cast<size_t>(row) * d, d, hp.rms_eps);
      ++row;
    }
  }
  float* const logits_out[1] = {logits_.data()};
  if (n_rows > 0) run_group(output_, sel_.data(), n_rows, logits_out);
  return n_rows;
}

}  // namespace cortex
