// Importance-weighted quantizers: the bytes llama-quantize writes with
// --imatrix, for the types whose quantizer uses the weights (ggml-quants.c's
// quantize_row_<type>_impl given quant_weights: q4_0, q4_1, q5_0, q5_1 and
// the k-quants; iq4_nl / iq4_xs are in quantize_iq.cpp). Each row's qw[n]
// are the imatrix's column weights (mean squared activation of each input
// column). Each element's weight is qw * sqrt(sigma2 + x^2), sigma2 the mean
// square of the row (blocks of 32) or 2x that of the super-block (k-quants);
// q6_K takes qw as it is. The fits are quant_common's, in the reference's
// float order, so the bytes are llama-quantize's.
//
// q8_0, mxfp4 and the float types have no use for weights: llama-quantize
// ignores them there, and so does quantize_row_weighted.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_k_scales.hpp"
#include "kernels/quantize_common.hpp"

namespace cortex {

namespace {

using quant_common::fit_scale_min;
using quant_common::fit_scale_positive;
using quant_common::fit_scale_symmetric;
using quant_common::importance_weights;
using quant_common::sum_squares;

// Blocks of 32: q4_0 / q5_0 fit a symmetric scale (nmax 8 / 16: levels
// 0..2 * nmax - 1), q4_1 / q5_1 a scale and a min (nmax 15 / 31).
template <class Block, int nmax, bool has_min>
void quantize_blocks_32(const float* x, Block* y, int64_t n, const float* qw) {
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[32];
  uint8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    importance_weights(xb, qw + 32 * ib, sigma2, 32, weight);
    if constexpr (has_min) {
      float min = 0;
      y[ib].d = fp32_to_fp16(fit_scale_min(32, nmax, xb, weight, L, &min, -0.9f, 0.05f, 36));
      y[ib].m = fp32_to_fp16(-min);
    } else {
      y[ib].d = fp32_to_fp16(fit_scale_symmetric(32, nmax, xb, reinterpret_cast<int8_t*>(L), 9, weight));
    }
    constexpr int top_level = has_min ? nmax : 2 * nmax - 1;
    if constexpr (top_level < 16) {
      quant_common::pack_nibbles_32(L, y[ib].qs);
    } else {
      quant_common::pack_fifth_bits_32(L, y[ib].qs, y[ib].qh);
    }
  }
}

// q2_K: sub-blocks of 16 fitted with a min (36 grid steps), their scales and
// mins to 4 bits by fit_scale_positive weighted by each sub-block's total
// weight. sigma2 is the super-block's mean square (not twice it).
void quantize_q2_k(const float* x, block_q2_k* y, int64_t nb, const float* qw) {
  uint8_t L[qk_k], Ls[qk_k / 16], Lm[qk_k / 16];
  float weight[16], sw[qk_k / 16], scales[qk_k / 16], mins[qk_k / 16];
  for (int64_t i = 0; i < nb; ++i, x += qk_k, qw += qk_k) {
    const float sigma2 = sum_squares(x, qk_k) / static_cast<float>(qk_k);
    for (int s = 0; s < qk_k / 16; ++s) {
      sw[s] = importance_weights(x + 16 * s, qw + 16 * s, sigma2, 16, weight);
      scales[s] = fit_scale_min(16, 3, x + 16 * s, weight, L + 16 * s, &mins[s], -0.9f, 0.05f, 36);
    }
    const float dm = fit_scale_positive(qk_k / 16, 15, scales, Ls, sw);
    const float mm = fit_scale_positive(qk_k / 16, 15, mins, Lm, sw);
    y[i].d = fp32_to_fp16(dm);
    y[i].dmin = fp32_to_fp16(mm);
    for (int s = 0; s < qk_k / 16; ++s) y[i].scales[s] = static_cast<uint8_t>(Ls[s] | (Lm[s] << 4));
    quant_common::finish_q2_k(x, L, y[i]);
  }
}

// Twice the mean square of a super-block, the k-quants' sigma2.
float sigma2_k(const float* x) { return 2 * sum_squares(x, qk_k) / static_cast<float>(qk_k); }

// q3_K: sub-blocks of 16 fitted symmetrically (levels -4..3), their scales
// fitted symmetrically too (6 bits) weighted by each sub-block's total weight.
void quantize_q3_k(const float* x, block_q3_k* y, int64_t nb, const float* qw) {
  int8_t L[qk_k], Ls[qk_k / 16];
  float weight[16], sw[qk_k / 16], scales[qk_k / 16];
  for (int64_t i = 0; i < nb; ++i, x += qk_k, qw += qk_k) {
    const float sigma2 = sigma2_k(x);
    for (int s = 0; s < qk_k / 16; ++s) {
      sw[s] = importance_weights(x + 16 * s, qw + 16 * s, sigma2, 16, weight);
      scales[s] = fit_scale_symmetric(16, 4, x + 16 * s, L + 16 * s, 9, weight);
    }
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    const float d_block = fit_scale_symmetric(qk_k / 16, 32, scales, Ls, 9, sw);
    for (int s = 0; s < qk_k / 16; ++s) quant_common::set_q3_k_scale(y[i].scales, s, Ls[s]);
    y[i].d = fp32_to_fp16(d_block);
    quant_common::finish_q3_k(x, L, y[i]);
  }
}

// q4_K / q5_K: sub-blocks of 32 fitted with a min (36 grid steps), their
// scales and mins to 6 bits by fit_scale_positive; q5_K clamps those to 63
// (q4_K's cannot exceed it). Returns the levels in L.
template <class Block, int nmax>
void quantize_k_scales_mins(const float* x, const float* qw, Block& y, uint8_t* L) {
  uint8_t Ls[qk_k / 32], Lm[qk_k / 32];
  float weight[32], sw[qk_k / 32], scales[qk_k / 32], mins[qk_k / 32];
  const float sigma2 = sigma2_k(x);
  for (int s = 0; s < qk_k / 32; ++s) {
    sw[s] = importance_weights(x + 32 * s, qw + 32 * s, sigma2, 32, weight);
    scales[s] = fit_scale_min(32, nmax, x + 32 * s, weight, L + 32 * s, &mins[s], -0.9f, 0.05f, 36);
  }
  const float d_block = fit_scale_positive(qk_k / 32, 63, scales, Ls, sw);
  const float m_block = fit_scale_positive(qk_k / 32, 63, mins, Lm, sw);
  if constexpr (nmax == 31) {
    for (int s = 0; s < qk_k / 32; ++s) {
      Ls[s] = std::min<uint8_t>(63, Ls[s]);
      Lm[s] = std::min<uint8_t>(63, Lm[s]);
    }
  }
  set_scale_min_k4(Ls, Lm, y.scales);
  y.d = fp32_to_fp16(d_block);
  y.dmin = fp32_to_fp16(m_block);
  quant_common::requantize_k_levels(x, y.scales, y.d, y.dmin, nmax, L);
}

template <class Block, int nmax>
void quantize_k_row(const float* x, Block* y, int64_t nb, const float* qw) {
  uint8_t L[qk_k];
  for (int64_t i = 0; i < nb; ++i) {
    quantize_k_scales_mins<Block, nmax>(x + qk_k * i, qw + qk_k * i, y[i], L);
    if constexpr (nmax == 15) {
      quant_common::pack_q4_k_levels(L, y[i]);
    } else {
      quant_common::pack_q5_k_levels(L, y[i]);
    }
  }
}

}  // namespace

