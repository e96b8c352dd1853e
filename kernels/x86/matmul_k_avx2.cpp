// AVX2 matmul kernels for the k-quants (q2_k .. q6_k) and iq4_xs against
// q8_k activations, the same integer math as kernels/matmul_scalar.cpp. Only the
// kernels named at the end are exported (compiled with -mavx2 -mfma -mf16c).
//
// A super-block (256) is four chunks of 64 codes, two ymm of 32 codes each.
// Codes are unsigned (q6_k's -32 and q3_k's -4 come back through bsums), so
// per ymm
//   p = maddubs(codes u8, x s8)            16 int16, |lane| <= 2 * 63 * 128
//   isum += madd(p, scale)                 8 int32, scale as int16 per lane
// and per super-block y += d * dx * isum (- dmin * dx * sum(min * bsum)),
// mins per 32 codes (q4_k, q5_k) or per 16 (q2_k).
// The float sums are in a different order than the reference: results agree
// within float rounding, not bit for bit.
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/x86/k_scale_lanes_avx2.hpp"
#include "kernels/x86/matmul_isa_avx2.hpp"
#include "kernels/x86/matmul_tile_body.hpp"
#include "kernels/x86/q3_k_scales.hpp"

namespace cortex::kernels {

namespace {

__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// q4_k / q5_k (High = q5_k): 6-bit scales and mins, codes 0..15 (0..31).
// Chunk c holds sub-blocks 2c (low nibbles of qs[32c..]) and 2c+1 (high).
using chunk = avx2_isa::chunk;

template <class Block, bool High>
struct k4_policy {
  using block = Block;

  struct row_state {
    __m256i scales;  // int16 lane j and j + 8: scale j (j < 8)
    __m256i mins;    // int16 lane 2j, 2j+1: min j (matches bsums 2j, 2j+1)
    float d, dmin;
  };

  // The 12 packed bytes, decoded as in quant_k_scales.hpp four bytes at a time.
  static void prepare(const block& b, row_state& s) {
    uint32_t a, m, c;
    std::memcpy(&a, b.scales, 4);
    std::memcpy(&m, b.scales + 4, 4);
    std::memcpy(&c, b.scales + 8, 4);
    const uint32_t sc_lo = a & 0x3f3f3f3fu, mn_lo = m & 0x3f3f3f3fu;
    const uint32_t sc_hi = (c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4);
    const uint32_t mn_hi = ((c >> 4) & 0x0f0f0f0fu) | (((m >> 6) & 0x03030303u) << 4);
    const __m128i sc8 = _mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo));
    const __m128i mn8 = _mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo));
    s.scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc8));
    s.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
    s.d = _cvtsh_ss(b.d);
    s.dmin = _cvtsh_ss(b.dmin);
  }

  // Codes of chunk c: lo sub-block 2c, hi sub-block 2c + 1.
  static chunk codes(const block& b, const row_state&, int c) {
    const __m256i v = load32(b.qs + 32 * c);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    chunk out{_mm256_and_si256(v, nibble), _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)};
    if constexpr (High) {
      // Bit 2c (2c + 1) of qh[i] is bit 4 of code i of sub-block 2c (2c + 1).
      const __m256i qh = _mm256_srli_epi16(load32(b.qh), 2 * c);
      const __m256i bit4 = _mm256_set1_epi8(0x10);
      out.lo = _mm256_or_si256(out.lo, _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4));
      out.hi = _mm256_or_si256(out.hi, _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4));
    }
    return out;
  }

  static chunk scale(const row_state& s, int c) { return scales_of_32(s.scales, c); }

  // acc += dx * (d * isum - dmin * sum_j min_j * (bsum_2j + bsum_2j+1))
  static __m256 finish(const row_state& s, __m256i isum, __m256i bsums, float dx, __m256 acc) {
    const __m256i mins = _mm256_madd_epi16(s.mins, bsums);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(s.d * dx), acc);
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(s.dmin * dx), acc);
  }
};

