// Tile loop shared by the isa-specific matmul translation units.
// Deliberately in an anonymous namespace: each isa TU gets its own copy,
// compiled with its own flags, so the linker can never pick an AVX-512 copy
// for a caller on another CPU (the ODR hazard of inline functions).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"

namespace cortex::kernels {
namespace {

inline const uint8_t* weight_row(const weight_view& w, int64_t r) {
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes;
}

// The operands of one rows x tokens tile: weight rows r .. r+nr-1 (viewed as
// Block) and the activations of tokens t .. t+nt-1 (viewed as X).
template <class Block, class X, int nr, int nt>
struct tile_operands {
  const Block* rows[nr];
  const X* xs[nt];
  tile_operands(const weight_view& w, const quantized_x& x, int64_t r, int t) {
    for (int i = 0; i < nr; ++i) rows[i] = reinterpret_cast<const Block*>(weight_row(w, r + i));
    for (int j = 0; j < nt; ++j) xs[j] = reinterpret_cast<const X*>(x.data + static_cast<size_t>(t + j) * x.stride);
  }
};

// Packed q4_0 / q5_0 / q8_0 records (kernels/matmul_kernels.hpp): a 64-byte
// header of two blocks' f16 scales, then each block's code groups.
constexpr int64_t record_header = 64;
// iq4_nl and mxfp4 are q4_0's nibbles read through their table (lut) offset
// by the zero point; mxfp4's scale slots hold bf16, the others' f16.
struct fmt_q4_0 {
  static constexpr int64_t block_code_bytes = 256;
  static constexpr const int8_t* lut = nullptr;
  static constexpr int zero_point = 8;
  static constexpr bool bf16_scale = false;
};
struct fmt_q8_0 : fmt_q4_0 {
  static constexpr int64_t block_code_bytes = 512;
};
struct fmt_q5_0 : fmt_q4_0 {  // q4_0's 4 nibble groups, then one group of fifth bits
  static constexpr int64_t block_code_bytes = 320;
};
struct fmt_iq4_nl : fmt_q4_0 {
  static constexpr const int8_t* lut = kvalues_iq4nl;
  static constexpr int zero_point = 128;
};
struct fmt_mxfp4 : fmt_q4_0 {
  static constexpr const int8_t* lut = kvalues_mxfp4;
  static constexpr int zero_point = 16;
  static constexpr bool bf16_scale = true;
};

// Pointers into the q8_p / q8_kp activations (kernels/matmul_kernels.hpp) of
// tokens [t, t + NT): codes, block scales, and the aux data: Aux = int32_t
// for q8_p (zero-point correction per block), uint8_t for q8_kp (128-byte
// records of bsum32 and corr16 per super-block).
template <int NT, class Aux = int32_t>
struct q8p_tokens {
  const int8_t* q[NT];
  const float* d[NT];
  const Aux* c[NT];
  q8p_tokens(const quantized_x& x, int t) {
    for (int j = 0; j < NT; ++j) {
      const uint8_t* base = x.data + static_cast<size_t>(t + j) * x.stride;
      q[j] = reinterpret_cast<const int8_t*>(base);
      d[j] = reinterpret_cast<const float*>(base + x.d_offset);
      c[j] = reinterpret_cast<const Aux*>(base + x.aux_offset);
    }
  }
};

// AVX2 packed kernels work on half panels: 8 rows of a 16-row panel, row
// lane0 + r in 32-bit lane r of one ymm half of every 64-byte group, so
// results come out as 8 contiguous outputs with no horizontal sums.
// Half panel k is panel k / 2, rows 8 * (k % 2) ..; `valid` rows (0..8) of
// it are real (0: the panel's padding).
struct half_panel_ref {
  const uint8_t* panel;
  int64_t lane0;  // 0 or 8
  float* y;
  int64_t ld;
  int valid;
};

inline half_panel_ref half_panel_at(const packed_view& w, int64_t k) {
  const int64_t p = k / 2;
  const packed_dest d = packed_dest_of(w, p);
  const int64_t lane0 = 8 * (k % 2);
  const int64_t v = d.valid - lane0;
  return {w.data + static_cast<size_t>(p) * w.panel_bytes, lane0, d.y + lane0, d.ld,
          static_cast<int>(v < 0 ? 0 : (v > 8 ? 8 : v))};
}

// Writes the first `valid` (0..8) floats of v to y.
inline void store_half_panel_rows(float* y, int valid, __m256 v) {
  if (valid == 8) {
    _mm256_storeu_ps(y, v);
  } else if (valid > 0) {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    std::memcpy(y, tmp, static_cast<size_t>(valid) * 4);
  }
}

// Calls tile.run<nh, nt>(k, t) over the half panels of panels [p0, p1) and
// tokens [0, n_tokens): decode (one token) 4 half panels at a time, i.e. four
// weight streams per pass; batches one half panel against 4 tokens at a time,
// then the leftover tokens at once.
template <class Tile>
void for_each_half_panel_tile(int64_t p0, int64_t p1, int n_tokens, const Tile& tile) {
  int64_t k = 2 * p0;
  const int64_t k1 = 2 * p1;
  if (n_tokens == 1) {
    for (; k + 4 <= k1; k += 4) tile.template run<4, 1>(k, 0);
    for (; k < k1; ++k) tile.template run<1, 1>(k, 0);
    return;
  }
  for (; k < k1; ++k) {
    int t = 0;
    for (; t + 4 <= n_tokens; t += 4) tile.template run<1, 4>(k, t);
    switch (n_tokens - t) {
      case 3: tile.template run<1, 3>(k, t); break;
      case 2: tile.template run<1, 2>(k, t); break;
      case 1: tile.template run<1, 1>(k, t); break;
      default: break;
    }
  }
}

// Calls tile.run<nr, nt>(r, t) over rows [r0, r1) x tokens [0, n_tokens):
// NR x NT tiles, NR x 1 for leftover tokens, then single rows at the end.
template <int NR, int NT, class Tile>
void for_each_tile(int64_t r0, int64_t r1, int n_tokens, const Tile& tile) {
  int64_t r = r0;
  for (; r + NR <= r1; r += NR) {
    int t = 0;
    for (; t + NT <= n_tokens; t += NT) tile.template run<NR, NT>(r, t);
    for (; t < n_tokens; ++t) tile.template run<NR, 1>(r, t);
  }
  for (; r < r1; ++r) {
    int t = 0;
    for (; t + NT <= n_tokens; t += NT) tile.template run<1, NT>(r, t);
    for (; t < n_tokens; ++t) tile.template run<1, 1>(r, t);
  }
}

// A matmul_rows_fn from a tile type {w, x, y} with run<nr, nt>(r, t):
// DecodeNR x 1 tiles for one token, NR x NT tiles for batches.
template <class Tile, int DecodeNR, int NR, int NT>
void tiled_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1) {
  const Tile tile{w, x, y};
  if (n_tokens == 1) {
    for_each_tile<DecodeNR, 1>(r0, r1, n_tokens, tile);
  } else {
    for_each_tile<NR, NT>(r0, r1, n_tokens, tile);
  }
}

}  // namespace
}  // namespace cortex::kernels
