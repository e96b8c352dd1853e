// AVX2 matmul kernels for the lattice-codebook formats (iq1_s .. iq3_s,
// kernels/quant_grids.hpp) against q8_k activations, through the k-quant
// tile. Only the kernels named at the end are exported (compiled with
// -mavx2 -mfma -mf16c).
//
// A chunk of 64 codes is decoded to their magnitudes (codebook entries
// loaded by index) and their signs as +-1 bytes, which go onto the
// activations (|xq| <= 127), so per ymm of 32 codes
//   p = maddubs(magnitude u8, sign(x) s8)    int16, |lane| <= 2 * 62 * 127
//   isum += madd(p, scale)                   odd sub-block scale 2s + 1
// and per super-block y += d * factor * dx * isum, as the scalar reference.
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_grids.hpp"
#include "kernels/x86/k_scale_lanes_avx2.hpp"
#include "kernels/x86/matmul_isa_avx2.hpp"
#include "kernels/x86/matmul_tile_body.hpp"

namespace cortex::kernels {

namespace {

using chunk = avx2_isa::chunk;

struct grid_chunk {
  chunk mag;  // |code|, u8
  chunk sgn;  // nonzero bytes with the code's sign (+-1, or the code itself)
};

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Bit e of `bits` -> byte e: -1 where set, +1 where clear.
__m256i signs_of_bits(uint32_t bits) {
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(1));
}

// The 32 sign bits of four 7-bit groups (bits 0..27 of `word`).
uint32_t signs_of_word(uint32_t word) {
  uint32_t bits = 0;
  for (int l = 0; l < 4; ++l) bits |= static_cast<uint32_t>(signs_from_7_bits(word >> (7 * l))) << (8 * l);
  return bits;
}

// 32 codes from four 8-value entries / eight 4-value entries.
__m256i entries4(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_set_epi64x(static_cast<int64_t>(grid[i3]), static_cast<int64_t>(grid[i2]),
                           static_cast<int64_t>(grid[i1]), static_cast<int64_t>(grid[i0]));
}

__m256i entries8(const uint32_t* grid, const int* i) {
  return _mm256_set_epi32(static_cast<int>(grid[i[7]]), static_cast<int>(grid[i[6]]), static_cast<int>(grid[i[5]]),
                          static_cast<int>(grid[i[4]]), static_cast<int>(grid[i[3]]), static_cast<int>(grid[i[2]]),
                          static_cast<int>(grid[i[1]]), static_cast<int>(grid[i[0]]));
}

// What every grid policy shares: the signed dot and the finish. RowState
// holds d (times the format's factor) and the scales.
template <class RowState>
struct grid_policy_base {
  static constexpr bool own_dot = true;
  using row_state = RowState;

  static __m256i dot(__m256i isum, const grid_chunk& w, const chunk& x, const chunk& s) {
    return avx2_isa::dot_chunk(isum, w.mag, {_mm256_sign_epi8(x.lo, w.sgn.lo), _mm256_sign_epi8(x.hi, w.sgn.hi)}, s);
  }

  // acc += dx * d * factor * isum
  static __m256 finish(const row_state& s, __m256i isum, __m256i, float dx, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(s.d * dx), acc);
  }
};

// One scale per 32 codes: int16 lanes j and j + 8 hold scale j.
struct per32_state {
  __m256i scales;
  float d;
  static chunk scale(const per32_state& s, int c) { return scales_of_32(s.scales, c); }
  void set_scales(const int16_t (&ls)[8]) {
    scales = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ls)));
  }
};

// One scale per 16 codes (spread_scales_of_16's layout).
struct per16_state {
  __m256i scales[2];
  float d;
  static chunk scale(const per16_state& s, int c) { return scales_of_16(s.scales, c); }
  // 2s + 1 from the nibbles of scales[0..7]: low nibble of byte j is scale
  // 2j, high nibble 2j + 1.
  void set_scales_of_nibbles(const uint8_t* sc) {
    const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i both = _mm_unpacklo_epi8(_mm_and_si128(s8, nibble), _mm_and_si128(_mm_srli_epi16(s8, 4), nibble));
    spread_scales_of_16(_mm_add_epi8(_mm_add_epi8(both, both), _mm_set1_epi8(1)), false, scales);
  }
};

template <class RowState>
struct grid_policy : grid_policy_base<RowState> {
  static chunk scale(const RowState& s, int c) { return RowState::scale(s, c); }
};

