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

void attention_paged(const attention_args& a) { detail::active_vec_entries().attention_paged(a); }

void attention_reference(const attention_args& a) {
  const kv_layout& layout = a.layout;
  const int hd = layout.head_dim;
  const int group = a.n_heads / layout.n_kv_heads;
  const kv_type_traits& tr = kv_traits(layout.type);
  const auto* k_bytes = static_cast<const uint8_t*>(a.k_arena);
  const auto* v_bytes = static_cast<const uint8_t*>(a.v_arena);
  auto at = [&](int p, int kv_head) {
    const size_t block = static_cast<size_t>(a.block_table[p / layout.block_size]);
    const size_t slot = block * layout.block_size + p % layout.block_size;
    return slot * layout.slot_bytes() + static_cast<size_t>(kv_head) * layout.row_bytes();
  };
  std::vector<double> w;
  std::vector<double> o(static_cast<size_t>(hd));
  std::vector<float> row(static_cast<size_t>(hd));
  for (int i = 0; i < a.n_q; ++i) {
    const int p_begin = a.window > 0 ? std::max(a.key_begin, a.pos0 + i - a.window + 1) : a.key_begin;
    const int p_end = std::min(a.n_keys > 0 ? a.n_keys : a.pos0 + i + 1, a.key_end);
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
        tr.load_row(k_bytes + at(p, g), row.data(), hd);
        double s = 0.0;
        for (int d = 0; d < hd; ++d) s += static_cast<double>(qh[d]) * row[static_cast<size_t>(d)];
        double& wp = w[static_cast<size_t>(p - p_begin)];
        wp = s * a.scale;
        if (a.softcap > 0.0f) wp = a.softcap * std::tanh(wp / a.softcap);
        m = wp > m ? wp : m;
      }
      double sum = 0.0;
      for (auto& wp : w) sum += (wp = std::exp(wp - m));
      o.assign(static_cast<size_t>(hd), 0.0);
      for (int p = p_begin; p < p_end; ++p) {
        tr.load_row(v_bytes + at(p, g), row.data(), hd);
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
