// AVX-512 activation quantization for q8_32 blocks: bit-identical to the
// scalar quantize_block_q8_32 (same products, cvtps2dq rounds half to even
// like nearest_int, F16C rounds d to nearest even like fp32_to_fp16).
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

float quantize_block_q8_32_avx512(const float* x, int8_t* q, int* sum) {
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const __m512 amax16 = _mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b));
  const float amax = _mm512_reduce_max_ps(amax16);
  const float d = amax / 127.f;
  const float id = amax != 0.f ? 127.f / amax : 0.f;
  const __m512 idv = _mm512_set1_ps(id);
  const __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, idv));
  const __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, idv));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(qa));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(qb));
  *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
  return _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace cortex::kernels
