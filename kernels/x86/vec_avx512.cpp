// The vectorised kernels (vec_body.hpp) compiled for AVX-512: 16 floats a vec.
// Reached only through active_vec_entries() when the CPU has AVX-512.
// GCC 12 reports its own AVX-512 intrinsics (`__m512 __Y = __Y;` in
// _mm512_undefined_ps) as maybe-uninitialized once inlined at -O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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
};

}  // namespace

const vec_entries vec_entries_avx512 = make_vec_entries<avx512_traits>();

}  // namespace cortex::kernels::detail
