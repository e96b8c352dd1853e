// Quantizers. Each follows llama.cpp's quantize_row_*_ref algorithm with the
// same float operations in the same order, so a row quantizes to the same
// bytes llama-quantize writes when it has no importance matrix.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/fp16.hpp"
#include "kernels/quant.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_k_scales.hpp"
#include "kernels/quant_nearest_int.hpp"
#include "kernels/matmul_kernels.hpp"  // active_activation_kernels
#include "kernels/quant_traits.hpp"
#include "kernels/quantize_common.hpp"

namespace cortex {
namespace {

using quant_common::fit_scale_min;

void quantize_q8_0(const float* x, block_q8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += qk8_0) {
    float amax = 0.0f;
    for (int j = 0; j < qk8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < qk8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// Scale d = v / -8 where v is the element of largest magnitude, so v maps to
// quant 0 exactly and the opposite sign gets the extra level.
void quantize_q4_0(const float* x, block_q4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += qk4_0) {
    const float vmax = quant_common::max_magnitude(x, qk4_0);
    const float d = vmax / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < qk4_0 / 2; ++j) {
      // Truncation of v + 8.5 (v >= -8), as in the reference.
      const int q0 = std::clamp(static_cast<int>(x[j] * id + 8.5f), 0, 15);
      const int q1 = std::clamp(static_cast<int>(x[j + qk4_0 / 2] * id + 8.5f), 0, 15);
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// q5_0: d = max / -16 (max: the element of largest magnitude, signed), codes
// truncate v / d + 16.5 and clamp to 31 (the reference's MIN(31, (int8_t)...));
// the low 4 bits of elements j and j + 16 share byte j, the fifth bits go to
// bit j and bit j + 16 of qh (little-endian).
void quantize_q5_0(const float* x, block_q5_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float vmax = quant_common::max_magnitude(x, 32);
    const float d = vmax / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + 16);
    }
    for (int b = 0; b < 4; ++b) y[i].qh[b] = static_cast<uint8_t>(qh >> (8 * b));
  }
}

// q4_1 / q5_1 (nmax 15 / 31): d = (max - min) / nmax, m = min, codes
// truncate (x - min) / d + 0.5. q5_1 stores the fifth bit of element j in
// bit j of qh. q4_1 clamps to 15; q5_1 does not (the reference does not
// either, and (max - min) * (1 / d) + 0.5 stays below 32).
template <class Block, int nmax>
void quantize_scale_min_32(const float* x, Block* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float min = std::numeric_limits<float>::max();
    float max = -std::numeric_limits<float>::max();
    for (int j = 0; j < 32; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / static_cast<float>(nmax);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      int q0 = static_cast<int>((x[j] - min) * id + 0.5f);
      int q1 = static_cast<int>((x[j + 16] - min) * id + 0.5f);
      if constexpr (nmax == 15) {
        q0 = std::min(15, q0);
        q1 = std::min(15, q1);
      }
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    if constexpr (nmax == 31) std::memcpy(y[i].qh, &qh, sizeof(qh));
  }
}

// Shared by q4_K (nmax 15) and q5_K (nmax 31): fits 8 sub-blocks of 32, packs
// their scales and mins to 6 bits against fp16 super-scales, and writes the
// final levels (re-derived from the rounded scales) to L[256].
void quantize_k_scales_mins(const float* x, int nmax, float rmin, int nstep, half_bits* d_out, half_bits* dmin_out,
                            uint8_t* packed_scales, uint8_t* L) {
  float scales[qk_k / 32], mins[qk_k / 32], weights[32];
  float max_scale = 0, max_min = 0;
  for (int s = 0; s < qk_k / 32; ++s) {
    const float* xs = x + 32 * s;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[s] = fit_scale_min(32, nmax, xs, weights, L + 32 * s, &mins[s], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, scales[s]);
    max_min = std::max(max_min, mins[s]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[qk_k / 32], lm[qk_k / 32];
  for (int s = 0; s < qk_k / 32; ++s) {
    // uint8_t wrap-around of a negative level matches the reference.
    ls[s] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[s])));
    lm[s] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[s])));
  }
  set_scale_min_k4(ls, lm, packed_scales);
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  quant_common::requantize_k_levels(x, packed_scales, *d_out, *dmin_out, nmax, L);
}