// The quantize_row_<type>_weighted named by the rows of kernels/quant_traits.cpp.
void quantize_row_q4_0_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_blocks_32<block_q4_0, 8, false>(x, static_cast<block_q4_0*>(y), n, qw);
}
void quantize_row_q5_0_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_blocks_32<block_q5_0, 16, false>(x, static_cast<block_q5_0*>(y), n, qw);
}
void quantize_row_q4_1_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_blocks_32<block_q4_1, 15, true>(x, static_cast<block_q4_1*>(y), n, qw);
}
void quantize_row_q5_1_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_blocks_32<block_q5_1, 31, true>(x, static_cast<block_q5_1*>(y), n, qw);
}
void quantize_row_q2_k_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_q2_k(x, static_cast<block_q2_k*>(y), n / qk_k, qw);
}
void quantize_row_q3_k_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_q3_k(x, static_cast<block_q3_k*>(y), n / qk_k, qw);
}
void quantize_row_q4_k_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_k_row<block_q4_k, 15>(x, static_cast<block_q4_k*>(y), n / qk_k, qw);
}
void quantize_row_q5_k_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quantize_k_row<block_q5_k, 31>(x, static_cast<block_q5_k*>(y), n / qk_k, qw);
}
void quantize_row_q6_k_weighted(const float* x, void* y, int64_t n, const float* qw) {
  quant_common::quantize_q6_k_blocks(x, static_cast<block_q6_k*>(y), n / qk_k, 9, qw);
}

}  // namespace cortex
