// The AVX-512 VNNI isa traits of the generic matmul tile bodies
// (kernels/x86/matmul_tile_body.hpp): 16 floats a vector, a k-quant chunk in
// one zmm, vpdpbusd + vpdpwssd for the integer dots. Include only from TUs
// compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace cortex::kernels {
namespace {

struct avx512_isa {
  using facc = __m512;
  static constexpr int width = 16;
  static facc fzero() { return _mm512_setzero_ps(); }
  // Lane l + lane l + 8, then + 4, + 2, + 1 (written out rather than
  // _mm512_reduce_add_ps, whose order is the compiler's: store_sums_4x4
  // must add the same pairs).
  static float reduce(facc v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }
  static facc loadx(const float* p) { return _mm512_loadu_ps(p); }
  static facc fmadd(facc a, facc b, facc c) { return _mm512_fmadd_ps(a, b, c); }
  // The leftover columns as one masked step, before the horizontal sum.
  template <class Load>
  static facc add_tail(facc acc, const uint8_t* row, const float* x, int64_t k, int64_t cols) {
    if (k >= cols) return acc;
    const __mmask16 m = static_cast<__mmask16>((1u << (cols - k)) - 1);
    return _mm512_fmadd_ps(Load::load_tail(row, k, m), _mm512_maskz_loadu_ps(m, x + k), acc);
  }
  template <class Load>
  static float finish_float(facc acc, const uint8_t* row, const float* x, int64_t k, int64_t cols) {
    return reduce(add_tail<Load>(acc, row, x, k, cols));
  }

  // y[j * ld + i] = reduce(acc[i][j]) for a 4 x 4 tile, the 16 horizontal
  // sums done together: each level adds the same lane pairs as
  // _mm512_reduce_add_ps (lane l + lane l + 8, then + 4, + 2, + 1), so the
  // bits are the same, in 45 shuffles and adds instead of about 130.
  static void store_sums_4x4(const facc (&acc)[4][4], float* y, int64_t ld) {
    const facc* a = &acc[0][0];  // a[4i + j]
    __m512 b[8];                 // b[m]: lanes 0-7 the first level of a[2m], 8-15 of a[2m + 1]
    for (int m = 0; m < 8; ++m) {
      const __m512 lo = _mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0));
      const __m512 hi = _mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2));
      b[m] = _mm512_add_ps(lo, hi);
    }
    __m512 c[4];  // c[n]: 128-bit lane q the second level of a[4n + q]
    for (int n = 0; n < 4; ++n) {
      const __m512 even = _mm512_shuffle_f32x4(b[2 * n], b[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0));
      const __m512 odd = _mm512_shuffle_f32x4(b[2 * n], b[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1));
      c[n] = _mm512_add_ps(even, odd);
    }
    __m512 d[2];  // d[p], lane q: the third level of a[8p + q] (2 floats), then of a[8p + 4 + q]
    for (int p = 0; p < 2; ++p) {
      const __m512 x01 = _mm512_shuffle_ps(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0));
      const __m512 x23 = _mm512_shuffle_ps(c[2 * p], c[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2));
      d[p] = _mm512_add_ps(x01, x23);
    }
    // Lane q, float e: the sum of a[4e + q], i.e. token q's four rows.
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_ps(y, _mm512_castps512_ps128(r));
    _mm_storeu_ps(y + ld, _mm512_extractf32x4_ps(r, 1));
    _mm_storeu_ps(y + 2 * ld, _mm512_extractf32x4_ps(r, 2));
    _mm_storeu_ps(y + 3 * ld, _mm512_extractf32x4_ps(r, 3));
  }

  using iacc = __m512i;
  static iacc izero() { return _mm512_setzero_si512(); }
  using chunk = __m512i;
  static chunk load_chunk(const uint8_t* p) { return _mm512_load_si512(p); }
  // vpdpbusd sums 4 code * x products per lane (|lane| < 2^15), vpdpwssd
  // multiplies by the scale in the low 16 bits of the lane.
  static iacc dot_chunk(iacc isum, chunk w, chunk x, chunk s) {
    return _mm512_dpwssd_epi32(isum, _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x), s);
  }
};

}  // namespace
}  // namespace cortex::kernels
