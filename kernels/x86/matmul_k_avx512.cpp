// AVX-512 VNNI matmul kernels for the k-quants (q2_k .. q6_k) and iq4_xs
// against q8_k activations. Only the kernels named at the end are exported.
//
// A super-block (256) is four chunks of 64 codes, one zmm each. Codes are
// unsigned (q6_k's -32 and q3_k's -4 come back through bsums), so per chunk
//   dot = vpdpbusd(codes u8, x s8)          16 lanes, |lane| < 2^15
//   isum = vpdpwssd(isum, dot, scale)        scale in the low 16 bits of a lane
// and per super-block y += d * dx * isum (- dmin * dx * sum(min * bsum)).
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/x86/k_scale_lanes_avx512.hpp"
#include "kernels/x86/matmul_isa_avx512.hpp"
#include "kernels/x86/matmul_tile_body.hpp"
#include "kernels/x86/q3_k_scales.hpp"

namespace cortex::kernels {

namespace {

// q4_k / q5_k (High = q5_k): 6-bit scales and mins, codes 0..15 (0..31).
template <class Block, bool High>
struct k4_policy {
  using block = Block;

  struct row_state {
    __m512i scales;   // lane j < 8: scale j (zero-extended)
    __m256i mins;     // int16 lane 2j, 2j+1: min j
    __m512i high;     // q5_k: qh in both halves
    float d, dmin;
  };

  static void prepare(const block& b, row_state& s) {
    const uint8_t* q = b.scales;
    alignas(16) uint8_t sc[16] = {}, mn[16] = {};
    for (int j = 0; j < 4; ++j) {
      sc[j] = q[j] & 63;
      mn[j] = q[j + 4] & 63;
      sc[j + 4] = static_cast<uint8_t>((q[j + 8] & 0xf) | ((q[j] >> 6) << 4));
      mn[j + 4] = static_cast<uint8_t>((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
    }
    s.scales = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
    const __m128i m = _mm_load_si128(reinterpret_cast<const __m128i*>(mn));
    s.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m, m));
    if constexpr (High) s.high = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
    s.d = _cvtsh_ss(b.d);
    s.dmin = _cvtsh_ss(b.dmin);
  }

  static __m512i codes(const block& b, const row_state& s, int c) {
    const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c)));
    __m512i q = _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0)), _mm512_set1_epi8(0x0f));
    if constexpr (High) {
      const __mmask64 bit = _mm512_test_epi8_mask(
          s.high, _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * c))),
                                     _mm256_set1_epi8(static_cast<char>(2 << (2 * c))), 1));
      q = _mm512_mask_add_epi8(q, bit, q, _mm512_set1_epi8(16));
    }
    return q;
  }

  static __m512i scale(const row_state& s, int c) { return _mm512_permutexvar_epi32(chunk_index_k4(c), s.scales); }

  // acc += dx * (d * isum - dmin * sum_j min_j * (bsum_2j + bsum_2j+1))
  static __m512 finish(const row_state& s, __m512i isum, __m256i bsums, float dx, __m512 acc) {
    const __m256i mins = _mm256_madd_epi16(s.mins, bsums);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(s.d * dx), acc);
    return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(mins)), _mm512_set1_ps(s.dmin * dx), acc);
  }
};

// The 2-bit codes of chunk c of a q2_k / q3_k super-block: bit pairs
// 2(c % 2) (low half) and 2(c % 2) + 1 (high half) of qs[32h ..], h = c / 2.
__m512i low2_codes(const uint8_t* qs, int c) {
  const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (c >> 1))));
  const int shift = 4 * (c & 1);
  return _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(shift + 2, shift + 2, shift + 2, shift + 2, shift,
                                                                 shift, shift, shift)),
                          _mm512_set1_epi8(3));
}

// q2_k: 16 sub-blocks of 16, 4-bit scales (low nibbles) and mins (high
// nibbles), codes 0..3.
struct q2_policy {
  using block = block_q2_k;

  struct row_state {
    __m512i scales;  // lane j: scale j (zero-extended)
    __m256i mins;    // int16 lane j: min j (matches bsums j)
    float d, dmin;
  };

