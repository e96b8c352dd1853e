// Internal interface between the matmul dispatcher and its per-isa kernels.
// Plain structs and function pointers only: the isa translation units include
// this header and nothing that could emit an inline function with their flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_type.hpp"
#include "kernels/quant_blocks.hpp"

namespace cortex::kernels {

// A weight matrix W (rows, cols), row-major: rows = output features,
// cols = input features (GGUF ne[0] = cols). Row r starts at
// data + r * row_bytes. REQUIRES: cols is a multiple of the type's block size.
struct weight_view {
  ggml_type type;
  int64_t rows;
  int64_t cols;
  const void* data;
  size_t row_bytes;
};

// Activations x (n_tokens, cols) prepared for one matmul call; token t's data
// starts at data + t * stride (stride is a multiple of 64, data 64-aligned).
//
// f32 weights: data is x itself (stride = cols * 4, no alignment promise).
//
// q8_32 layout (q4_0, q8_0, q5_0 weights), nb = cols / 32 blocks, nbp = nb
// rounded up to even, padding blocks all zero:
//   int8  qs[nbp * 32]   at 0           quantized values, x ~ qs * d
//   float dxv[nbp * 8]   at d_offset    d of block b in lanes 8b .. 8b+7
//   float cxv[nbp * 8]   at aux_offset  lane 8b: -offset * sum(qs of b) * d_b,
//                                        other lanes 0 (offset = weight zero point)
// q8_256 layout (k-quant weights), nb = cols / 256 (llama.cpp's block_q8_k):
//   int8    qs[nb * 256] at 0
//   float   d[nb]        at d_offset
//   int16   bsums[nb*16] at aux_offset   sums of each 16 consecutive qs
struct quantized_x {
  const uint8_t* data;
  size_t stride;
  size_t d_offset;
  size_t aux_offset;
};

// y (n_tokens, w.rows) for rows [row_begin, row_end): y[t * w.rows + r] =
// dot(W row r, x token t). REQUIRES: x prepared for w.type.
using matmul_rows_fn = void (*)(const weight_view& w, const quantized_x& x, int n_tokens, float* y,
                                int64_t row_begin, int64_t row_end);

// One isa's kernels; nullptr where a type is not implemented for it.
struct matmul_kernel_set {
  matmul_rows_fn f32 = nullptr;
  matmul_rows_fn f16 = nullptr;
  matmul_rows_fn bf16 = nullptr;
  matmul_rows_fn q4_0 = nullptr;
  matmul_rows_fn q8_0 = nullptr;
  matmul_rows_fn q5_0 = nullptr;
  matmul_rows_fn q4_k = nullptr;
  matmul_rows_fn q5_k = nullptr;
  matmul_rows_fn q6_k = nullptr;
};

// Zero point subtracted from the stored weight code for q8_32 weight types:
// 8 (q4_0), 16 (q5_0), 128 (q8_0: AVX-512 offsets int8 weights to uint8).
constexpr int q8_32_offset_q4_0 = 8;
constexpr int q8_32_offset_q5_0 = 16;
constexpr int q8_32_offset_q8_0 = 128;

// Filled in by each isa's translation unit. The scalar set is complete.
void get_matmul_kernels_scalar(matmul_kernel_set* set);
void get_matmul_kernels_avx2(matmul_kernel_set* set);
void get_matmul_kernels_avx512(matmul_kernel_set* set);      // f32/f16/bf16, q8_32 types
void get_matmul_kernels_avx512_k(matmul_kernel_set* set);    // k-quants

}  // namespace cortex::kernels
