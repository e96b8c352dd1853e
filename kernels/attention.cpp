// Paged attention: run-time dispatch to the flash-style bodies of
// x86/vec_body.hpp, and the naive reference the tests compare them with.
#include "kernels/attention.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/x86/vec_entries.hpp"

namespace cortex::kernels {

void attention_paged(const float* q, int n_q, int pos0, int n_heads, int head_begin, int head_end,
                     const float* k_arena, const float* v_arena, const int32_t* block_table,
                     const kv_layout& layout, float scale, float* out) {
  detail::active_vec_entries().attention_paged(q, n_q, pos0, n_heads, head_begin, head_end,
                                               k_arena, v_arena, block_table, layout, scale,
                                               out);
}

void attention_reference(const float* q, int n_q, int pos0, int n_heads, int head_begin,
                         int head_end, const float* k_arena, const float* v_arena,
                         const int32_t* block_table, const kv_layout& layout, float scale,
                         float* out) {
  const int hd = layout.head_dim;
  const int group = n_heads / layout.n_kv_heads;
  auto at = [&](int p, int kv_head) {
    const size_t block = static_cast<size_t>(block_table[p / layout.block_size]);
    const size_t slot = block * layout.block_size + p % layout.block_size;
    return (slot * layout.n_kv_heads + kv_head) * hd;
  };
  std::vector<double> w;
  std::vector<double> o(hd);
  for (int i = 0; i < n_q; ++i) {
    const int n_pos = pos0 + i + 1;
    w.assign(n_pos, 0.0);
    for (int h = head_begin; h < head_end; ++h) {
      const float* qh = q + (static_cast<size_t>(i) * n_heads + h) * hd;
      const int g = h / group;
      double m = -INFINITY;
      for (int p = 0; p < n_pos; ++p) {
        const float* k = k_arena + at(p, g);
        double s = 0.0;
        for (int d = 0; d < hd; ++d) s += static_cast<double>(qh[d]) * k[d];
        w[p] = s * scale;
        m = w[p] > m ? w[p] : m;
      }
      double sum = 0.0;
      for (int p = 0; p < n_pos; ++p) sum += (w[p] = std::exp(w[p] - m));
      o.assign(hd, 0.0);
      for (int p = 0; p < n_pos; ++p) {
        const float* v = v_arena + at(p, g);
        for (int d = 0; d < hd; ++d) o[d] += w[p] / sum * v[d];
      }
      float* oh = out + (static_cast<size_t>(i) * n_heads + h) * hd;
      for (int d = 0; d < hd; ++d) oh[d] = static_cast<float>(o[d]);
    }
  }
}

}  // namespace cortex::kernels