  static void prepare(const block& b, row_state& s) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    s.scales = _mm512_cvtepu8_epi32(_mm_and_si128(sc8, nibble));
    s.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), nibble));
    s.d = _cvtsh_ss(b.d);
    s.dmin = _cvtsh_ss(b.dmin);
  }

  static __m512i codes(const block& b, const row_state&, int c) { return low2_codes(b.qs, c); }
  static __m512i scale(const row_state& s, int c) { return _mm512_permutexvar_epi32(chunk_index_q6(c), s.scales); }

  // acc += dx * (d * isum - dmin * sum_j min_j * bsum_j)
  static __m512 finish(const row_state& s, __m512i isum, __m256i bsums, float dx, __m512 acc) {
    const __m256i mins = _mm256_madd_epi16(s.mins, bsums);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(s.d * dx), acc);
    return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(mins)), _mm512_set1_ps(s.dmin * dx), acc);
  }
};

// q3_k: 16 sub-blocks of 16 with signed 6-bit scales; codes 0..7 (the 2-bit
// code plus 4 * its hmask bit) with zero point 4, brought back through bsums.
struct q3_policy {
  using block = block_q3_k;

  struct row_state {
    __m512i scales;     // lane j: scale j in the low 16 bits (sign in bit 15)
    __m256i scales_m4;  // int16 lane j: -4 * scale j
    __m512i hmask;      // hmask in both halves
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(q3_k_scales(b.scales));
    s.scales = _mm512_cvtepu16_epi32(sc16);
    s.scales_m4 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 2));
    s.hmask = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask)));
    s.d = _cvtsh_ss(b.d);
  }

  // Element 128h + 32p + l has its third bit at bit 4h + p of hmask[l]:
  // bits 2c (low half) and 2c + 1 (high half) for chunk c.
  static __m512i codes(const block& b, const row_state& s, int c) {
    const __m512i q = low2_codes(b.qs, c);
    const __mmask64 high = _mm512_test_epi8_mask(
        s.hmask, _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * c))),
                                    _mm256_set1_epi8(static_cast<char>(2 << (2 * c))), 1));
    return _mm512_mask_add_epi8(q, high, q, _mm512_set1_epi8(4));
  }

  static __m512i scale(const row_state& s, int c) { return _mm512_permutexvar_epi32(chunk_index_q6(c), s.scales); }

  // acc += dx * d * (isum - 4 * sum_j scale_j * bsum_j)
  static __m512 finish(const row_state& s, __m512i isum, __m256i bsums, float dx, __m512 acc) {
    const __m256i zero_point = _mm256_madd_epi16(s.scales_m4, bsums);
    const __m512i total = _mm512_add_epi32(isum, _mm512_zextsi256_si512(zero_point));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(s.d * dx), acc);
  }
};

// q6_k: int8 scale per 16 codes, codes 0..63 with zero point 32.
struct q6_policy {
  using block = block_q6_k;

  struct row_state {
    __m512i scales;      // lane j: scale j, low 16 bits (sign in bit 15)
    __m256i scales_m32;  // int16 lane j: -32 * scale j
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    s.scales = _mm512_cvtepu16_epi32(sc16);
    s.scales_m32 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
    s.d = _cvtsh_ss(b.d);
  }

  static __m512i codes(const block& b, const row_state&, int c) {
    const int half = c >> 1;
    const __m512i l = _mm512_loadu_si512(b.ql + 64 * half);
    const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * half)));
    const __m512i lo_mask = _mm512_set1_epi8(0x0f), hi_mask = _mm512_set1_epi8(0x30);
    if ((c & 1) == 0) {
      const __m512i hb = _mm512_sllv_epi64(h, _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4));
      return _mm512_or_si512(_mm512_and_si512(l, lo_mask), _mm512_and_si512(hb, hi_mask));
    }
    const __m512i hb = _mm512_srlv_epi64(h, _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0));
    return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi64(l, 4), lo_mask), _mm512_and_si512(hb, hi_mask));
  }

  static __m512i scale(const row_state& s, int c) { return _mm512_permutexvar_epi32(chunk_index_q6(c), s.scales); }

  // acc += dx * d * (isum - 32 * sum_j scale_j * bsum_j)
  static __m512 finish(const row_state& s, __m512i isum, __m256i bsums, float dx, __m512 acc) {
    const __m256i zero_point = _mm256_madd_epi16(s.scales_m32, bsums);
    const __m512i total = _mm512_add_epi32(isum, _mm512_zextsi256_si512(zero_point));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(s.d * dx), acc);
  }
};

