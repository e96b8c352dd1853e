// The vectorised kernels (vec_body.hpp) compiled for AVX2 + FMA: 8 floats a
// vec. Reached only through active_vec_entries() when the CPU has AVX2.
#include <immintrin.h>

#include "kernels/x86/vec_body.hpp"

namespace cortex::kernels::detail {
namespace {

struct avx2_traits {
  using vec = __m256;
  using ivec = int32_t __attribute__((vector_size(32)));
  static constexpr int width = 8;
  static vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, vec v) { _mm256_storeu_ps(p, v); }
  static vec set1(float f) { return _mm256_set1_ps(f); }
  static vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static vec vmax(vec a, vec b) { return _mm256_max_ps(a, b); }
  static vec vmin(vec a, vec b) { return _mm256_min_ps(a, b); }
  static __m128 fold(vec v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }
  static float hsum(vec v) {
    __m128 s = fold(v);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static void hsum4(vec a, vec b, vec c, vec d, float* out) {
    const vec abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
  static float hmax(vec v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static vec load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static vec load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static vec load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static ivec f16_bits(vec v) {
    return reinterpret_cast<ivec>(_mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
  }
  static vec gather(const float* table, ivec idx) {
    return _mm256_i32gather_ps(table, reinterpret_cast<__m256i>(idx), 4);
  }
};

}  // namespace

const vec_entries vec_entries_avx2 = make_vec_entries<avx2_traits>();

}  // namespace cortex::kernels::detail
