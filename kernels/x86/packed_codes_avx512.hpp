// AVX-512 pieces shared by the kernels on packed panels (layout in
// kernels/matmul_kernels.hpp): the VNNI kernels (matmul_packed_avx512.cpp,
// matmul_packed_k_avx512.cpp) and the AMX tile kernels
// (matmul_packed_amx_body.hpp), which must read codes and scales exactly as
// the VNNI ones do for their outputs to be the same bits. Anonymous
// namespace on purpose, as kernels/x86/matmul_tile_loop.hpp: each isa TU
// keeps its copy, compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {
namespace {

inline __m512i broadcast_dword(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The first `valid` (1..16) of a panel's 16 rows.
inline __mmask16 panel_rows_mask(int64_t valid) {
  return static_cast<__mmask16>(valid == 16 ? 0xffff : (1u << valid) - 1);
}

// ---- q4_0 / q5_0 / q8_0 / iq4_nl / mxfp4 (Fmt: kernels/x86/matmul_tile_loop.hpp)

// Fmt's table offset by its zero point, in every 128-bit lane (a
// vpshufb operand); unused for plain nibbles.
template <class Fmt>
inline __m512i lut_vector() {
  if constexpr (Fmt::lut != nullptr) {
    alignas(16) int8_t t[16];
    for (int k = 0; k < 16; ++k) t[k] = static_cast<int8_t>(Fmt::lut[k] + Fmt::zero_point);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  } else {
    return _mm512_setzero_si512();
  }
}

// Nibbles (0..15 per byte) to Fmt's unsigned codes.
template <class Fmt>
inline __m512i nibble_codes(__m512i nib, __m512i lut) {
  if constexpr (Fmt::lut != nullptr) return _mm512_shuffle_epi8(lut, nib);
  return nib;
}

// Whether Fmt's blocks end with q5_0's group of fifth bits.
template <class Fmt>
constexpr bool has_fifth_bits = Fmt::block_code_bytes == 320;

// codes | (fifth & 0x10 in every byte): one vpternlogd (A | (B & C), table
// 0xF8) where an and and an or would take two.
inline __m512i or_bit4(__m512i codes, __m512i fifth) {
  return _mm512_ternarylogic_epi32(codes, fifth, _mm512_set1_epi8(0x10), 0xF8);
}

// Group g (0..3) of a nibble block's codes, 4 per row of the 16: lo holds
// columns 4g .. 4g + 3, hi columns 16 + 4g .. (the high nibbles), as Fmt's
// unsigned codes. q5_0: bits 2g and 2g + 1 of each byte of the block's fifth
// bits (`bits`) go to bit 4 of lo and hi (a 32-bit rotate never carries
// another byte's bit into bit 4).
template <class Fmt>
inline void nibble_group(const uint8_t* codes, __m512i bits, int g, __m512i lut, __m512i& lo, __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i v = _mm512_load_si512(codes + 64 * g);
  lo = nibble_codes<Fmt>(_mm512_and_si512(v, low4), lut);
  hi = nibble_codes<Fmt>(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), lut);
  if constexpr (has_fifth_bits<Fmt>) {
    const __m512i rot_lo = _mm512_set1_epi32((4 - 2 * g) & 31), rot_hi = _mm512_set1_epi32((3 - 2 * g) & 31);
    lo = or_bit4(lo, _mm512_rolv_epi32(bits, rot_lo));
    hi = or_bit4(hi, _mm512_rolv_epi32(bits, rot_hi));
  }
}

// A nibble block's fifth bits (q5_0), zero for the other formats.
template <class Fmt>
inline __m512i fifth_bits_of(const uint8_t* codes) {
  if constexpr (has_fifth_bits<Fmt>) return _mm512_load_si512(codes + 256);
  return _mm512_setzero_si512();
}

// The 16 rows' scales of one block (Fmt's scale slots) as floats.
template <class Fmt>
inline __m512 block_scales(const uint8_t* slot) {
  const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(slot));
  if constexpr (Fmt::bf16_scale) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// ---- q4_k / q5_k / q6_k

constexpr int64_t record_q4_k = 2368;
constexpr int64_t record_q5_k = 2880;  // q4_k's record, then 8 groups of qh
constexpr int64_t record_q6_k = 3392;

// q4_k (High false) / q5_k (High true): record size, and the fifth bits of
// code group g of sub-block pair pr ORed into its low (sub-block 2 pr) and
// high (2 pr + 1) nibbles: bits 2 pr and 2 pr + 1 of each byte of qh group g
// rotated to bit 4 (a 32-bit rotate never carries another byte's bit there).
template <bool High>
struct k4_format {
  static constexpr int64_t record = High ? record_q5_k : record_q4_k;
  static void add_high_bits(const uint8_t* rec, int pr, int g, __m512i& lo, __m512i& hi) {
    if constexpr (High) {
      const __m512i bits = _mm512_load_si512(rec + record_q4_k + 64 * g);
      const __m512i to_lo = _mm512_set1_epi32((4 - 2 * pr) & 31), to_hi = _mm512_set1_epi32((3 - 2 * pr) & 31);
      lo = or_bit4(lo, _mm512_rolv_epi32(bits, to_lo));
      hi = or_bit4(hi, _mm512_rolv_epi32(bits, to_hi));
    }
  }
};

inline __m512 scale_u8(const uint8_t* p, __m512 d) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)))),
                       d);
}

inline __m512 scale_i8(const uint8_t* p, __m512 d) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)))),
                       d);
}

inline __m512 load_half16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// The min term of a q4_k / q5_k super-block for one token: sum over the 8
// sub-blocks j of min_j * bsum32_j (16 rows), from the record's min pairs
// and the token's bsum32 pairs (aux: its 128-byte q8_kp record).
inline __m512i k4_min_dots(const __m512i (&mins)[4], const uint8_t* aux) {
  __m512i msum = _mm512_setzero_si512();
  for (int i = 0; i < 4; ++i) msum = _mm512_dpwssd_epi32(msum, mins[i], broadcast_dword(aux + 4 * i));
  return msum;
}

inline void k4_load_mins(const uint8_t* rec, __m512i (&mins)[4]) {
  for (int i = 0; i < 4; ++i) {
    mins[i] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(rec + 192 + 32 * i)));
  }
}

}  // namespace
}  // namespace cortex::kernels
