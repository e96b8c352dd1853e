// AVX2 kernels for packed q4_0 / q8_0 weights (layout in
// kernels/matmul_kernels.hpp). Only the kernels named at the
// end are exported.
//
// The packed layout is the AVX-512 one: each 64-byte code group holds 4 codes
// of 16 rows, here taken as two ymm halves (rows 0-7 and 8-15). The unit of
// work is a half panel: 8 rows, one 32-bit lane per row, so results come out
// as 8 contiguous outputs with no horizontal sums. Without VNNI the byte dots
// are maddubs (u8 x s8 -> pairs summed to s16, saturating) + madd:
// - q4_0 codes are 0..15, so a whole block's 8 maddubs results fit in s16
//   (|sum| <= 8 * 2 * 15 * 127 = 30480) and one madd per block widens them;
//   the zero point 8 comes back through corr = -8 * sum(x codes).
// - q8_0 codes are stored +128 (unsigned); unsigned 255 * 127 * 2 would
//   saturate s16, so the signed code is restored and the sign is moved onto x
//   (|w| * sign(x, w) <= 128 * 127 * 2 fits), one madd per 4-code group.
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_kernels.hpp"
#include "kernels/x86/matmul_tile_loop.hpp"
#include "kernels/x86/prefetch_ahead.hpp"

namespace cortex::kernels {

namespace {

// Records a decode tile prefetches ahead of each panel (as the AVX-512
// q4_0 decode).
constexpr int64_t prefetch_records = 4;

inline __m256i broadcast_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// y for half panels [k, k + NH) and tokens [t, t + NT).
template <class Fmt, int NH, int NT>
void tile(const packed_view& w, const quantized_x& x, int64_t k, int t) {
  constexpr int64_t record = record_header + 2 * Fmt::block_code_bytes;
  const int64_t n_records = (w.cols / 32 + 1) / 2;
  half_panel_ref hp[NH];
  for (int i = 0; i < NH; ++i) hp[i] = half_panel_at(w, k + i);
  const q8p_tokens<NT> xt(x, t);
  const auto& xq = xt.q;
  const auto& xd = xt.d;
  const auto& xc = xt.c;
  __m256 acc[NH][NT];
  for (int i = 0; i < NH; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));

  // Decode (NH = 4: half panels 0-1 and 2-3 are two panels) prefetches
  // each panel's record prefetch_records ahead, spread over the record's
  // compute steps, as the AVX-512 kernels do (kernels/x86/prefetch_ahead.hpp).
  constexpr bool prefetching = NT == 1 && NH == 4;
  constexpr int groups = Fmt::block_code_bytes == 256 ? 4 : 8;
  const uint8_t* const panels[2] = {hp[0].panel, hp[NH / 2].panel};  // NH = 4: the two panels

  for (int64_t rec = 0; rec < n_records; ++rec) {
    const records_ahead<2> ahead(panels, 2 * w.panel_bytes, n_records, record, rec + prefetch_records);
    auto prefetch = [&](int step) {
      if constexpr (prefetching) ahead.step(step, 2 * groups);
    };
    for (int h = 0; h < 2; ++h) {
      const int64_t b = 2 * rec + h;
      const uint8_t* codes[NH];
      for (int i = 0; i < NH; ++i) {
        codes[i] = hp[i].panel + rec * record + record_header + h * Fmt::block_code_bytes + 4 * hp[i].lane0;
      }
      __m256i ia[NH][NT];
      if constexpr (Fmt::block_code_bytes == 256) {
        for (int i = 0; i < NH; ++i)
          for (int j = 0; j < NT; ++j) ia[i][j] = _mm256_setzero_si256();
        for (int g = 0; g < 4; ++g) {
          prefetch(groups * h + g);
          __m256i lo[NH], hi[NH];
          for (int i = 0; i < NH; ++i) {
            const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes[i] + 64 * g));
            lo[i] = _mm256_and_si256(v, low4);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
          }
          for (int j = 0; j < NT; ++j) {
            const __m256i xl = broadcast_dword(xq[j] + b * 32 + 4 * g);
            const __m256i xh = broadcast_dword(xq[j] + b * 32 + 16 + 4 * g);
            for (int i = 0; i < NH; ++i) {
              ia[i][j] = _mm256_adds_epi16(ia[i][j], _mm256_maddubs_epi16(lo[i], xl));
              ia[i][j] = _mm256_adds_epi16(ia[i][j], _mm256_maddubs_epi16(hi[i], xh));
            }
          }
        }
        for (int j = 0; j < NT; ++j) {
          const __m256i c = _mm256_set1_epi32(xc[j][b]);
          for (int i = 0; i < NH; ++i) ia[i][j] = _mm256_add_epi32(_mm256_madd_epi16(ia[i][j], ones16), c);
        }
      } else {
        for (int i = 0; i < NH; ++i)
          for (int j = 0; j < NT; ++j) ia[i][j] = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
          prefetch(groups * h + g);
          __m256i sw[NH], aw[NH];
          for (int i = 0; i < NH; ++i) {
            sw[i] = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(codes[i] + 64 * g)), flip);
            aw[i] = _mm256_abs_epi8(sw[i]);
          }
          for (int j = 0; j < NT; ++j) {
            const __m256i xg = broadcast_dword(xq[j] + b * 32 + 4 * g);
            for (int i = 0; i < NH; ++i) {
              const __m256i p16 = _mm256_maddubs_epi16(aw[i], _mm256_sign_epi8(xg, sw[i]));
              ia[i][j] = _mm256_add_epi32(ia[i][j], _mm256_madd_epi16(p16, ones16));
            }
          }
        }
      }
      __m256 dw[NH];
      for (int i = 0; i < NH; ++i) {
        dw[i] = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(hp[i].panel + rec * record + h * 32 + 2 * hp[i].lane0)));
      }
      for (int j = 0; j < NT; ++j) {
        const __m256 dx = _mm256_set1_ps(xd[j][b]);
        for (int i = 0; i < NH; ++i) {
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[i][j]), _mm256_mul_ps(dw[i], dx), acc[i][j]);
        }
      }
    }
  }

  for (int i = 0; i < NH; ++i)
    for (int j = 0; j < NT; ++j) store_half_panel_rows(hp[i].y + (t + j) * hp[i].ld, hp[i].valid, acc[i][j]);
}

template <class Fmt>
struct tiles {
  const packed_view& w;
  const quantized_x& x;
  template <int NH, int NT>
  void run(int64_t k, int t) const {
    tile<Fmt, NH, NT>(w, x, k, t);
  }
};

template <class Fmt>
void packed_rows(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  for_each_half_panel_tile(p0, p1, n_tokens, tiles<Fmt>{w, x});
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const packed_rows_fn packed_avx2_q4_0 = packed_rows<fmt_q4_0>, packed_avx2_q8_0 = packed_rows<fmt_q8_0>;

}  // namespace cortex::kernels
