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
// f16 / bf16 weights: f32 values of x rounded to f16 / bf16 (as llama.cpp
// does), stride a multiple of 64.
//
// q8_32 layout (q4_0, q8_0, q5_0, iq4_nl, mxfp4 weights), nb = cols / 32 blocks, nbp = nb
// rounded up to even, padding blocks all zero:
//   int8  qs[nbp * 32]   at 0           quantized values, x ~ qs * d
//   float dxv[nbp * 8]   at d_offset    d of block b in lanes 8b .. 8b+7
//   float cxv[nbp * 8]   at aux_offset  lane 8b: -offset * sum(qs of b) * d_b,
//                                        other lanes 0 (offset = the weight type's
//                                        zero_point, kernels/quant_traits.hpp)
// q8_1 layout (q4_1, q5_1 weights): the q8_32 layout (same qs and dxv, the
// codes and f16-rounded d of llama.cpp's quantize_row_q8_1 on x86) except
//   float sxv[nbp * 8]   at aux_offset  lane 8b: s of block b = f16(d * sum(qs
//                                        of b)) with d unrounded (block_q8_1's
//                                        s), other lanes 0
// so a weight block's min m adds m * s, llama.cpp's vec_dot_q4_1_q8_1 term.
// q8_256 layout (k-quant and iq weights but iq4_nl), nb = cols / 256 (llama.cpp's block_q8_k):
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

// ---- packed weights (kernels/matmul_packed.hpp) ----------------------------
//
// Rows in panels of 16 (zero-padded at the end of each segment). Panel p
// starts at data + p * panel_bytes (64-aligned) and holds records of two
// 32-column blocks (the block count rounded up to even, padding zero):
//   half_bits d[2][16]          64 B  scale of block 2i+h, row r at d[h][r]
//   codes of block 2i, then 2i+1, each as zmm-sized groups:
//     q4_0: 4 groups of 64 B; group g, row r = bytes 4g..4g+3 of the row's qs
//           (low nibbles: columns 4g.., high nibbles: columns 16+4g..)
//     q8_0: 8 groups of 64 B; group g, row r = qs[4g..4g+3] ^ 0x80 (unsigned)
//     q5_0: q4_0's 4 groups of its qs, then one group of its fifth bits: row
//           r's byte k holds in bit 2g the fifth bit of column 4g + k, in bit
//           2g + 1 that of column 16 + 4g + k (g = 0..3)
// so one 64-byte load holds 4 codes (or 8 nibbles) of each of the 16 rows.
//
// k-quants: one record per 256-column super-block (row r in lane r):
//   q4_k (2368 B): half_bits d[16] at 0, dmin[16] at 32; uint8 scale[8][16]
//     at 64 (sub-block j); uint8 min pairs [4][16][2] at 192 (pair k, row r:
//     min 2k, min 2k+1); codes at 320: for pair p (0..3) 8 groups of 64 B,
//     group g row r = qs[32p + 4g .. +3] (low nibbles: sub-block 2p,
//     columns 64p + 4g..; high nibbles: sub-block 2p+1, columns 64p+32+4g..)
//   q5_k (2880 B): the q4_k record, then its fifth bits at 2368: 8 groups of
//     64 B, group g row r = qh[4g .. 4g + 3] (bit s: sub-block s)
//   q6_k (3392 B): half_bits d[16] at 0; int8 scale[16][16] at 64; codes at
//     320: for half h (0..1), lq (0..7) three groups of 64 B: row r =
//     ql[64h + 4lq ..], ql[64h + 32 + 4lq ..], qh[32h + 4lq ..] (+3 each),
//     which hold codes of columns 128h + 32c + 4lq .. +3 for c = 0..3
//     (sub-block 8h + 2c + lq / 4), as in llama.cpp's block_q6_K.
constexpr int packed_panel_rows = 16;

// Where a run of panels writes: rows [0, rows) of y (n_tokens, ld), token t
// of row r at y[t * ld + r]. A packed matrix may concatenate several weight
// matrices of the same type and cols (e.g. q, k and v), one segment each.
struct packed_segment {
  int64_t panel_begin;  // first panel of the segment
  int64_t rows;         // real rows (the last panel may be padded)
  float* y;
  int64_t ld;
};

