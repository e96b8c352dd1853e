// Quantizers of the non-linear 4-bit formats: iq4_nl, iq4_xs and mxfp4, the
// ones llama.cpp quantizes without an importance matrix. As in quantize.cpp,
// each follows llama.cpp's algorithm with the same float operations in the
// same order (no fused multiply-add: this file has no isa flags), so a row
// quantizes to the bytes llama-quantize writes without an importance matrix:
//   iq4_nl, iq4_xs: quantize_iq4_nl / quantize_iq4_xs with no importance
//     data (ggml-quants.c; 7 scale tries each way). Note that ggml's
//     quantize_row_iq4_nl_ref tries none, so its bytes differ from
//     llama-quantize's; we write llama-quantize's.
//   mxfp4: quantize_row_mxfp4_ref.
// With an importance matrix (quantize_row_iq4_*_weighted) the same fit
// weighs each element by qw * sqrt(sigma2 + x^2) instead of x^2.
// The iq grid types (iq1/iq2/iq3) are quantized in kernels/quantize_grid.cpp
// and quantize_iq1.cpp.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_nearest_int.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/quantize_common.hpp"

namespace cortex {

namespace {

// Index of the table value nearest to x, ties to the lower one: the
// reference's best_index_int8 (a bisection over the sorted 16 values).
int nearest_value_index(const int8_t* values, float x) {
  if (x <= values[0]) return 0;
  if (x >= values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < values[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - values[hi - 1] < values[hi] - x ? hi - 1 : hi;
}

constexpr int iq4_tries = 7;

// Weighted least-squares scale of one block of 32 against kvalues_iq4nl
// (weights: the importance weights, or nullptr for x^2): start from the
// scale that maps the element of largest magnitude to the table's end, then
// try 2 * iq4_tries + 1 nearby inverse scales and keep the best fit. Writes
// the block's codes to L (not for an all-zero block, whose scale is 0).
float fit_iq4_block(const float* x, const float* weights, uint8_t* L) {
  const int8_t* values = kvalues_iq4nl;
  float weight[32];
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    weight[j] = weights ? weights[j] : x[j] * x[j];
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < 1e-15f) return 0.f;
  float d = -max / values[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; ++j) {
    const int l = nearest_value_index(values, id * x[j]);
    L[j] = static_cast<uint8_t>(l);
    const float q = values[l];
    sumqx += weight[j] * q * x[j];
    sumq2 += weight[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -iq4_tries; itry <= iq4_tries; ++itry) {
    id = static_cast<float>(itry + values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = values[nearest_value_index(values, id * x[j])];
      sumqx += weight[j] * q * x[j];
      sumq2 += weight[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Codes L[n] (0..15) into nibbles: per 32, element j low, j + 16 high.
void pack_nibbles(const uint8_t* L, int n, uint8_t* qs) {
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j) qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

// The importance weights of super-block x[n] (n: 32 for iq4_nl, 256 for
// iq4_xs) into w, sigma2 being twice its mean square; nullptr without qw.
const float* iq4_weights(const float* x, int n, const float* qw, float* w) {
  if (!qw) return nullptr;
  const float sigma2 = quant_common::sum_squares(x, n) * (2.f / static_cast<float>(n));
  quant_common::importance_weights(x, qw, sigma2, n, w);
  return w;
}

void quantize_iq4_nl_block(const float* x, block_iq4_nl& y, const float* qw) {
  uint8_t L[32];
  float w[32];
  const float d = fit_iq4_block(x, iq4_weights(x, 32, qw, w), L);
  y.d = fp32_to_fp16(d);
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_value_index(kvalues_iq4nl, id * x[j]));
  pack_nibbles(L, 32, y.qs);
}

// Each sub-block's fitted scale, then the super-block scale d = -s / 32 for
// the fitted scale s of largest magnitude, 6-bit sub-block scales
// round(scale / d) and the codes again against the stored scales.
void quantize_iq4_xs_block(const float* x, block_iq4_xs& y, const float* qw) {
  uint8_t L[qk_k];
  float scales[qk_k / 32], w[qk_k];
  const float* weights = iq4_weights(x, qk_k, qw, w);
  float max_scale = 0, amax_scale = 0;
  for (int s = 0; s < qk_k / 32; ++s) {
    scales[s] = fit_iq4_block(x + 32 * s, weights ? weights + 32 * s : nullptr, L + 32 * s);
    if (std::fabs(scales[s]) > amax_scale) {
      amax_scale = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  const float d = -max_scale / 32;  // -0 for an all-zero super-block, as the reference stores it
  y.d = fp32_to_fp16(d);
  y.scales_h = 0;
  const float id = d != 0 ? 1 / d : 0.f;
  for (int s = 0; s < qk_k / 32; ++s) {
    int l = nearest_int(id * scales[s]);
    l = l < -32 ? -32 : (l > 31 ? 31 : l);
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0 ? 1 / dl : 0.f;
    for (int j = 0; j < 32; ++j) {
      L[32 * s + j] = static_cast<uint8_t>(nearest_value_index(kvalues_iq4nl, idl * x[32 * s + j]));
    }
    l += 32;
    if (s % 2 == 0) {
      y.scales_l[s / 2] = static_cast<uint8_t>(l & 0x0f);
    } else {
      y.scales_l[s / 2] = static_cast<uint8_t>(y.scales_l[s / 2] | ((l & 0x0f) << 4));
    }
    y.scales_h = static_cast<uint16_t>(y.scales_h | ((l >> 4) << (2 * s)));
  }
  pack_nibbles(L, qk_k, y.qs);
}

// Index of the doubled E2M1 value nearest to x at scale d, ties to the
// lower index (so +0, never -0).
int nearest_mxfp4_index(float x, float d) {
  int best = 0;
  float best_err = std::fabs(kvalues_mxfp4[0] * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(kvalues_mxfp4[i] * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// e = floor(log2(amax)) - 2 + 127 (so amax / 2^(e - 127) is in [4, 8), the
// largest E2M1 magnitude being 6), each element to its nearest value. The
// reference converts that float to uint8_t directly; for amax < 2^-125 the
// value is negative, which x86 truncates through int32 (what we do).
void quantize_mxfp4_block(const float* x, block_mxfp4& y) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
  }
  y.e = amax > 0 ? static_cast<uint8_t>(static_cast<int>(std::floor(std::log2(amax)) - 2 + 127)) : 0;
  const float d = e8m0_half_to_fp32(y.e);
  for (int j = 0; j < 16; ++j) {
    y.qs[j] = static_cast<uint8_t>(nearest_mxfp4_index(x[j], d) | (nearest_mxfp4_index(x[j + 16], d) << 4));
  }
}

}  // namespace

// The quantize_row_<type> named by the rows of kernels/quant_traits.cpp.
void quantize_row_iq4_nl(const float* x, void* y, int64_t n) {
  auto* b = static_cast<block_iq4_nl*>(y);
  for (int64_t i = 0; i < n / 32; ++i) quantize_iq4_nl_block(x + 32 * i, b[i], nullptr);
}

void quantize_row_iq4_xs(const float* x, void* y, int64_t n) {
  auto* b = static_cast<block_iq4_xs*>(y);
  for (int64_t i = 0; i < n / qk_k; ++i) quantize_iq4_xs_block(x + qk_k * i, b[i], nullptr);
}

// With importance weights qw[n] (kernels/quantize_weighted.cpp).
void quantize_row_iq4_nl_weighted(const float* x, void* y, int64_t n, const float* qw) {
  auto* b = static_cast<block_iq4_nl*>(y);
  for (int64_t i = 0; i < n / 32; ++i) quantize_iq4_nl_block(x + 32 * i, b[i], qw + 32 * i);
}

void quantize_row_iq4_xs_weighted(const float* x, void* y, int64_t n, const float* qw) {
  auto* b = static_cast<block_iq4_xs*>(y);
  for (int64_t i = 0; i < n / qk_k; ++i) quantize_iq4_xs_block(x + qk_k * i, b[i], qw + qk_k * i);
}

void quantize_row_mxfp4(const float* x, void* y, int64_t n) {
  auto* b = static_cast<block_mxfp4*>(y);
  for (int64_t i = 0; i < n / 32; ++i) quantize_mxfp4_block(x + 32 * i, b[i]);
}

}  // namespace cortex
