// The sixteen 6-bit sub-block scales of a q3_K super-block, unpacked for the
// SIMD matmul kernels. Anonymous namespace on purpose (see
// matmul_tile_loop.hpp): each isa TU gets its own copy, compiled with its
// own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace cortex::kernels {
namespace {

// Scales 0..15 of the 12 packed bytes q, as signed int8 (-32..31) in bytes
// 0..15. Scale j takes its low nibble from q[j % 8] (the high nibble for
// j >= 8) and its top two bits from bit pair j / 4 of q[8 + j % 4]
// (llama.cpp's block_q3_K), here four scales at a time.
inline __m128i q3_k_scales(const uint8_t* q) {
  uint32_t a0, a1, a2;
  std::memcpy(&a0, q, 4);
  std::memcpy(&a1, q + 4, 4);
  std::memcpy(&a2, q + 8, 4);
  const uint32_t nibbles = 0x0f0f0f0fu, pairs = 0x03030303u;
  const uint32_t s0 = (a0 & nibbles) | ((a2 & pairs) << 4);
  const uint32_t s1 = (a1 & nibbles) | (((a2 >> 2) & pairs) << 4);
  const uint32_t s2 = ((a0 >> 4) & nibbles) | (((a2 >> 4) & pairs) << 4);
  const uint32_t s3 = ((a1 >> 4) & nibbles) | (((a2 >> 6) & pairs) << 4);
  const __m128i raw =
      _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1), static_cast<int>(s0));
  return _mm_sub_epi8(raw, _mm_set1_epi8(32));
}

}  // namespace
}  // namespace cortex::kernels