// nstep -1: no grid search (the min/max fit only), for quantize_row_fast.
void quantize_q4_k(const float* x, block_q4_k* y, int64_t nb, int nstep = 20) {
  uint8_t L[qk_k];
  for (int64_t i = 0; i < nb; ++i, x += qk_k) {
    quantize_k_scales_mins(x, 15, -1.0f, nstep, &y[i].d, &y[i].dmin, y[i].scales, L);
    quant_common::pack_q4_k_levels(L, y[i]);
  }
}

void quantize_q5_k(const float* x, block_q5_k* y, int64_t nb, int nstep = 15) {
  uint8_t L[qk_k];
  for (int64_t i = 0; i < nb; ++i, x += qk_k) {
    quantize_k_scales_mins(x, 31, -0.5f, nstep, &y[i].d, &y[i].dmin, y[i].scales, L);
    quant_common::pack_q5_k_levels(L, y[i]);
  }
}

// q2_K: 16 sub-blocks of 16 fitted as x ~ scale * L - min (L in 0..3,
// weights |x|, absolute error), scales and mins to 4 bits against fp16
// super-scales (llama.cpp's quantize_row_q2_K_ref), levels re-derived from
// the rounded scales.
void quantize_q2_k(const float* x, block_q2_k* y, int64_t nb) {
  uint8_t L[qk_k];
  float weights[16], mins[qk_k / 16], scales[qk_k / 16];
  const float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += qk_k) {
    float max_scale = 0, max_min = 0;
    for (int s = 0; s < qk_k / 16; ++s) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * s + l]);
      scales[s] = fit_scale_min(16, 3, x + 16 * s, weights, L + 16 * s, &mins[s], -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[s]);
      max_min = std::max(max_min, mins[s]);
    }
    // uint8_t wrap-around of a negative level matches the reference.
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int s = 0; s < qk_k / 16; ++s) y[i].scales[s] = static_cast<uint8_t>(nearest_int(iscale * scales[s]));
      y[i].d = fp32_to_fp16(max_scale / q4scale);
    } else {
      std::memset(y[i].scales, 0, sizeof(y[i].scales));
      y[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int s = 0; s < qk_k / 16; ++s) {
        y[i].scales[s] = static_cast<uint8_t>(y[i].scales[s] | (static_cast<unsigned>(nearest_int(iscale * mins[s])) << 4));
      }
      y[i].dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      y[i].dmin = fp32_to_fp16(0.f);
    }
    quant_common::finish_q2_k(x, L, y[i]);
  }
}

// Symmetric fit x[i] ~ scale * L[i], L in [-4, 3], weighted by x^2: the
// plain rounding at -4 / max, then up to 5 passes moving single levels while
// that improves the fit (llama.cpp's make_q3_quants with do_rmse). Returns
// scale; L gets the levels + 4.
float fit_scale_q3(const float* x, int8_t* L) {
  constexpr int n = 16, nmax = 4;
  const float vmax = quant_common::max_magnitude(x, n);
  if (std::fabs(vmax) < 1e-15f) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / vmax;
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * static_cast<float>(l);
    sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sum_lx - w * x[i] * static_cast<float>(L[i]);
      if (!(slx > 0)) continue;
      float sl2 = sum_l2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
      const int l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      slx += w * x[i] * static_cast<float>(l);
      sl2 += w * static_cast<float>(l) * static_cast<float>(l);
      if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        L[i] = static_cast<int8_t>(l);
        sum_lx = slx;
        sum_l2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

// q3_K: 16 sub-blocks of 16 fitted symmetrically (levels -4..3), their
// scales to signed 6 bits against an fp16 super-scale (llama.cpp's
// quantize_row_q3_K_ref); the levels' third bits go to hmask.
void quantize_q3_k(const float* x, block_q3_k* y, int64_t nb) {
  int8_t L[qk_k];
  float scales[qk_k / 16];
  for (int64_t i = 0; i < nb; ++i, x += qk_k) {
    float max_scale = 0, amax = 0;
    for (int s = 0; s < qk_k / 16; ++s) {
      scales[s] = fit_scale_q3(x + 16 * s, L + 16 * s);
      if (std::fabs(scales[s]) > amax) {
        amax = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int s = 0; s < qk_k / 16; ++s) {
        // The reference stores the level in an int8_t before clamping.
        const int l = std::clamp<int>(static_cast<int8_t>(nearest_int(iscale * scales[s])), -32, 31) + 32;
        quant_common::set_q3_k_scale(y[i].scales, s, l);
      }
      y[i].d = fp32_to_fp16(1 / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.f);
    }
    quant_common::finish_q3_k(x, L, y[i]);
  }
}

}  // namespace

