#include "model/forward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
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
  // Write this step's K/V rows into each sequence's blocks, converted to the arena's type.
  seq_first_.clear();
  int t = 0;
  for (const auto& s : batch) {
    seq_first_.push_back(t);
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      const int pos = s.pos0 + i;
      const size_t slot = static_cast<size_t>(s.block_table[pos / bs]) * bs + pos % bs;
      kv.store_token(layer, slot, k_.data() + static_cast<size_t>(t) * dkv, v_.data() + static_cast<size_t>(t) * dkv);
    }
  }
  plan_attention(batch, bs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  const int group = hp.n_head / hp.n_head_kv;
  const size_t part_floats = static_cast<size_t>(capacity_tokens_) * dq;
  pool_.parallel_for(static_cast<int>(attn_tasks_.size()), [&](int ti, int) {
    const attn_task& task = attn_tasks_[static_cast<size_t>(ti)];
    const auto& s = batch[static_cast<size_t>(task.seq)];
    const size_t first = static_cast<size_t>(seq_first_[static_cast<size_t>(task.seq)]) + task.q_begin;
    kernels::attention_args a;
    a.q = q_.data() + first * dq;
    a.n_q = task.q_end - task.q_begin;
    a.pos0 = s.pos0 + task.q_begin;
    a.n_heads = hp.n_head;
    a.head_begin = task.kv_head * group;
    a.head_end = (task.kv_head + 1) * group;
    a.k_arena = kv.k(layer);
    a.v_arena = kv.v(layer);
    a.block_table = s.block_table;
    a.layout = kv.layout();
    a.scale = scale;
    if (task.part < 0) {
      a.out = attn_.data() + first * dq;
    } else {
      // A key-range part: its own output and log-sum-exp, merged below.
      a.out = part_out_.data() + static_cast<size_t>(task.part) * part_floats + first * dq;
      a.lse = part_lse_.data() + (static_cast<size_t>(task.part) * capacity_tokens_ + first) * hp.n_head;
      a.key_begin = task.key_begin;
      a.key_end = task.key_end;
    }
    kernels::attention_paged(a);
  });
  if (n_key_parts_ > 1) merge_key_parts(batch);
}

void forward_pass::plan_attention(const std::vector<batch_seq>& batch, int block_size) {
  const auto& hp = m_.hparams();
  const int n_seqs = static_cast<int>(batch.size());
  const int n_threads = pool_.size();
  attn_tasks_.clear();
  // Few (sequence, KV head) pairs for the threads, and long contexts: split
  // each one's keys into ranges (aligned to blocks, >= 256 keys each) whose
  // parts are merged by log-sum-exp, so every thread streams K/V.
  n_key_parts_ = 1;
  if (n_seqs * hp.n_head_kv < n_threads) {
    int min_ctx = INT32_MAX;
    for (const auto& s : batch) min_ctx = std::min(min_ctx, s.pos0 + s.n_tokens);
    const int want = (n_threads + n_seqs * hp.n_head_kv - 1) / (n_seqs * hp.n_head_kv);
    n_key_parts_ = std::max(1, std::min({want, min_ctx / 256, 64}));  // 64: attention_merge's limit
  }
  if (n_key_parts_ > 1) {
    const size_t n = static_cast<size_t>(n_key_parts_) * capacity_tokens_;
    part_out_.resize(n * hp.n_head * hp.head_dim);
    part_lse_.resize(n * hp.n_head);
  }
  for (int si = 0; si < n_seqs; ++si) {
    const auto& s = batch[static_cast<size_t>(si)];
    // Prefill chunks: query tiles of 32 tokens, latest (longest) first, so
    // that the dynamic task queue ends on short ones.
    const int q_tile = 32;
    const int n_tiles = (s.n_tokens + q_tile - 1) / q_tile;
    for (int tile = n_tiles - 1; tile >= 0; --tile) {
      const int q_begin = tile * q_tile, q_end = std::min(s.n_tokens, q_begin + q_tile);
      for (int g = 0; g < hp.n_head_kv; ++g) {
        if (n_key_parts_ == 1) {
          attn_tasks_.push_back({si, g, q_begin, q_end, 0, 0, -1});
          continue;
        }
        const int n_keys = s.pos0 + s.n_tokens;
        for (int part = 0; part < n_key_parts_; ++part) {
          const int kb = static_cast<int>(static_cast<int64_t>(n_keys) * part / n_key_parts_) / block_size * block_size;
          const int ke = part + 1 == n_key_parts_ ? n_keys
                                                 : static_cast<int>(static_cast<int64_t>(n_keys) * (part + 1) / n_key_parts_) /
                                                       block_size * block_size;
          attn_tasks_.push_back({si, g, q_begin, q_end, kb, ke, part});
        }
      }
    }
  }
}

void forward_pass::merge_key_parts(const std::vector<batch_seq>& batch) {
  const auto& hp = m_.hparams();
  const int dq = hp.n_head * hp.head_dim;
  const size_t part_floats = static_cast<size_t>(capacity_tokens_) * dq;
  int n_tokens = 0;
  for (const auto& s : batch) n_tokens += s.n_tokens;
  const float* outs[64];
  const float* lses[64];
  for (int j = 0; j < n_key_parts_; ++j) {
    outs[j] = part_out_.data() + static_cast<size_t>(j) * part_floats;
    lses[j] = part_lse_.data() + static_cast<size_t>(j) * capacity_tokens_ * hp.n_head;
  }
  // Rows (token, head) of the whole step are contiguous in every part.
  kernels::attention_merge(outs, lses, n_key_parts_, n_tokens * hp.n_head, hp.head_dim, attn_.data());
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
      const float* rope_freqs = w.rope_freqs.empty() ? nullptr : w.rope_freqs.data();
      int t = 0;
      for (const auto& s : batch) {
        for (int i = 0; i < s.n_tokens; ++i, ++t) {
          const int pos = s.pos0 + i;
          kernels::rope(q_.data() + static_cast<size_t>(t) * dq, hp.n_head, hp.head_dim, hp.n_rot, pos, hp.rope_freq_base, hp.rope_neox,
                        hp.rope_freq_scale, rope_freqs);
          kernels::rope(k_.data() + static_cast<size_t>(t) * dkv, hp.n_head_kv, hp.head_dim, hp.n_rot, pos, hp.rope_freq_base,
                        hp.rope_neox, hp.rope_freq_scale, rope_freqs);
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
