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
  static float reduce(facc v) { return _mm512_reduce_add_ps(v); }
  static facc loadx(const float* p) { return _mm512_loadu_ps(p); }
  static facc fmadd(facc a, facc b, facc c) { return _mm512_fmadd_ps(a, b, c); }
  // The leftover columns as one masked step, before the horizontal sum.
  template <class Load>
  static float finish_float(facc acc, const uint8_t* row, const float* x, int64_t k, int64_t cols) {
    if (k < cols) {
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - k)) - 1);
      acc = _mm512_fmadd_ps(Load::load_tail(row, k, m), _mm512_maskz_loadu_ps(m, x + k), acc);
    }
    return reduce(acc);
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
