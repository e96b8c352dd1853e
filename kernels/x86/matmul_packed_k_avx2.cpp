// AVX2 kernels for packed q4_k / q6_k weights (layout in
// kernels/matmul_kernels.hpp) against q8_kp activations. Only the
// kernels named at the end are exported.
//
// As for packed q4_0 (matmul_packed_avx2.cpp) the unit of work is a half
// panel: 8 rows, row lane0 + r in 32-bit lane r of a ymm half of each 64-byte
// group. Byte dots are maddubs (u8 codes x s8 activations -> adjacent pairs
// summed to s16, saturating), a few of them added in s16, then one madd per
// sub-block with the sub-block's scale, duplicated into both s16 halves of
// the row's lane, so the scale multiply is free and the sub-block sums
// accumulate exactly in int32. Per super-block, row and token:
//   q4_k: y += dx * (d * sum_j sc_j dot_j - dmin * sum_j min_j bsum32_j)
//   q6_k: y += dx * d * sum_j sc_j (dot_j - 32 bsum16_j)
// with the q6_k zero point as madd of (sc_2k, sc_2k+1) * 32 with the token's
// (-bsum16_2k, -bsum16_2k+1) (-bsum16 = corr16 / 32, exact).
//
// Bounds (s16 must not saturate, int32 must not overflow). Activation codes:
// quantize_block_q8_256 rounds iscale * x with |iscale * x| <= 127 (1 + 2^-23)
// (iscale = -127 / max, |max| = amax), so |q| <= 127 for finite x; the
// bounds below hold for |q| <= 128, so even a NaN input cannot wrap an
// integer (it only gives a meaningless y, as on every path).
// - q4_k: codes 0..15, so one maddubs s16 is <= 2 * 15 * 128 = 3840 and the
//   8 of a sub-block (32 columns) add to <= 30720 < 32767. madd with the
//   scale (<= 63): <= 2 * 30720 * 63 per sub-block, 8 sub-blocks < 2^25.
//   Mins: bsum32 <= 32 * 128 = 4096, min <= 63, 8 terms < 2^22.
// - q6_k: codes 0..63, one maddubs s16 <= 2 * 63 * 128 = 16128, so only two
//   add in s16 (32256; three would be 48384) before a madd with the scale
//   (|sc| <= 128): <= 2 * 32256 * 128 per madd, 2 per sub-block (16
//   columns), 16 sub-blocks: < 2^28; the zero point adds <= 16 * 128 * 32 *
//   2048 = 2^27 (|bsum16| <= 2048, 32 * |sc| <= 4096 fits s16): < 2^29.
// The s16 sums use the saturating add, which by these bounds never
// saturates: GCC may not reassociate it, while with the wrapping add it turns
// each chain into a tree of pending maddubs results that spills half the ymm
// registers (the saturating add makes q4_k batches 30% faster).
// The float sums run in another order than the scalar reference: results
// agree within float rounding, not bit for bit.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/matmul_kernels.hpp"
#include "kernels/matmul_packed_k.hpp"
#include "kernels/x86/matmul_tile_loop.hpp"
#include "kernels/x86/prefetch_ahead.hpp"