// iq4_xs: 8 sub-blocks of 32 with signed 6-bit scales, codes looked up in
// kvalues_iq4nl offset by 128 (zero point 128, brought back through bsums).
// vpdpbusd's 4-product sums of such codes reach 4 * 241 * 127 > 2^15, too
// wide for vpdpwssd's 16-bit halves: the own dot multiplies them in 32 bits.
struct iq4_xs_policy {
  using block = block_iq4_xs;
  static constexpr bool own_dot = true;

  struct row_state {
    __m512i scales;       // lane j < 8: scale j - 32 (int32)
    __m256i scales_m128;  // int16 lane 2j, 2j+1: -128 * (scale j - 32)
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    alignas(16) int16_t sc[8];
    alignas(32) int16_t m128[16];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<int16_t>(iq4_xs_scale(b, j));
      m128[2 * j] = m128[2 * j + 1] = static_cast<int16_t>(-128 * sc[j]);
    }
    s.scales = _mm512_cvtepi16_epi32(_mm256_zextsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))));
    s.scales_m128 = _mm256_load_si256(reinterpret_cast<const __m256i*>(m128));
    s.d = _cvtsh_ss(b.d);
  }

  // Chunk c = sub-blocks 2c, 2c + 1 = qs[32c .. 32c + 31], each 16 bytes of
  // low (elements 0..15) and high (16..31) nibbles.
  static __m512i codes(const block& b, const row_state&, int c) {
    const auto* p = reinterpret_cast<const __m128i*>(b.qs + 32 * c);
    const __m512i v = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128(p))),
                                         _mm256_broadcastsi128_si256(_mm_loadu_si128(p + 1)), 1);
    const __m512i q =
        _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0f));
    const __m512i t = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kvalues_iq4nl)));
    return _mm512_shuffle_epi8(_mm512_xor_si512(t, _mm512_set1_epi8(static_cast<char>(0x80))), q);
  }

  static __m512i scale(const row_state& s, int c) { return _mm512_permutexvar_epi32(chunk_index_k4(c), s.scales); }

  static __m512i dot(__m512i isum, __m512i w, __m512i x, __m512i s) {
    return _mm512_add_epi32(isum, _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x), s));
  }

  // acc += dx * d * (isum - 128 * sum_j scale_j * (bsum_2j + bsum_2j+1))
  static __m512 finish(const row_state& s, __m512i isum, __m256i bsums, float dx, __m512 acc) {
    const __m256i zero_point = _mm256_madd_epi16(s.scales_m128, bsums);
    const __m512i total = _mm512_add_epi32(isum, _mm512_zextsi256_si512(zero_point));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(s.d * dx), acc);
  }
};

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_avx512_q2_k = tiled_rows<k_tile<avx512_isa, q2_policy>, 4, 2, 4>,
                            matmul_avx512_q3_k = tiled_rows<k_tile<avx512_isa, q3_policy>, 4, 2, 4>,
                            matmul_avx512_q4_k = tiled_rows<k_tile<avx512_isa, k4_policy<block_q4_k, false>>, 4, 2, 4>,
                            matmul_avx512_q5_k = tiled_rows<k_tile<avx512_isa, k4_policy<block_q5_k, true>>, 4, 2, 4>,
                            matmul_avx512_q6_k = tiled_rows<k_tile<avx512_isa, q6_policy>, 4, 2, 4>,
                            matmul_avx512_iq4_xs = tiled_rows<k_tile<avx512_isa, iq4_xs_policy>, 4, 2, 4>;

}  // namespace cortex::kernels
