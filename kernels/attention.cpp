// Paged attention: run-time dispatch to the flash-style bodies of
// x86/vec_body.hpp, the naive reference the tests compare them with, and the
// merge of key-range parts.
#include "kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/x86/vec_entries.hpp"

namespace cortex::kernels {

namespace {

// The K/V rows of a's arenas, loaded as f32: position p, KV head g.
struct arena_rows {
  const attention_args& a;
  const kv_type_traits& tr;
  const int hd, group;  // head_dim; query heads per KV head
  explicit arena_rows(const attention_args& args)
      : a(args), tr(kv_traits(args.layout.type)), hd(args.layout.head_dim),
        group(args.n_heads / args.layout.n_kv_heads) {}
  size_t offset(int p, int g) const {
    const kv_layout& l = a.layout;
    const size_t slot = static_cast<size_t>(a.block_table[p / l.block_size]) * l.block_size + p % l.block_size;
    return slot * l.slot_bytes() + static_cast<size_t>(g) * l.row_bytes();
  }
  void load_k(int p, int g, float* out) const { tr.load_row(static_cast<const uint8_t*>(a.k_arena) + offset(p, g), out, hd); }
  void load_v(int p, int g, float* out) const { tr.load_row(static_cast<const uint8_t*>(a.v_arena) + offset(p, g), out, hd); }
};

// attention_paged with ALiBi: per row and head an online softmax over the
// row's keys in position order (a row's result depends on the row alone).
void attention_alibi(const attention_args& a) {
  constexpr int max_head_dim = 512;
  const arena_rows rows(a);
  const int hd = rows.hd, group = rows.group;
  float row[max_head_dim], acc[max_head_dim];
  for (int i = 0; i < a.n_q; ++i) {
    const int pos = a.pos0 + i;
    const int p_end = std::min(a.n_keys > 0 ? a.n_keys : pos + 1, a.key_end);
    for (int h = a.head_begin; h < a.head_end; ++h) {
      const float* qh = a.q + (static_cast<size_t>(i) * a.n_heads + h) * hd;
      float* oh = a.out + (static_cast<size_t>(i) * a.n_heads + h) * hd;
      const int g = h / group;
      const float slope = a.alibi_slopes[h];
      float m = -INFINITY, l = 0.0f;
      std::fill(acc, acc + hd, 0.0f);
      for (int p = a.key_begin; p < p_end; ++p) {
        rows.load_k(p, g, row);
        float s = 0.0f;
        for (int d = 0; d < hd; ++d) s += qh[d] * row[d];
        s *= a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        s -= slope * static_cast<float>(std::abs(pos - p));
        if (s > m) {  // rescale what came before to the new maximum
          const float c = std::exp(m - s);
          l *= c;
          for (int d = 0; d < hd; ++d) acc[d] *= c;
          m = s;
        }
        const float w = std::exp(s - m);
        l += w;
        rows.load_v(p, g, row);
        for (int d = 0; d < hd; ++d) acc[d] += w * row[d];
      }
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      for (int d = 0; d < hd; ++d) oh[d] = acc[d] * inv;
      if (a.lse) a.lse[static_cast<size_t>(i) * a.n_heads + h] = l > 0.0f ? m + std::log(l) : -INFINITY;
    }
  }
}

}  // namespace

void attention_paged(const attention_args& a) {
  if (a.alibi_slopes) {
    attention_alibi(a);
    return;
  }
  detail::active_vec_entries().attention_paged(a);
}

void alibi_slopes(int n_heads, float max_bias, float* out) {
  int n2 = 1;
  while (n2 * 2 <= n_heads) n2 *= 2;
  const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n2));
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
  for (int h = 0; h < n_heads; ++h) out[h] = h < n2 ? std::pow(m0, static_cast<float>(h + 1)) : std::pow(m1, static_cast<float>(2 * (h - n2) + 1));
}

