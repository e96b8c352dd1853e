// What the quantizers share: the least-squares fits of ggml-quants.c
// (make_qkx2/qkx3_quants, make_qx_quants, make_qp_quants) and the packings
// of levels into the k-quant blocks. kernels/quantize.cpp uses them the way
// llama-quantize does without an importance matrix, quantize_weighted.cpp
// the way it does with one. Same float operations in the same order as the
// reference (this code has no isa flags, so no fused multiply-add), which is
// what makes the bytes equal.
#pragma once

#include <cstdint>

#include "kernels/quant_blocks.hpp"

namespace cortex::quant_common {

// The element of largest magnitude (the first of equals), sign kept; 0 for
// an empty or all-zero x.
float max_magnitude(const float* x, int n);

// Weighted least-squares fit of x[i] ~ scale * L[i] - min_out with L in
// [0, nmax] and min_out >= 0, trying nstep + 1 candidate grid scales
// (make_qkx2_quants; make_qkx3_quants with weights is the same fit);
// use_mad: candidates are ranked by weighted absolute error instead of
// squared error. Returns scale; L gets the levels. REQUIRES: n <= 32.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* min_out, float rmin,
                    float rdelta, int nstep, bool use_mad = false);

// Symmetric fit x[i] ~ scale * (L[i] - nmax), L in [0, 2*nmax), searching
// 2 * n_perturb perturbed scales (make_qx_quants, rmse_type 1: n_perturb 9).
// w: per-element weights, or nullptr for x^2.
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L, int n_perturb = 9, const float* w = nullptr);

// Fit of non-negative x[i] ~ scale * L[i], L in [0, nmax], weighted by w:
// 8 perturbed scales, then up to 5 passes moving single levels
// (make_qp_quants; the k-quants' scales of scales with an importance
// matrix). Returns scale.
float fit_scale_positive(int n, int nmax, const float* x, uint8_t* L, const float* w);

// Levels L[256] (0..3) of a q2_K / q3_K super-block into qs[64]: element
// 128h + 32p + l in bit pair p of qs[32h + l].
void pack_low2(const uint8_t* L, uint8_t* qs);

// The end of a q2_K super-block whose scales, mins and super-scales are
// set: the levels L[256] (0..3) again against the stored scales (a
// sub-block whose scale is 0 keeps the fit's), packed into qs.
void finish_q2_k(const float* x, uint8_t* L, block_q2_k& y);

// q3_K's 6-bit sub-block scale s (0..15), stored + 32 (set: l in 0..63 into
// zeroed scales; get: the signed scale back).
void set_q3_k_scale(uint8_t* scales, int s, int l);
int q3_k_scale(const uint8_t* scales, int s);
// Levels L[256] (0..7) into hmask (third bits) and qs (low two bits).
void pack_q3_k_levels(const uint8_t* L, block_q3_k& y);
// The end of a q3_K super-block whose scales and d are set: the levels
// L[256] (0..7) again against the stored scales, packed.
void finish_q3_k(const float* x, int8_t* L, block_q3_k& y);

// Blocks of 32 levels: element j in the low nibble of qs[j], j + 16 in the
// high one (q4_0, q4_1); with 5-bit levels the fifth bits go to bit j and
// j + 16 of qh (little-endian; q5_0, q5_1).
void pack_nibbles_32(const uint8_t* L, uint8_t* qs);
void pack_fifth_bits_32(const uint8_t* L, uint8_t* qs, uint8_t* qh);

// sum of x[i]^2, accumulated in order.
float sum_squares(const float* x, int64_t n);
// The per-element weights of the importance-weighted fits:
// out[j] = qw[j] * sqrt(sigma2 + x[j]^2), qw being the imatrix's column
// weights and sigma2 the quantizer's mean square of x. Returns their sum
// (added in order from 0, as the reference sums them).
float importance_weights(const float* x, const float* qw, float sigma2, int n, float* out);

// The q4_K / q5_K levels (0..nmax) of x against the stored 6-bit scales and
// mins and the super-scales; a sub-block whose scale is 0 keeps its levels.
void requantize_k_levels(const float* x, const uint8_t* packed_scales, half_bits d, half_bits dmin, int nmax, uint8_t* L);
void pack_q4_k_levels(const uint8_t* L, block_q4_k& y);
void pack_q5_k_levels(const uint8_t* L, block_q5_k& y);

// q6_K super-blocks: sub-blocks of 16 fitted symmetrically (fit_scale_symmetric
// with n_perturb and weights w, nullptr for x^2), scales to int8 against an
// fp16 super-scale, levels re-derived from the rounded scales.
// w, when given, has nb * 256 elements.
void quantize_q6_k_blocks(const float* x, block_q6_k* y, int64_t nb, int n_perturb, const float* w);

}  // namespace cortex::quant_common