// iq2_xxs: per 32 codes 4 index bytes and a word of signs and scale.
struct iq2_xxs_policy : grid_policy<per32_state> {
  using block = block_iq2_xxs;
  static void prepare(const block& b, row_state& s) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs);
    int16_t ls[8];
    for (int j = 0; j < 8; ++j) ls[j] = static_cast<int16_t>(2 * (load_u32(q + 8 * j + 4) >> 28) + 1);
    s.set_scales(ls);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const uint8_t* q = reinterpret_cast<const uint8_t*>(b.qs) + 16 * c;
    return {{entries4(iq2xxs_grid, q[0], q[1], q[2], q[3]), entries4(iq2xxs_grid, q[8], q[9], q[10], q[11])},
            {signs_of_bits(signs_of_word(load_u32(q + 4))), signs_of_bits(signs_of_word(load_u32(q + 12)))}};
  }
};

// iq2_xs: per 8 codes a uint16 of a 9-bit index and 7 sign bits.
struct iq2_xs_policy : grid_policy<per16_state> {
  using block = block_iq2_xs;
  static void prepare(const block& b, row_state& s) {
    s.set_scales_of_nibbles(b.scales);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    const uint16_t* q = b.qs + 8 * c;
    uint32_t signs[2] = {0, 0};
    for (int k = 0; k < 8; ++k) signs[k / 4] |= static_cast<uint32_t>(signs_from_7_bits(q[k] >> 9)) << (8 * (k % 4));
    return {{entries4(iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511),
             entries4(iq2xs_grid, q[4] & 511, q[5] & 511, q[6] & 511, q[7] & 511)},
            {signs_of_bits(signs[0]), signs_of_bits(signs[1])}};
  }
};

// iq2_s: index low bytes in qs[0..31], top bit pairs in qh, sign bytes in qs[32..63].
struct iq2_s_policy : grid_policy<per16_state> {
  using block = block_iq2_s;
  static void prepare(const block& b, row_state& s) {
    s.set_scales_of_nibbles(b.scales);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    int i[8];
    for (int k = 0; k < 8; ++k) i[k] = b.qs[8 * c + k] | (((b.qh[2 * c + k / 4] >> (2 * (k % 4))) & 3) << 8);
    return {{entries4(iq2s_grid, i[0], i[1], i[2], i[3]), entries4(iq2s_grid, i[4], i[5], i[6], i[7])},
            {signs_of_bits(load_u32(b.qs + 32 + 8 * c)), signs_of_bits(load_u32(b.qs + 36 + 8 * c))}};
  }
};

// iq3_xxs: 16 index bytes (4 codes each) per chunk, words of signs and scale.
struct iq3_xxs_policy : grid_policy<per32_state> {
  using block = block_iq3_xxs;
  static void prepare(const block& b, row_state& s) {
    int16_t ls[8];
    for (int j = 0; j < 8; ++j) ls[j] = static_cast<int16_t>(2 * (load_u32(b.qs + 64 + 4 * j) >> 28) + 1);
    s.set_scales(ls);
    s.d = _cvtsh_ss(b.d) * 0.25f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    int i[16];
    for (int k = 0; k < 16; ++k) i[k] = b.qs[16 * c + k];
    const uint8_t* w = b.qs + 64 + 8 * c;
    return {{entries8(iq3xxs_grid, i), entries8(iq3xxs_grid, i + 8)},
            {signs_of_bits(signs_of_word(load_u32(w))), signs_of_bits(signs_of_word(load_u32(w + 4)))}};
  }
};

// iq3_s: 16 index bytes per chunk, their 9th bits in qh, a sign bit per code.
struct iq3_s_policy : grid_policy<per32_state> {
  using block = block_iq3_s;
  static void prepare(const block& b, row_state& s) {
    int16_t ls[8];
    for (int j = 0; j < 8; ++j) ls[j] = static_cast<int16_t>(2 * ((b.scales[j / 2] >> (4 * (j % 2))) & 0xf) + 1);
    s.set_scales(ls);
    s.d = _cvtsh_ss(b.d);
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    int i[16];
    for (int k = 0; k < 16; ++k) i[k] = b.qs[16 * c + k] | (((b.qh[2 * c + k / 8] >> (k % 8)) & 1) << 8);
    return {{entries8(iq3s_grid, i), entries8(iq3s_grid, i + 8)},
            {signs_of_bits(load_u32(b.signs + 8 * c)), signs_of_bits(load_u32(b.signs + 8 * c + 4))}};
  }
};

