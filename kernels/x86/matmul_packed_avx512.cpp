// AVX-512 VNNI kernels for packed q4_0 / q8_0 weights (layout in
// kernels/matmul_kernels.hpp). Only get_matmul_kernels_avx512_packed is
// exported.
//
// A 64-byte load gives 4 codes of each of 16 rows; vpdpbusd with the token's
// 4 matching activation bytes broadcast to every lane accumulates one int32
// block dot per row and lane. Per (block, panel, token) the float work is one
// convert and one multiply-add for 16 rows, and the result is 16 contiguous
// outputs: no horizontal sums. The zero point (8 or 128) enters as the
// accumulator's initial value, corr = -zero_point * sum(x codes of the block).
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

namespace {

constexpr int64_t record_header = 64;  // two blocks' f16 scales

struct fmt_q4_0 {
  static constexpr int64_t block_code_bytes = 256;
};
struct fmt_q8_0 {
  static constexpr int64_t block_code_bytes = 512;
};

inline __m512i broadcast_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// y for panels [p, p + NP) and tokens [t, t + NT).
template <class Fmt, int NP, int NT>
void tile(const packed_view& w, const quantized_x& x, int64_t p, int t) {
  constexpr int64_t record = record_header + 2 * Fmt::block_code_bytes;
  const int64_t nb = w.cols / 32;
  const int64_t n_records = (nb + 1) / 2;
  const uint8_t* panel[NP];
  for (int i = 0; i < NP; ++i) panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  const int8_t* xq[NT];
  const float* xd[NT];
  const int32_t* xc[NT];
  for (int j = 0; j < NT; ++j) {
    const uint8_t* base = x.data + static_cast<size_t>(t + j) * x.stride;
    xq[j] = reinterpret_cast<const int8_t*>(base);
    xd[j] = reinterpret_cast<const float*>(base + x.d_offset);
    xc[j] = reinterpret_cast<const int32_t*>(base + x.aux_offset);
  }
  __m512 acc[NP][NT];
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0f);

  for (int64_t rec = 0; rec < n_records; ++rec) {
    for (int h = 0; h < 2; ++h) {
      const int64_t b = 2 * rec + h;
      const uint8_t* codes[NP];
      for (int i = 0; i < NP; ++i) codes[i] = panel[i] + rec * record + record_header + h * Fmt::block_code_bytes;
      __m512i ia[NP][NT];
      for (int j = 0; j < NT; ++j) {
        const __m512i c = _mm512_set1_epi32(xc[j][b]);
        for (int i = 0; i < NP; ++i) ia[i][j] = c;
      }
      if constexpr (Fmt::block_code_bytes == 256) {
        for (int g = 0; g < 4; ++g) {
          __m512i lo[NP], hi[NP];
          for (int i = 0; i < NP; ++i) {
            const __m512i v = _mm512_load_si512(codes[i] + 64 * g);
            lo[i] = _mm512_and_si512(v, low4);
            hi[i] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
          }
          for (int j = 0; j < NT; ++j) {
            const __m512i xl = broadcast_dword(xq[j] + b * 32 + 4 * g);
            const __m512i xh = broadcast_dword(xq[j] + b * 32 + 16 + 4 * g);
            for (int i = 0; i < NP; ++i) {
              ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], lo[i], xl);
              ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], hi[i], xh);
            }
          }
        }
      } else {
        for (int g = 0; g < 8; ++g) {
          __m512i c[NP];
          for (int i = 0; i < NP; ++i) c[i] = _mm512_load_si512(codes[i] + 64 * g);
          for (int j = 0; j < NT; ++j) {
            const __m512i xg = broadcast_dword(xq[j] + b * 32 + 4 * g);
            for (int i = 0; i < NP; ++i) ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], c[i], xg);
          }
        }
      }
      __m512 dw[NP];
      for (int i = 0; i < NP; ++i) {
        dw[i] = _mm512_cvtph_ps(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(panel[i] + rec * record + h * 32)));
      }
      for (int j = 0; j < NT; ++j) {
        const __m512 dx = _mm512_set1_ps(xd[j][b]);
        for (int i = 0; i < NP; ++i) {
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i][j]), _mm512_mul_ps(dw[i], dx), acc[i][j]);
        }
      }
    }
  }

  for (int i = 0; i < NP; ++i) {
    const packed_dest d = packed_dest_of(w, p + i);
    const __mmask16 m = static_cast<__mmask16>(d.valid == 16 ? 0xffff : (1u << d.valid) - 1);
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(d.y + (t + j) * d.ld, m, acc[i][j]);
  }
}

template <class Fmt, int NP>
void token_loop(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p) {
  int t = 0;
  for (; t + 4 <= n_tokens; t += 4) tile<Fmt, NP, 4>(w, x, p, t);
  switch (n_tokens - t) {
    case 3: tile<Fmt, NP, 3>(w, x, p, t); break;
    case 2: tile<Fmt, NP, 2>(w, x, p, t); break;
    case 1: tile<Fmt, NP, 1>(w, x, p, t); break;
    default: break;
  }
}

template <class Fmt>
void packed_rows(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  int64_t p = p0;
  if (n_tokens == 1) {
    // Decode: four panels (four weight streams) per pass.
    for (; p + 4 <= p1; p += 4) tile<Fmt, 4, 1>(w, x, p, 0);
    for (; p < p1; ++p) tile<Fmt, 1, 1>(w, x, p, 0);
    return;
  }
  for (; p + 2 <= p1; p += 2) token_loop<Fmt, 2>(w, x, n_tokens, p);
  for (; p < p1; ++p) token_loop<Fmt, 1>(w, x, n_tokens, p);
}

}  // namespace

void get_matmul_kernels_avx512_packed(matmul_kernel_set* set) {
  set->packed_q4_0 = packed_rows<fmt_q4_0>;
  set->packed_q8_0 = packed_rows<fmt_q8_0>;
}

}  // namespace cortex::kernels
