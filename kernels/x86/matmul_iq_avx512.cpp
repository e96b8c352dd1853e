// AVX-512 VNNI matmul kernels for the lattice-codebook formats (iq1_s ..
// iq3_s, kernels/quant_grids.hpp) against q8_k activations, through the
// k-quant tile. Only the kernels named at the end are exported.
//
// A chunk of 64 codes is decoded to their magnitudes (grid values, one
// gather of 8 or 16 codebook entries) and a 64-bit mask of the negative
// ones; the sign goes onto the activations (|xq| <= 127, so negating is
// exact), so per chunk
//   dot = vpdpbusd(magnitude u8, +-x s8)    |lane| <= 4 * 62 * 127 < 2^15
//   isum = vpdpwssd(isum, dot, scale)        odd sub-block scale 2s + 1
// and per super-block y += d * factor * dx * isum, as the scalar reference.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_grids.hpp"
#include "kernels/x86/k_scale_lanes_avx512.hpp"
#include "kernels/x86/matmul_isa_avx512.hpp"
#include "kernels/x86/matmul_tile_body.hpp"

namespace cortex::kernels {

namespace {

struct grid_chunk {
  __m512i mag;     // |code| of the 64 elements, u8
  __mmask64 neg;   // bit e: code e < 0
};

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The sign bits of 8 groups whose 7 stored bits are bytes 0..7 of `groups`:
// each byte's eighth bit is the parity of its seven (signs_from_7_bits).
uint64_t with_parity_bits(uint64_t groups) {
  uint64_t p = groups ^ (groups >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return groups | ((p & 0x0101010101010101ull) << 7);
}

// The same from two words of four 7-bit groups each (bits 0..27), as
// iq2_xxs / iq3_xxs store them per 32 elements.
uint64_t signs_of_words(uint32_t w0, uint32_t w1) {
  const uint64_t packed = (w0 & 0x0fffffffu) | (static_cast<uint64_t>(w1 & 0x0fffffffu) << 28);
  return with_parity_bits(_pdep_u64(packed, 0x7f7f7f7f7f7f7f7full));
}

// The parts every grid policy shares: the row state (int32 scale lanes and
// d * factor), the signed dot and the finish.
struct grid_policy_base {
  static constexpr bool own_dot = true;

  struct row_state {
    __m512i scales;  // lane j: scale 2s + 1 of sub-block j (of 32 or 16 codes)
    float d;         // d * factor
  };

  static __m512i dot(__m512i isum, const grid_chunk& w, __m512i x, __m512i s) {
    const __m512i xs = _mm512_mask_sub_epi8(x, w.neg, _mm512_setzero_si512(), x);
    return _mm512_dpwssd_epi32(isum, _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.mag, xs), s);
  }

  // acc += dx * d * factor * isum
  static __m512 finish(const row_state& s, __m512i isum, __m256i, float dx, __m512 acc) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(s.d * dx), acc);
  }
};

// Scale vectors: `per32` holds scales 0..7 (one per 32 codes), else 0..15.
struct per32_scales {
  static __m512i scale(const grid_policy_base::row_state& s, int c) {
    return _mm512_permutexvar_epi32(chunk_index_k4(c), s.scales);
  }
};
struct per16_scales {
  static __m512i scale(const grid_policy_base::row_state& s, int c) {
    return _mm512_permutexvar_epi32(chunk_index_q6(c), s.scales);
  }
};

// 2s + 1 for 4-bit s: the low nibbles of scales[0..7] as scales 2j, the high
// ones as 2j + 1 (iq2_xs, iq2_s: per 16 codes).
__m512i odd_scales_of_nibbles(const uint8_t* scales) {
  const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i both = _mm_unpacklo_epi8(_mm_and_si128(s8, nibble), _mm_and_si128(_mm_srli_epi16(s8, 4), nibble));
  const __m512i s = _mm512_cvtepu8_epi32(both);
  return _mm512_add_epi32(_mm512_add_epi32(s, s), _mm512_set1_epi32(1));
}

// Scales of iq2_xxs / iq3_xxs: the top 4 bits of the word at words + 8 j
// (iq2_xxs, stride 8) or + 4 j (iq3_xxs, stride 4), j = 0..7.
__m512i odd_scales_of_words(const uint8_t* words, int stride) {
  alignas(32) int32_t s[8];
  for (int j = 0; j < 8; ++j) s[j] = static_cast<int32_t>(2 * (load_u32(words + stride * j) >> 28) + 1);
  return _mm512_zextsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(s)));
}