namespace cortex::kernels {

namespace {

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load_codes(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

// Scales of sub-blocks 2k and 2k + 1 of the half panel's 8 rows, from the
// [sub-block][16 rows] byte table (p = table + 32k + lane0): s16 pair
// (sc_2k, sc_2k+1) in row r's 32-bit lane. Signed: q6_k's int8 scales.
template <bool Signed>
inline __m256i scale_pairs(const uint8_t* p) {
  const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
  const __m128i ab = _mm_unpacklo_epi8(a, b);
  return Signed ? _mm256_cvtepi8_epi16(ab) : _mm256_cvtepu8_epi16(ab);
}

// (sc, sc) in each 32-bit lane: the first (Odd = false) or second scale of
// each pair, the madd operand that scales a lane's two s16 partial dots.
// (pshufb indexes bytes of the 128-bit lane: dword r takes bytes 4r + 2 Odd, +1.)
template <bool Odd>
inline __m256i dup_scale(__m256i pairs) {
  constexpr int o = Odd ? 0x02020202 : 0;
  const __m256i pick = _mm256_setr_epi32(0x01000100 + o, 0x05040504 + o, 0x09080908 + o, 0x0d0c0d0c + o,
                                         0x01000100 + o, 0x05040504 + o, 0x09080908 + o, 0x0d0c0d0c + o);
  return _mm256_shuffle_epi8(pairs, pick);
}

inline __m256 load_half8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The frame of both tiles: y for half panels [k, k + NH) and tokens
// [t, t + NT), accumulated in float by super_block(rec, b, acc) for each
// super-block b (rec[i]: half panel i's record of it).
template <int NH, int NT, class SuperBlock>
void k_tile(const packed_view& w, int64_t k, int t, size_t record_bytes, half_panel_ref (&hp)[NH],
            const SuperBlock& super_block) {
  for (int i = 0; i < NH; ++i) hp[i] = half_panel_at(w, k + i);
  if (NH == 1 && hp[0].valid == 0) return;
  __m256 acc[NH][NT];
  for (int i = 0; i < NH; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.cols / 256; ++b) {
    const uint8_t* rec[NH];
    for (int i = 0; i < NH; ++i) rec[i] = hp[i].panel + static_cast<size_t>(b) * record_bytes;
    super_block(rec, b, acc);
  }
  for (int i = 0; i < NH; ++i)
    for (int j = 0; j < NT; ++j) store_half_panel_rows(hp[i].y + (t + j) * hp[i].ld, hp[i].valid, acc[i][j]);
}

// Super-blocks a decode tile prefetches ahead of each panel.
constexpr int64_t k_prefetch_records = 2;

// Whether a tile prefetches: decode, 4 half panels (two whole panels).
template <int NH, int NT>
constexpr bool decode_prefetching = NT == 1 && NH == 4;

// Super-block b + k_prefetch_records of the two panels of a tile's half
// panels (hp[0..1] and hp[2..3] at decode).
template <int NH>
records_ahead<2> decode_ahead(const packed_view& w, const half_panel_ref (&hp)[NH], int64_t b, int64_t record) {
  const uint8_t* const panels[2] = {hp[0].panel, hp[NH / 2].panel};
  return records_ahead<2>(panels, 2 * w.panel_bytes, w.cols / 256, record, b + k_prefetch_records);
}

template <int NH, int NT>
void tile_q4_k(const packed_view& w, const quantized_x& x, int64_t k, int t) {
  const q8p_tokens<NT, uint8_t> xt(x, t);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  half_panel_ref hp[NH];
  k_tile<NH, NT>(w, k, t, packed_record_q4_k, hp, [&](const uint8_t* const(&rec)[NH], int64_t b, __m256(&acc)[NH][NT]) {
    __m256i isum[NH][NT];
    for (int i = 0; i < NH; ++i)
      for (int j = 0; j < NT; ++j) isum[i][j] = _mm256_setzero_si256();
    // Decode (NH = 4: two panels) prefetches each panel's super-block
    // k_prefetch_records ahead, spread over the 32 code groups' steps
    // (kernels/x86/prefetch_ahead.hpp), as the AVX-512 decode tiles do.
    constexpr bool prefetching = decode_prefetching<NH, NT>;
    const records_ahead<2> ahead = decode_ahead(w, hp, b, packed_record_q4_k);
    // Code pair p: low nibbles are sub-block 2p, high nibbles 2p + 1.
    for (int p = 0; p < 4; ++p) {
      __m256i sc[NH][2];
      for (int i = 0; i < NH; ++i) {
        const __m256i pairs = scale_pairs<false>(rec[i] + 64 + 32 * p + hp[i].lane0);
        sc[i][0] = dup_scale<false>(pairs);
        sc[i][1] = dup_scale<true>(pairs);
      }
      for (int nib = 0; nib < 2; ++nib) {
        const int64_t col0 = b * 256 + 32 * (2 * p + nib);
        __m256i s16[NH][NT];
        for (int i = 0; i < NH; ++i)
          for (int j = 0; j < NT; ++j) s16[i][j] = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
          if constexpr (prefetching) {
            if (nib == 0) {
              ahead.step(8 * p + g, 32);
            }
          }
          __m256i c[NH];
          for (int i = 0; i < NH; ++i) {
            const __m256i v = load_codes(rec[i] + 320 + (p * 8 + g) * 64 + 4 * hp[i].lane0);
            c[i] = _mm256_and_si256(nib == 0 ? v : _mm256_srli_epi16(v, 4), low4);
          }
          for (int j = 0; j < NT; ++j) {
            const __m256i xv = broadcast4(xt.q[j] + col0 + 4 * g);
            for (int i = 0; i < NH; ++i) {
              s16[i][j] = _mm256_adds_epi16(s16[i][j], _mm256_maddubs_epi16(c[i], xv));
            }
          }
        }
        for (int i = 0; i < NH; ++i)
          for (int j = 0; j < NT; ++j)
            isum[i][j] = _mm256_add_epi32(isum[i][j], _mm256_madd_epi16(s16[i][j], sc[i][nib]));
      }
    }
    // sum_j min_j bsum32_j: min pairs (2m, 2m+1) are stored as s16-ready byte
    // pairs per row, bsum32 pairs are one dword of the token's record.
    __m256i msum[NH][NT];
    for (int i = 0; i < NH; ++i)
      for (int j = 0; j < NT; ++j) msum[i][j] = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) {
      __m256i mins[NH];
      for (int i = 0; i < NH; ++i) {
        mins[i] = _mm256_cvtepu8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec[i] + 192 + 32 * m + 2 * hp[i].lane0)));
      }
      for (int j = 0; j < NT; ++j) {
        const __m256i bs = broadcast4(xt.c[j] + b * 128 + 4 * m);
        for (int i = 0; i < NH; ++i) msum[i][j] = _mm256_add_epi32(msum[i][j], _mm256_madd_epi16(mins[i], bs));
      }
    }
    for (int i = 0; i < NH; ++i) {
      const __m256 d = load_half8(rec[i] + 2 * hp[i].lane0);
      const __m256 dmin = load_half8(rec[i] + 32 + 2 * hp[i].lane0);
      for (int j = 0; j < NT; ++j) {
        const __m256 dx = _mm256_set1_ps(xt.d[j][b]);
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][j]), _mm256_mul_ps(d, dx), acc[i][j]);
        acc[i][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[i][j]), _mm256_mul_ps(dmin, dx), acc[i][j]);
      }
    }
  });
}