// iq1: grid values g in {-1, 0, 1} -> codes 8 g + 1, or 8 g - 1 where the
// group's delta is negative (bytes of `negative_delta` set to 4), by one
// byte lookup. The codes (never 0) carry their own sign.
__m256i iq1_codes(__m256i grid, __m256i negative_delta) {
  const __m256i table = _mm256_broadcastsi128_si256(_mm_setr_epi8(-7, 1, 9, 0, -9, -1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  const __m256i at = _mm256_add_epi8(_mm256_add_epi8(grid, _mm256_set1_epi8(1)), negative_delta);
  return _mm256_shuffle_epi8(table, at);
}

grid_chunk iq1_chunk(__m256i lo, __m256i hi) {
  return {{_mm256_abs_epi8(lo), _mm256_abs_epi8(hi)}, {lo, hi}};
}

// iq1_s: per 32 codes 4 index bytes and a uint16 qh (3 index top bits per
// group, the scale, the delta's sign).
struct iq1_s_policy : grid_policy<per32_state> {
  using block = block_iq1_s;
  static void prepare(const block& b, row_state& s) {
    int16_t ls[8];
    for (int j = 0; j < 8; ++j) ls[j] = static_cast<int16_t>(2 * ((b.qh[j] >> 12) & 7) + 1);
    s.set_scales(ls);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    int i[8];
    for (int k = 0; k < 8; ++k) i[k] = b.qs[8 * c + k] | (((b.qh[2 * c + k / 4] >> (3 * (k % 4))) & 7) << 8);
    const auto delta = [&](int h) { return _mm256_set1_epi8(b.qh[2 * c + h] & 0x8000 ? 4 : 0); };
    return iq1_chunk(iq1_codes(entries4(iq1s_grid, i[0], i[1], i[2], i[3]), delta(0)),
                     iq1_codes(entries4(iq1s_grid, i[4], i[5], i[6], i[7]), delta(1)));
  }
};

// iq1_m: per 8 codes an index byte and a qh nibble (3 index top bits, the
// delta's sign); 3-bit scales per 16 codes, the f16 scale in their words'
// top nibbles.
struct iq1_m_policy : grid_policy<per16_state> {
  using block = block_iq1_m;
  static void prepare(const block& b, row_state& s) {
    alignas(16) uint8_t ls[16];
    for (int ib = 0; ib < 8; ++ib) {
      const int word = b.scales[2 * (ib / 2)] | (b.scales[2 * (ib / 2) + 1] << 8);
      ls[2 * ib] = static_cast<uint8_t>(2 * ((word >> (6 * (ib % 2))) & 7) + 1);
      ls[2 * ib + 1] = static_cast<uint8_t>(2 * ((word >> (6 * (ib % 2) + 3)) & 7) + 1);
    }
    spread_scales_of_16(_mm_load_si128(reinterpret_cast<const __m128i*>(ls)), false, s.scales);
    s.d = _cvtsh_ss(iq1_m_scale(b)) * 0.125f;
  }
  static grid_chunk codes(const block& b, const row_state&, int c) {
    int i[8];
    int64_t delta[8];
    for (int k = 0; k < 8; ++k) {
      const int nibble = (b.qh[4 * c + k / 2] >> (4 * (k % 2))) & 0xf;
      i[k] = b.qs[8 * c + k] | ((nibble & 7) << 8);
      delta[k] = nibble & 8 ? 0x0404040404040404 : 0;
    }
    const __m256i delta_lo = _mm256_set_epi64x(delta[3], delta[2], delta[1], delta[0]);
    const __m256i delta_hi = _mm256_set_epi64x(delta[7], delta[6], delta[5], delta[4]);
    return iq1_chunk(iq1_codes(entries4(iq1s_grid, i[0], i[1], i[2], i[3]), delta_lo),
                     iq1_codes(entries4(iq1s_grid, i[4], i[5], i[6], i[7]), delta_hi));
  }
};

}  // namespace

// Named by the rows of kernels/quant_traits.cpp. One row per tile, as the
// k-quants (x86/matmul_k_avx2.cpp).
extern const matmul_rows_fn matmul_avx2_iq2_xxs = tiled_rows<k_tile<avx2_isa, iq2_xxs_policy>, 1, 1, 4>,
                            matmul_avx2_iq2_xs = tiled_rows<k_tile<avx2_isa, iq2_xs_policy>, 1, 1, 4>,
                            matmul_avx2_iq2_s = tiled_rows<k_tile<avx2_isa, iq2_s_policy>, 1, 1, 4>,
                            matmul_avx2_iq3_xxs = tiled_rows<k_tile<avx2_isa, iq3_xxs_policy>, 1, 1, 4>,
                            matmul_avx2_iq3_s = tiled_rows<k_tile<avx2_isa, iq3_s_policy>, 1, 1, 4>,
                            matmul_avx2_iq1_s = tiled_rows<k_tile<avx2_isa, iq1_s_policy>, 1, 1, 4>,
                            matmul_avx2_iq1_m = tiled_rows<k_tile<avx2_isa, iq1_m_policy>, 1, 1, 4>;

}  // namespace cortex::kernels