// iq2_xxs: per 32 codes 4 index bytes and a word of signs and scale.
struct iq2_xxs_policy : grid_policy_base, per32_scales {
  using block = block_iq2_xxs;
  static void prepare(const block& b, row_state& s) {
    s.scales = odd_scales_of_words(reinterpret_cast<const uint8_t*>(b.qs) + 4, 8);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const uint8_t* q = reinterpret_cast<const uint8_t*>(b.qs) + 16 * c;
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i pick = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i index = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(raw, pick));
    return {_mm512_i32gather_epi64(index, iq2xxs_grid, 8), signs_of_words(load_u32(q + 4), load_u32(q + 12))};
  }
};

// iq2_xs: per 8 codes a uint16 of a 9-bit index and 7 sign bits.
struct iq2_xs_policy : grid_policy_base, per16_scales {
  using block = block_iq2_xs;
  static void prepare(const block& b, row_state& s) {
    s.scales = odd_scales_of_nibbles(b.scales);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 8 * c));
    const __m256i index = _mm256_and_si256(_mm256_cvtepu16_epi32(q), _mm256_set1_epi32(511));
    const __m128i sign7 = _mm_srli_epi16(q, 9);
    const uint64_t groups = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(sign7, sign7)));
    return {_mm512_i32gather_epi64(index, iq2xs_grid, 8), with_parity_bits(groups)};
  }
};

// iq2_s: index low bytes in qs[0..31], top bit pairs in qh, sign bytes in qs[32..63].
struct iq2_s_policy : grid_policy_base, per16_scales {
  using block = block_iq2_s;
  static void prepare(const block& b, row_state& s) {
    s.scales = odd_scales_of_nibbles(b.scales);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * c)));
    const int high = b.qh[2 * c] | (b.qh[2 * c + 1] << 8);  // index k: bits 2k, 2k + 1
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(high), shifts), _mm256_set1_epi32(3));
    const __m256i index = _mm256_or_si256(low, _mm256_slli_epi32(top, 8));
    return {_mm512_i32gather_epi64(index, iq2s_grid, 8), load_u64(b.qs + 32 + 8 * c)};
  }
};

// iq3_xxs: 16 index bytes (4 codes each) per chunk, words of signs and scale.
struct iq3_xxs_policy : grid_policy_base, per32_scales {
  using block = block_iq3_xxs;
  static void prepare(const block& b, row_state& s) {
    s.scales = odd_scales_of_words(b.qs + 64, 4);
    s.d = _cvtsh_ss(b.d) * 0.25f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const __m512i index = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * c)));
    const uint8_t* w = b.qs + 64 + 8 * c;
    return {_mm512_i32gather_epi32(index, iq3xxs_grid, 4), signs_of_words(load_u32(w), load_u32(w + 4))};
  }
};

// iq3_s: 16 index bytes per chunk, their 9th bits in qh (bit k: index k),
// a sign bit per code.
struct iq3_s_policy : grid_policy_base, per32_scales {
  using block = block_iq3_s;
  static void prepare(const block& b, row_state& s) {
    const __m128i s8 = _mm_cvtsi32_si128(static_cast<int>(load_u32(b.scales)));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i both = _mm_unpacklo_epi8(_mm_and_si128(s8, nibble), _mm_and_si128(_mm_srli_epi16(s8, 4), nibble));
    const __m512i sc = _mm512_cvtepu8_epi32(both);
    s.scales = _mm512_add_epi32(_mm512_add_epi32(sc, sc), _mm512_set1_epi32(1));
    s.d = _cvtsh_ss(b.d);
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    __m512i index = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * c)));
    const auto ninth = static_cast<__mmask16>(b.qh[2 * c] | (b.qh[2 * c + 1] << 8));
    index = _mm512_mask_or_epi32(index, ninth, index, _mm512_set1_epi32(256));
    return {_mm512_i32gather_epi32(index, iq3s_grid, 4), load_u64(b.signs + 8 * c)};
  }
};