// The 2-bit codes of chunk c of a q2_k / q3_k super-block: element 128h +
// 32p + l is bit pair p of qs[32h + l], so chunk c (h = c / 2) is bit pairs
// 2(c % 2) (lo) and 2(c % 2) + 1 (hi) of the same 32 bytes.
chunk low2_codes(const uint8_t* qs, int c) {
  const __m256i v = load32(qs + 32 * (c >> 1));
  const int shift = 4 * (c & 1);
  const __m256i three = _mm256_set1_epi8(3);
  return {_mm256_and_si256(_mm256_srli_epi16(v, shift), three),
          _mm256_and_si256(_mm256_srli_epi16(v, shift + 2), three)};
}

// q2_k: 16 sub-blocks of 16, 4-bit scales (low nibbles) and mins (high
// nibbles), codes 0..3.
struct q2_policy {
  using block = block_q2_k;

  struct row_state {
    __m256i scales[2];  // int16, both 128-bit halves: scales 8h .. 8h + 7
    __m256i mins;       // int16 lane j: min j (matches bsums j)
    float d, dmin;
  };

  static void prepare(const block& b, row_state& s) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    spread_scales_of_16(_mm_and_si128(sc8, nibble), false, s.scales);
    s.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), nibble));
    s.d = _cvtsh_ss(b.d);
    s.dmin = _cvtsh_ss(b.dmin);
  }

  static chunk codes(const block& b, const row_state&, int c) { return low2_codes(b.qs, c); }
  static chunk scale(const row_state& s, int c) { return scales_of_16(s.scales, c); }

  // acc += dx * (d * isum - dmin * sum_j min_j * bsum_j)
  static __m256 finish(const row_state& s, __m256i isum, __m256i bsums, float dx, __m256 acc) {
    const __m256i mins = _mm256_madd_epi16(s.mins, bsums);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(s.d * dx), acc);
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(s.dmin * dx), acc);
  }
};

// q3_k: 16 sub-blocks of 16 with signed 6-bit scales; codes 0..7 (the 2-bit
// code plus 4 * its hmask bit) with zero point 4: llama.cpp's "subtract 4
// where the bit is clear", brought back through bsums.
struct q3_policy {
  using block = block_q3_k;

  struct row_state {
    __m256i scales[2];  // int16, both 128-bit halves: scales 8h .. 8h + 7
    __m256i scales_m4;  // int16 lane j: -4 * scale j
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    const __m256i sc16 = spread_scales_of_16(q3_k_scales(b.scales), true, s.scales);
    s.scales_m4 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 2));
    s.d = _cvtsh_ss(b.d);
  }

  // Element 128h + 32p + l has its third bit at bit 4h + p of hmask[l].
  static chunk codes(const block& b, const row_state&, int c) {
    chunk q = low2_codes(b.qs, c);
    const __m256i hm = load32(b.hmask);
    const int bit = 2 * c;  // 4h + 2(c % 2)
    const __m256i four = _mm256_set1_epi8(4);
    q.lo = _mm256_or_si256(q.lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, bit), 2), four));
    q.hi = _mm256_or_si256(q.hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, bit + 1), 2), four));
    return q;
  }

  static chunk scale(const row_state& s, int c) { return scales_of_16(s.scales, c); }

  // acc += dx * d * (isum - 4 * sum_j scale_j * bsum_j)
  static __m256 finish(const row_state& s, __m256i isum, __m256i bsums, float dx, __m256 acc) {
    const __m256i total = _mm256_add_epi32(isum, _mm256_madd_epi16(s.scales_m4, bsums));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_set1_ps(s.d * dx), acc);
  }
};

// q6_k: int8 scale per 16 codes, codes 0..63 with zero point 32. Chunk c is
// half h = c / 2, quarters 2(c % 2) and 2(c % 2) + 1 of that half; quarter q
// (32 codes, sub-blocks 8h + 2q and 8h + 2q + 1) takes its low 4 bits from
// ql[64h + 32(q % 2) ..] (low nibbles for q < 2) and bits 2q, 2q+1 of qh[32h ..].
struct q6_policy {
  using block = block_q6_k;

