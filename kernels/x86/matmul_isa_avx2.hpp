// The AVX2 isa traits of the generic matmul tile bodies
// (kernels/x86/matmul_tile_body.hpp): 8 floats a vector, k-quant chunks as
// two ymm, maddubs + madd for the integer dots. Include only from TUs
// compiled with the AVX2 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace cortex::kernels {
namespace {

struct avx2_isa {
  using facc = __m256;
  static constexpr int width = 8;
  static facc fzero() { return _mm256_setzero_ps(); }
  static float reduce(facc v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static facc loadx(const float* p) { return _mm256_loadu_ps(p); }
  static facc fmadd(facc a, facc b, facc c) { return _mm256_fmadd_ps(a, b, c); }
  // The leftover columns one by one, after the horizontal sum.
  template <class Load>
  static float finish_float(facc acc, const uint8_t* row, const float* x, int64_t k, int64_t cols) {
    float s = reduce(acc);
    for (; k < cols; ++k) s += Load::load1(row, k) * x[k];
    return s;
  }

  using iacc = __m256i;
  static iacc izero() { return _mm256_setzero_si256(); }
  struct chunk {
    __m256i lo, hi;  // codes 0..31, 32..63
  };
  static chunk load_chunk(const uint8_t* p) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32))};
  }
  // maddubs pairs codes into int16 (|lane| <= 2 * 63 * 128), madd applies
  // the int16 scales and pairs again into int32.
  static iacc dot_chunk(iacc isum, const chunk& w, const chunk& x, const chunk& s) {
    const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(w.lo, x.lo), s.lo);
    const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(w.hi, x.hi), s.hi);
    return _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
  }
};

}  // namespace
}  // namespace cortex::kernels