// The quantize_row_<type> named by the rows of kernels/quant_traits.cpp.
void quantize_row_f32(const float* x, void* y, int64_t n) { std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); }

void quantize_row_f16(const float* x, void* y, int64_t n) {
  kernels::active_activation_kernels().to_f16(x, static_cast<uint16_t*>(y), n);  // F16C where the CPU has it
}

void quantize_row_bf16(const float* x, void* y, int64_t n) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(x[i]);
}

void quantize_row_q4_0(const float* x, void* y, int64_t n) { quantize_q4_0(x, static_cast<block_q4_0*>(y), n / qk4_0); }
void quantize_row_q4_1(const float* x, void* y, int64_t n) {
  quantize_scale_min_32<block_q4_1, 15>(x, static_cast<block_q4_1*>(y), n / 32);
}
void quantize_row_q5_0(const float* x, void* y, int64_t n) { quantize_q5_0(x, static_cast<block_q5_0*>(y), n / 32); }
void quantize_row_q5_1(const float* x, void* y, int64_t n) {
  quantize_scale_min_32<block_q5_1, 31>(x, static_cast<block_q5_1*>(y), n / 32);
}
void quantize_row_q8_0(const float* x, void* y, int64_t n) { quantize_q8_0(x, static_cast<block_q8_0*>(y), n / qk8_0); }
void quantize_row_q2_k(const float* x, void* y, int64_t n) { quantize_q2_k(x, static_cast<block_q2_k*>(y), n / qk_k); }
void quantize_row_q3_k(const float* x, void* y, int64_t n) { quantize_q3_k(x, static_cast<block_q3_k*>(y), n / qk_k); }
void quantize_row_q4_k(const float* x, void* y, int64_t n) { quantize_q4_k(x, static_cast<block_q4_k*>(y), n / qk_k); }
void quantize_row_q5_k(const float* x, void* y, int64_t n) { quantize_q5_k(x, static_cast<block_q5_k*>(y), n / qk_k); }
void quantize_row_q6_k(const float* x, void* y, int64_t n) {
  quant_common::quantize_q6_k_blocks(x, static_cast<block_q6_k*>(y), n / qk_k, 9, nullptr);
}

bool quantize_supported(ggml_type t) {
  const quant_traits* r = find_quant_traits(static_cast<uint32_t>(t));
  return r != nullptr && r->quantize != nullptr;
}

size_t quantize_row(ggml_type t, const float* src, void* dst, int64_t n) {
  if (!quantize_supported(t)) return 0;
  quant_traits_of(t).quantize(src, dst, n);
  return row_size(t, n);
}

size_t quantize_row_weighted(ggml_type t, const float* src, void* dst, int64_t n, const float* qw) {
  if (qw == nullptr || !quantize_uses_weights(t)) return quantize_row(t, src, dst, n);
  quant_traits_of(t).quantize_weighted(src, dst, n, qw);
  return row_size(t, n);
}

bool quantize_uses_weights(ggml_type t) {
  const quant_traits* r = find_quant_traits(static_cast<uint32_t>(t));
  return r != nullptr && r->quantize_weighted != nullptr;
}

size_t quantize_row_fast(ggml_type t, const float* src, void* dst, int64_t n) {
  // The k-quants' scale searches are what make them slow; the rest already
  // quantize in one pass.
  switch (t) {
    case ggml_type::q4_k: quantize_q4_k(src, static_cast<block_q4_k*>(dst), n / qk_k, -1); break;
    case ggml_type::q5_k: quantize_q5_k(src, static_cast<block_q5_k*>(dst), n / qk_k, -1); break;
    case ggml_type::q6_k: quant_common::quantize_q6_k_blocks(src, static_cast<block_q6_k*>(dst), n / qk_k, 0, nullptr); break;
    default: return quantize_row(t, src, dst, n);
  }
  return row_size(t, n);
}

}  // namespace cortex
