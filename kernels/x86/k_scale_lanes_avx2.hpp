// Sub-block scales of a k-quant chunk (64 codes, two ymm) laid out for the
// AVX2 k_tile's dot_chunk (kernels/x86/matmul_tile_body.hpp): an int16 scale
// per int16 lane of maddubs' pair sums. Shared by x86/matmul_k_avx2.cpp and
// x86/matmul_iq_avx2.cpp. Anonymous namespace on purpose (see
// matmul_tile_loop.hpp); include only from TUs compiled with the AVX2 flags.
#pragma once

#include <immintrin.h>

#include "kernels/x86/matmul_isa_avx2.hpp"

namespace cortex::kernels {
namespace {

// pshufb mask that puts int16 lane k0 of the low 128 bits in every int16 of
// the low half and lane k1 of the high 128 bits in every int16 of the high half.
inline __m256i pick_int16(int k0, int k1) {
  const auto pair = [](int k) { return static_cast<short>((2 * k) | ((2 * k + 1) << 8)); };
  return _mm256_set_m128i(_mm_set1_epi16(pair(k1)), _mm_set1_epi16(pair(k0)));
}

// Scales of the two 32-code sub-blocks of chunk c (2c: lo, 2c + 1: hi), from
// int16 scales in lanes j and j + 8 (j < 8) of `scales`.
inline avx2_isa::chunk scales_of_32(__m256i scales, int c) {
  return {_mm256_shuffle_epi8(scales, pick_int16(2 * c, 2 * c)),
          _mm256_shuffle_epi8(scales, pick_int16(2 * c + 1, 2 * c + 1))};
}

// Scales of the four 16-code sub-blocks of chunk c (4c .. 4c + 3), two per
// ymm (16 codes per 128 bits), from int16 scales 8h .. 8h + 7 held in both
// 128-bit halves of halves[h].
inline avx2_isa::chunk scales_of_16(const __m256i (&halves)[2], int c) {
  const __m256i& sc = halves[c >> 1];
  const int k = (4 * c) & 7;
  return {_mm256_shuffle_epi8(sc, pick_int16(k, k + 1)), _mm256_shuffle_epi8(sc, pick_int16(k + 2, k + 3))};
}

// The int8 scales of 16 sub-blocks -> both 128-bit halves of halves[h]
// holding scales 8h .. 8h + 7 as int16; returns all 16 as int16.
inline __m256i spread_scales_of_16(__m128i sc8, bool is_signed, __m256i (&halves)[2]) {
  const __m256i sc16 = is_signed ? _mm256_cvtepi8_epi16(sc8) : _mm256_cvtepu8_epi16(sc8);
  halves[0] = _mm256_permute2x128_si256(sc16, sc16, 0x00);
  halves[1] = _mm256_permute2x128_si256(sc16, sc16, 0x11);
  return sc16;
}

}  // namespace
}  // namespace cortex::kernels
