// Scalar matmul kernels of the lattice-codebook formats (iq1_s .. iq3_s)
// against q8_256 activations: the reference their SIMD kernels are tested
// against. Each super-block is decoded to integer codes and odd sub-block
// scales (kernels/quant_grids.hpp), so its dot product is exact in integers:
// y += dx * d * factor * sum_s ls_s * sum_{e in s} code_e * xq_e.
#include <cstddef>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_grids.hpp"

namespace cortex::kernels {

namespace {

template <class Block>
void grid_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
               float factor) {
  const int64_t nb = w.cols / qk_k;
  grid_superblock g;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dx = reinterpret_cast<const float*>(xt + x.d_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + r * w.row_bytes);
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        decode_grid(blocks[b], g);
        int isum = 0;
        for (int s = 0; s < qk_k / 16; ++s) {
          int dot = 0;
          for (int e = 16 * s; e < 16 * s + 16; ++e) dot += g.code[e] * qs[b * qk_k + e];
          isum += g.ls[s] * dot;
        }
        sum += dx[b] * g.d * static_cast<float>(isum) * factor;
      }
      y[t * w.rows + r] = sum;
    }
  }
}

// The factor of each format (quant_grids.hpp).
void rows_iq2_xxs(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq2_xxs>(w, x, n, y, r0, r1, 0.125f);
}
void rows_iq2_xs(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq2_xs>(w, x, n, y, r0, r1, 0.125f);
}
void rows_iq2_s(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq2_s>(w, x, n, y, r0, r1, 0.125f);
}
void rows_iq3_xxs(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq3_xxs>(w, x, n, y, r0, r1, 0.25f);
}
void rows_iq3_s(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq3_s>(w, x, n, y, r0, r1, 1.f);
}
void rows_iq1_s(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq1_s>(w, x, n, y, r0, r1, 0.125f);
}
void rows_iq1_m(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  grid_rows<block_iq1_m>(w, x, n, y, r0, r1, 0.125f);
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_scalar_iq2_xxs = rows_iq2_xxs, matmul_scalar_iq2_xs = rows_iq2_xs,
                            matmul_scalar_iq2_s = rows_iq2_s, matmul_scalar_iq3_xxs = rows_iq3_xxs,
                            matmul_scalar_iq3_s = rows_iq3_s, matmul_scalar_iq1_s = rows_iq1_s,
                            matmul_scalar_iq1_m = rows_iq1_m;

}  // namespace cortex::kernels
