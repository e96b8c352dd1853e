// Which sub-block scale each int32 lane of a k-quant chunk (64 codes, 4 per
// lane) takes, as vpermd indices for the AVX-512 k_tile's dot_chunk
// (kernels/x86/matmul_tile_body.hpp). Shared by x86/matmul_k_avx512.cpp and
// x86/matmul_iq_avx512.cpp. Anonymous namespace on purpose (see
// matmul_tile_loop.hpp); include only from TUs compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace cortex::kernels {
namespace {

// One scale per 32 codes (scales 0..7): lanes 0-7 scale 2c, lanes 8-15 2c + 1.
inline __m512i chunk_index_k4(int c) {
  return _mm512_set_epi32(2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1,
                          2 * c, 2 * c, 2 * c, 2 * c, 2 * c, 2 * c, 2 * c, 2 * c);
}

// One scale per 16 codes (scales 0..15): lane i takes scale 4c + i / 4.
inline __m512i chunk_index_q6(int c) {
  const int b = 4 * c;
  return _mm512_set_epi32(b + 3, b + 3, b + 3, b + 3, b + 2, b + 2, b + 2, b + 2, b + 1, b + 1, b + 1, b + 1, b, b, b, b);
}

}  // namespace
}  // namespace cortex::kernels