// Codes of column group c (0..3) from the ql part c & 1 and the qh group:
// low (c < 2) or high nibble, and qh bits 2c, 2c + 1 as bits 4, 5. The
// 16-bit shifts carry bits across bytes only where the masks clear them.
template <int C>
inline __m256i q6_codes(__m256i ql, __m256i qh, __m256i low4, __m256i high2) {
  const __m256i lo = _mm256_and_si256(C < 2 ? ql : _mm256_srli_epi16(ql, 4), low4);
  __m256i hi = qh;
  if constexpr (C == 0) hi = _mm256_slli_epi16(qh, 4);
  if constexpr (C == 1) hi = _mm256_slli_epi16(qh, 2);
  if constexpr (C == 3) hi = _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(lo, _mm256_and_si256(hi, high2));
}

template <int NH, int NT>
void tile_q6_k(const packed_view& w, const quantized_x& x, int64_t k, int t) {
  const q8p_tokens<NT, uint8_t> xt(x, t);
  const __m256i low4 = _mm256_set1_epi8(0x0f), high2 = _mm256_set1_epi8(0x30);
  half_panel_ref hp[NH];
  k_tile<NH, NT>(w, k, t, packed_record_q6_k, hp, [&](const uint8_t* const(&rec)[NH], int64_t b, __m256(&acc)[NH][NT]) {
    // -bsum16 of the token's 16 sub-blocks as s16 (corr16 = -32 bsum16), so
    // dword kp holds the pair of sub-blocks 2kp, 2kp + 1.
    alignas(32) int32_t neg_bsum[NT][8];
    for (int j = 0; j < NT; ++j) {
      const auto* corr = reinterpret_cast<const __m256i*>(xt.c[j] + b * 128 + 64);
      const __m256i lo = _mm256_srai_epi32(_mm256_loadu_si256(corr), 5);
      const __m256i hi = _mm256_srai_epi32(_mm256_loadu_si256(corr + 1), 5);
      _mm256_store_si256(reinterpret_cast<__m256i*>(neg_bsum[j]),
                         _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8));
    }
    __m256i isum[NH][NT];
    for (int i = 0; i < NH; ++i)
      for (int j = 0; j < NT; ++j) isum[i][j] = _mm256_setzero_si256();
    // Decode prefetch as in tile_q4_k, over the 64 (kp, lq) steps.
    constexpr bool prefetching = decode_prefetching<NH, NT>;
    const records_ahead<2> ahead = decode_ahead(w, hp, b, packed_record_q6_k);
    // Sub-blocks 2kp, 2kp + 1 (kp = 4h + c): columns 128h + 32c + 4lq for
    // lq = 0..3 and 4..7, groups (h, lq) of the record.
    auto pair = [&](auto c_const, int h) {
      constexpr int c = decltype(c_const)::value;
      const int kp = 4 * h + c;
      __m256i sc[NH][2];
      for (int i = 0; i < NH; ++i) {
        const __m256i pairs = scale_pairs<true>(rec[i] + 64 + 32 * kp + hp[i].lane0);
        sc[i][0] = dup_scale<false>(pairs);
        sc[i][1] = dup_scale<true>(pairs);
        const __m256i pairs32 = _mm256_slli_epi16(pairs, 5);
        for (int j = 0; j < NT; ++j) {
          isum[i][j] = _mm256_add_epi32(isum[i][j], _mm256_madd_epi16(pairs32, _mm256_set1_epi32(neg_bsum[j][kp])));
        }
      }
      for (int lq0 = 0; lq0 < 8; lq0 += 2) {
        __m256i s16[NH][NT];
        for (int l = 0; l < 2; ++l) {
          const int lq = lq0 + l;
          if constexpr (prefetching) {
            ahead.step(8 * kp + lq, 64);
          }
          __m256i codes[NH];
          for (int i = 0; i < NH; ++i) {
            const uint8_t* g = rec[i] + 320 + (h * 8 + lq) * 3 * 64 + 4 * hp[i].lane0;
            codes[i] = q6_codes<c>(load_codes(g + (c & 1) * 64), load_codes(g + 128), low4, high2);
          }
          for (int j = 0; j < NT; ++j) {
            const __m256i xv = broadcast4(xt.q[j] + b * 256 + 128 * h + 32 * c + 4 * lq);
            for (int i = 0; i < NH; ++i) {
              const __m256i p = _mm256_maddubs_epi16(codes[i], xv);
              s16[i][j] = l == 0 ? p : _mm256_adds_epi16(s16[i][j], p);
            }
          }
        }
        for (int i = 0; i < NH; ++i)
          for (int j = 0; j < NT; ++j)
            isum[i][j] = _mm256_add_epi32(isum[i][j], _mm256_madd_epi16(s16[i][j], sc[i][lq0 / 4]));
      }
    };
    for (int h = 0; h < 2; ++h) {
      pair(std::integral_constant<int, 0>{}, h);
      pair(std::integral_constant<int, 1>{}, h);
      pair(std::integral_constant<int, 2>{}, h);
      pair(std::integral_constant<int, 3>{}, h);
    }
    for (int i = 0; i < NH; ++i) {
      const __m256 d = load_half8(rec[i] + 2 * hp[i].lane0);
      for (int j = 0; j < NT; ++j) {
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][j]), _mm256_mul_ps(d, _mm256_set1_ps(xt.d[j][b])),
                                    acc[i][j]);
      }
    }
  });
}

template <bool Q6>
struct k_tiles {
  const packed_view& w;
  const quantized_x& x;
  template <int NH, int NT>
  void run(int64_t k, int t) const {
    if constexpr (Q6) {
      tile_q6_k<NH, NT>(w, x, k, t);
    } else {
      tile_q4_k<NH, NT>(w, x, k, t);
    }
  }
};

template <bool Q6>
void packed_rows(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  for_each_half_panel_tile(p0, p1, n_tokens, k_tiles<Q6>{w, x});
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const packed_rows_fn packed_avx2_q4_k = packed_rows<false>, packed_avx2_q6_k = packed_rows<true>;

}  // namespace cortex::kernels