struct packed_view {
  ggml_type type;  // q4_0, q5_0, q8_0, iq4_nl, mxfp4, q4_k, q5_k or q6_k
  int64_t cols;
  int64_t n_panels;
  const uint8_t* data;
  size_t panel_bytes;
  const packed_segment* segments;
  int n_segments;
};

// Where panel p's outputs go: y + t * ld for token t, `valid` rows (1..16).
struct packed_dest {
  float* y;
  int64_t ld;
  int64_t valid;
};
packed_dest packed_dest_of(const packed_view& w, int64_t p);

// Activations for packed kernels (q8_p layout), nb = cols / 32, nbp = nb
// rounded up to even, padding blocks zero:
//   int8  qs[nbp * 32]  at 0           as quantize_row_q8_0 (llama.cpp)
//   float d[nbp]        at d_offset    f16-rounded block scale
//   int32 corr[nbp]     at aux_offset  -zero_point * sum(qs of the block)
//                                      (zero point 8 for q4_0, 16 for q5_0
//                                      and mxfp4, 128 for q8_0 and iq4_nl)
// Activations for packed k-quant kernels (q8_kp layout), nb = cols / 256:
//   int8  qs[nb * 256]  at 0           as quantize_row_q8_K (llama.cpp)
//   float d[nb]         at d_offset
//   per super-block b, 128 bytes at aux_offset + 128 b:
//     int16 bsum32[8]   at +0          sums of each 32 consecutive qs
//     int32 corr16[16]  at +64         -32 * sum of each 16 consecutive qs
struct packed_x_layout {
  size_t stride, d_offset, aux_offset;
};
// The q8_p / q8_kp layout of `cols` activations for packed weights of type t.
packed_x_layout packed_x_layout_of(ggml_type t, int64_t cols);
// Quantizes one token's `cols` activations x into `out` (l.stride bytes, l
// = packed_x_layout_of(t, cols)) with q8_32 (the scalar quantize_block_q8_32
// or a bit-identical SIMD one).
void quantize_packed_token(ggml_type t, int64_t cols, const float* x, uint8_t* out,
                           float (*q8_32)(const float*, int8_t*, int*));

// Computes y for panels [panel_begin, panel_end) and tokens [0, n_tokens).
using packed_rows_fn = void (*)(const packed_view& w, const quantized_x& x, int n_tokens, int64_t panel_begin,
                                int64_t panel_end);

// The per-type kernels (matmul_rows_fn, packed_rows_fn) are named by the
// type's row in kernels/quant_traits.cpp. The activation kernels are per isa:
struct activation_kernels {
  // quantize_block_q8_32, bit-identical to the scalar one.
  float (*quantize_q8_32)(const float* x, int8_t* q, int* sum) = nullptr;
  // round_to_f16, bit-identical to the scalar one (NaN payloads aside).
  void (*round_to_f16)(const float* x, float* y, int64_t n) = nullptr;
  // to_f16, bit-identical to the scalar one (NaN payloads aside): the f16
  // KV cache's store and quantize_row_f16.
  void (*to_f16)(const float* x, uint16_t* y, int64_t n) = nullptr;
};

// The activation kernels of the active isa (kernels/cpu_features.hpp).
const activation_kernels& active_activation_kernels();

// y[i] = x[i] rounded to the nearest f16 (ties to even, overflow to inf,
// subnormals kept), as f32: the activations of f16 weights.
void round_to_f16(const float* x, float* y, int64_t n);
void round_to_f16_avx2(const float* x, float* y, int64_t n);  // x86/matmul_avx2.cpp

// y[i] = the f16 bits of x[i] (fp32_to_fp16: nearest, ties to even).
void to_f16(const float* x, uint16_t* y, int64_t n);
void to_f16_avx2(const float* x, uint16_t* y, int64_t n);  // x86/matmul_avx2.cpp

// Quantizes one block of 32 activations as llama.cpp's quantize_row_q8_0 does
// on x86 (d = amax / 127 rounded to f16, q = round_half_even(x * 127 / amax)).
// Writes q[32] and *sum = sum(q); returns the f16-rounded d.
float quantize_block_q8_32(const float* x, int8_t* q, int* sum);
float quantize_block_q8_32_avx512(const float* x, int8_t* q, int* sum);  // x86/matmul_quantize_avx512.cpp

// Quantizes one super-block of 256 activations as llama.cpp's
// quantize_row_q8_K does; writes q[256] and returns d.
float quantize_block_q8_256(const float* x, int8_t* q);

}  // namespace cortex::kernels
