// Scalar conversion between float rows and the GGUF tensor formats.
//
// These are the reference implementations: results are bit-identical to
// llama.cpp's dequantize_row_* and quantize_row_*_ref, so files we write
// quantize exactly as llama-quantize would (without an importance matrix)
// and tests and faster kernels can compare against them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_type.hpp"

namespace cortex {

// src: one row of n elements stored as type t (row_size(t, n) bytes,
// 2-byte aligned, as every GGUF row is); dst: n floats.
// REQUIRES: dequantize_supported(t); n % type_traits(t).block_size == 0.
void dequantize_row(ggml_type t, const void* src, float* dst, int64_t n);

// True for f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K,
// iq4_nl, iq4_xs, mxfp4, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s.
bool dequantize_supported(ggml_type t);

// src: n floats; dst: row_size(t, n) bytes, 2-byte aligned. Returns
// row_size(t, n), or 0 (writing nothing) if t has no quantizer.
// REQUIRES: n % type_traits(t).block_size == 0; src finite.
size_t quantize_row(ggml_type t, const float* src, void* dst, int64_t n);

// True for f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K .. q6_K,
// iq4_nl, iq4_xs, mxfp4, iq2_s, iq3_xxs, iq3_s (llama-quantize's bytes
// without an importance matrix).
bool quantize_supported(ggml_type t);

// quantize_row with importance weights qw[n] (one per column: llama.cpp's
// imatrix for the tensor, in_sum2 / counts): the bytes llama-quantize
// writes with --imatrix. A type whose quantizer has no use for weights
// (q8_0, mxfp4, the float types) quantizes as quantize_row; qw == nullptr
// is quantize_row. Returns as quantize_row.
// REQUIRES: as quantize_row; qw[i] finite and >= 0.
size_t quantize_row_weighted(ggml_type t, const float* src, void* dst, int64_t n, const float* qw);

// Whether t's quantizer uses importance weights (q4_0, q4_1, q5_0, q5_1,
// q2_K .. q6_K, iq4_nl, iq4_xs, iq2_s, iq3_xxs, iq3_s, and iq2_xxs, iq2_xs,
// iq1_s, iq1_m, which have no quantizer without them: quantize_supported is
// false for those, and quantize_row_weighted needs qw).
bool quantize_uses_weights(ggml_type t);

// quantize_row without the k-quants' scale searches (q4_K, q5_K: the
// min/max fit only; q6_K: no perturbed scales): the same block formats
// with somewhat more rounding error, not llama.cpp's bytes, 20-40x faster.
// Other types quantize exactly as quantize_row. For synthetic models, where
// the searches would make an 8B Q4_K_M take about an hour on 2 cores.
size_t quantize_row_fast(ggml_type t, const float* src, void* dst, int64_t n);

}  // namespace cortex
