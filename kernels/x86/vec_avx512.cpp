// The vectorised kernels (vec_body.hpp) compiled for AVX-512: 16 floats a vec.
// Reached only through active_vec_entries() when the CPU has AVX-512.
// GCC 12 reports its own AVX-512 intrinsics (`__m512 __Y = __Y;` in
// _mm512_undefined_ps) as maybe-uninitialized once inlined at -O3.
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/x86/vec_body.hpp"

namespace cortex::kernels::detail {
namespace {

struct avx512_traits {
  using vec = __m512;
  using ivec = int32_t __attribute__((vector_size(64)));
  static constexpr int width = 16;
  static vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, vec v) { _mm512_storeu_ps(p, v); }
  static vec set1(float f) { return _mm512_set1_ps(f); }
  static vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
  static vec vmax(vec a, vec b) { return _mm512_max_ps(a, b); }
  static vec vmin(vec a, vec b) { return _mm512_min_ps(a, b); }
  static float hsum(vec v) { return _mm512_reduce_add_ps(v); }
  static float hmax(vec v) { return _mm512_reduce_max_ps(v); }
  static __m256 fold(vec v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }
  static void hsum4(vec a, vec b, vec c, vec d, float* out) {
    // hadd pairs lanes within each 128-bit half: [a b c d] sums per half, then the halves.
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
  static vec load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static vec load_bf16(const uint16_t* p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
  }
  static vec load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static ivec f16_bits(vec v) {
    return reinterpret_cast<ivec>(_mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
  }
  static vec gather(const float* table, ivec idx) {
    return _mm512_i32gather_ps(reinterpret_cast<__m512i>(idx), table, 4);
  }
};

}  // namespace

const vec_entries vec_entries_avx512 = make_vec_entries<avx512_traits>();

}  // namespace cortex::kernels::detail