void attention_reference(const attention_args& a) {
  const arena_rows rows(a);
  const int hd = rows.hd, group = rows.group;
  std::vector<double> w;
  std::vector<double> o(static_cast<size_t>(hd));
  std::vector<float> row(static_cast<size_t>(hd));
  for (int i = 0; i < a.n_q; ++i) {
    // The row's positions: causal up to its own, bidirectional the input's;
    // a window keeps the last `window` of them (causal) or those within
    // window / 2 either side (bidirectional).
    const int pos = a.pos0 + i;
    int p_begin = a.key_begin;
    int p_end = std::min(a.n_keys > 0 ? a.n_keys : pos + 1, a.key_end);
    if (a.window > 0 && a.n_keys > 0) {
      p_begin = std::max(p_begin, pos - a.window / 2);
      p_end = std::min(p_end, pos + a.window / 2 + 1);
    } else if (a.window > 0) {
      p_begin = std::max(p_begin, pos - a.window + 1);
    }
    for (int h = a.head_begin; h < a.head_end; ++h) {
      const float* qh = a.q + (static_cast<size_t>(i) * a.n_heads + h) * hd;
      float* oh = a.out + (static_cast<size_t>(i) * a.n_heads + h) * hd;
      float* lse = a.lse ? a.lse + static_cast<size_t>(i) * a.n_heads + h : nullptr;
      const int g = h / group;
      if (p_begin >= p_end) {
        std::fill(oh, oh + hd, 0.0f);
        if (lse) *lse = -INFINITY;
        continue;
      }
      w.assign(static_cast<size_t>(p_end - p_begin), 0.0);
      double m = -INFINITY;
      for (int p = p_begin; p < p_end; ++p) {
        rows.load_k(p, g, row.data());
        double s = 0.0;
        for (int d = 0; d < hd; ++d) s += static_cast<double>(qh[d]) * row[static_cast<size_t>(d)];
        double& wp = w[static_cast<size_t>(p - p_begin)];
        wp = s * a.scale;
        if (a.softcap > 0.0f) wp = a.softcap * std::tanh(wp / a.softcap);
        if (a.alibi_slopes) wp -= static_cast<double>(a.alibi_slopes[h]) * std::abs(a.pos0 + i - p);
        m = wp > m ? wp : m;
      }
      double sum = 0.0;
      for (auto& wp : w) sum += (wp = std::exp(wp - m));
      o.assign(static_cast<size_t>(hd), 0.0);
      for (int p = p_begin; p < p_end; ++p) {
        rows.load_v(p, g, row.data());
        const double wp = w[static_cast<size_t>(p - p_begin)] / sum;
        for (int d = 0; d < hd; ++d) o[static_cast<size_t>(d)] += wp * row[static_cast<size_t>(d)];
      }
      for (int d = 0; d < hd; ++d) oh[d] = static_cast<float>(o[static_cast<size_t>(d)]);
      if (lse) *lse = static_cast<float>(m + std::log(sum));
    }
  }
}

void attention_fold(float* out, float* lse, const float* part, float part_lse, int head_dim) {
  if (part_lse == -INFINITY) return;
  if (*lse == -INFINITY) {
    std::copy(part, part + head_dim, out);
    *lse = part_lse;
    return;
  }
  const float top = std::max(*lse, part_lse);
  const float wa = std::exp(*lse - top), wb = std::exp(part_lse - top);
  const float total = wa + wb;
  for (int d = 0; d < head_dim; ++d) out[d] = (wa * out[d] + wb * part[d]) / total;
  *lse = top + std::log(total);
}

void attention_merge(const float* const* outs, const float* const* lses, int n_parts, int n_rows,
                     int head_dim, float* out, float* lse_out) {
  for (int r = 0; r < n_rows; ++r) {
    float* o = out + static_cast<size_t>(r) * head_dim;
    float lse = -INFINITY;
    for (int j = 0; j < n_parts; ++j) attention_fold(o, &lse, outs[j] + static_cast<size_t>(r) * head_dim, lses[j][r], head_dim);
    if (lse == -INFINITY) std::fill(o, o + head_dim, 0.0f);
    if (lse_out) lse_out[r] = lse;
  }
}

}  // namespace cortex::kernels