// iq1: grid values g in {-1, 0, 1} -> codes 8 g + 1, or 8 g - 1 where the
// group's delta is negative (bit e of `negative_delta`), by one byte lookup.
grid_chunk iq1_codes(__m512i grid, uint64_t negative_delta) {
  const __m512i table = _mm512_broadcast_i32x4(_mm_setr_epi8(-7, 1, 9, 0, -9, -1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  __m512i at = _mm512_add_epi8(grid, _mm512_set1_epi8(1));
  at = _mm512_mask_add_epi8(at, negative_delta, at, _mm512_set1_epi8(4));
  const __m512i code = _mm512_shuffle_epi8(table, at);
  return {_mm512_abs_epi8(code), _mm512_movepi8_mask(code)};
}

// iq1_s: per 32 codes 4 index bytes and a uint16 qh (3 index top bits per
// group, the scale, the delta's sign).
struct iq1_s_policy : grid_policy_base, per32_scales {
  using block = block_iq1_s;
  static void prepare(const block& b, row_state& s) {
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
    const __m512i sc = _mm512_and_si512(_mm512_srli_epi32(_mm512_cvtepu16_epi32(_mm256_zextsi128_si256(qh)), 12),
                                        _mm512_set1_epi32(7));
    s.scales = _mm512_add_epi32(_mm512_add_epi32(sc, sc), _mm512_set1_epi32(1));
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const int h0 = b.qh[2 * c], h1 = b.qh[2 * c + 1];
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * c)));
    const __m256i top = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_setr_epi32(h0, h0, h0, h0, h1, h1, h1, h1), _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9)),
        _mm256_set1_epi32(7));
    const __m256i index = _mm256_or_si256(low, _mm256_slli_epi32(top, 8));
    const uint64_t negative_delta = (h0 & 0x8000 ? 0xffffffffull : 0) | (h1 & 0x8000 ? 0xffffffff00000000ull : 0);
    return iq1_codes(_mm512_i32gather_epi64(index, iq1s_grid, 8), negative_delta);
  }
};

// iq1_m: per 8 codes an index byte and a qh nibble (3 index top bits, the
// delta's sign); 3-bit scales per 16 codes, the f16 scale in their words'
// top nibbles.
struct iq1_m_policy : grid_policy_base, per16_scales {
  using block = block_iq1_m;
  static void prepare(const block& b, row_state& s) {
    // Scales 2ib, 2ib + 1 at bits 6 (ib % 2) and 6 (ib % 2) + 3 of word ib / 2.
    alignas(64) int32_t sc[16];
    for (int ib = 0; ib < 8; ++ib) {
      const int word = b.scales[2 * (ib / 2)] | (b.scales[2 * (ib / 2) + 1] << 8);
      sc[2 * ib] = 2 * ((word >> (6 * (ib % 2))) & 7) + 1;
      sc[2 * ib + 1] = 2 * ((word >> (6 * (ib % 2) + 3)) & 7) + 1;
    }
    s.scales = _mm512_load_si512(sc);
    s.d = _cvtsh_ss(iq1_m_scale(b)) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const uint32_t qh = load_u32(b.qh + 4 * c);  // group k: nibble k
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * c)));
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i top =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qh)), shifts), _mm256_set1_epi32(7));
    const __m256i index = _mm256_or_si256(low, _mm256_slli_epi32(top, 8));
    const uint64_t negative_delta = _pdep_u64(_pext_u32(qh, 0x88888888u), 0x0101010101010101ull) * 0xff;
    return iq1_codes(_mm512_i32gather_epi64(index, iq1s_grid, 8), negative_delta);
  }
};

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_avx512_iq2_xxs = tiled_rows<k_tile<avx512_isa, iq2_xxs_policy>, 4, 2, 4>,
                            matmul_avx512_iq2_xs = tiled_rows<k_tile<avx512_isa, iq2_xs_policy>, 4, 2, 4>,
                            matmul_avx512_iq2_s = tiled_rows<k_tile<avx512_isa, iq2_s_policy>, 4, 2, 4>,
                            matmul_avx512_iq3_xxs = tiled_rows<k_tile<avx512_isa, iq3_xxs_policy>, 4, 2, 4>,
                            matmul_avx512_iq3_s = tiled_rows<k_tile<avx512_isa, iq3_s_policy>, 4, 2, 4>,
                            matmul_avx512_iq1_s = tiled_rows<k_tile<avx512_isa, iq1_s_policy>, 4, 2, 4>,
                            matmul_avx512_iq1_m = tiled_rows<k_tile<avx512_isa, iq1_m_policy>, 4, 2, 4>;

}  // namespace cortex::kernels