  struct row_state {
    __m256i scales[2];   // int16, both 128-bit halves: scales 8h .. 8h + 7
    __m256i scales_m32;  // int16 lane j: -32 * scale j
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    const __m256i sc16 =
        spread_scales_of_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), true, s.scales);
    s.scales_m32 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
    s.d = _cvtsh_ss(b.d);
  }

  static chunk codes(const block& b, const row_state&, int c) {
    const int h = c >> 1;
    const __m256i l0 = load32(b.ql + 64 * h), l1 = load32(b.ql + 64 * h + 32);
    const __m256i qh = load32(b.qh + 32 * h);
    const __m256i nibble = _mm256_set1_epi8(0x0f), top = _mm256_set1_epi8(0x30);
    if ((c & 1) == 0) {
      return {_mm256_or_si256(_mm256_and_si256(l0, nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 4), top)),
              _mm256_or_si256(_mm256_and_si256(l1, nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 2), top))};
    }
    return {_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), nibble), _mm256_and_si256(qh, top)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), nibble),
                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), top))};
  }

  static chunk scale(const row_state& s, int c) { return scales_of_16(s.scales, c); }

  // acc += dx * d * (isum - 32 * sum_j scale_j * bsum_j)
  static __m256 finish(const row_state& s, __m256i isum, __m256i bsums, float dx, __m256 acc) {
    const __m256i total = _mm256_add_epi32(isum, _mm256_madd_epi16(s.scales_m32, bsums));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_set1_ps(s.d * dx), acc);
  }
};

// iq4_xs: 8 sub-blocks of 32 with signed 6-bit scales, codes looked up in
// kvalues_iq4nl. The values (-127..113) cannot be offset to uint8 for
// maddubs without saturating its int16 sums, so they stay int8 and take the
// sign trick (own dot). Chunk c: sub-block 2c (lo) and 2c + 1 (hi).
struct iq4_xs_policy {
  using block = block_iq4_xs;
  static constexpr bool own_dot = true;

  struct row_state {
    __m256i scales;  // int16 lane j and j + 8: scale j - 32 (j < 8)
    float d;
  };

  static void prepare(const block& b, row_state& s) {
    alignas(16) int16_t sc[8];
    for (int j = 0; j < 8; ++j) sc[j] = static_cast<int16_t>(iq4_xs_scale(b, j));
    s.scales = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
    s.d = _cvtsh_ss(b.d);
  }

  // Sub-block s's codes are qs[16s ..] (element l low nibble, l + 16 high).
  static chunk codes(const block& b, const row_state&, int c) {
    const __m256i v = load32(b.qs + 32 * c);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kvalues_iq4nl)));
    const __m256i low = _mm256_shuffle_epi8(t, _mm256_and_si256(v, nibble));
    const __m256i high = _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    return {_mm256_permute2x128_si256(low, high, 0x20), _mm256_permute2x128_si256(low, high, 0x31)};
  }

  static chunk scale(const row_state& s, int c) { return scales_of_32(s.scales, c); }

  // maddubs on |code| and x with the code's sign: pairs <= 2 * 127 * 127.
  static __m256i dot(__m256i isum, const chunk& w, const chunk& x, const chunk& s) {
    return avx2_isa::dot_chunk(isum, {_mm256_sign_epi8(w.lo, w.lo), _mm256_sign_epi8(w.hi, w.hi)},
                               {_mm256_sign_epi8(x.lo, w.lo), _mm256_sign_epi8(x.hi, w.hi)}, s);
  }

  // acc += dx * d * isum
  static __m256 finish(const row_state& s, __m256i isum, __m256i, float dx, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(s.d * dx), acc);
  }
};

}  // namespace

// Named by the rows of kernels/quant_traits.cpp. One row per tile: with 16
// ymm registers, two rows' codes and scales plus their sums spill, and
// measured slower at both 1 and 16 tokens.
extern const matmul_rows_fn matmul_avx2_q2_k = tiled_rows<k_tile<avx2_isa, q2_policy>, 1, 1, 4>,
                            matmul_avx2_q3_k = tiled_rows<k_tile<avx2_isa, q3_policy>, 1, 1, 4>,
                            matmul_avx2_q4_k = tiled_rows<k_tile<avx2_isa, k4_policy<block_q4_k, false>>, 1, 1, 4>,
                            matmul_avx2_q5_k = tiled_rows<k_tile<avx2_isa, k4_policy<block_q5_k, true>>, 1, 1, 4>,
                            matmul_avx2_q6_k = tiled_rows<k_tile<avx2_isa, q6_policy>, 1, 1, 4>,
                            matmul_avx2_iq4_xs = tiled_rows<k_tile<avx2_isa, iq4_xs_policy>, 1, 1, 4>;

}  // namespace cortex::kernels
