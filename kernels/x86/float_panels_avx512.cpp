// The AVX-512 outer-product kernel of kernels/float_panels.hpp: NP panels
// (NP x 16 rows) against NT tokens, one vector per panel column, each
// token's x[c] broadcast, NP x NT accumulators over the columns in order.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "kernels/float_panels.hpp"

namespace cortex::kernels {

namespace {

template <bool Half, int NP, int NT>
void outer_tile(const uint8_t* panel, size_t panel_bytes, const float* x, int64_t cols, float* y, int64_t ldy,
                const __mmask16 (&valid)[NP]) {
  __m512 acc[NP][NT];
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t c = 0; c < cols; ++c) {
    __m512 w[NP];
    for (int i = 0; i < NP; ++i) {
      const uint8_t* col = panel + static_cast<size_t>(i) * panel_bytes;
      if constexpr (Half) {
        w[i] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(col + c * 32)));
      } else {
        w[i] = _mm512_load_ps(reinterpret_cast<const float*>(col + c * 64));
      }
    }
    for (int j = 0; j < NT; ++j) {
      const __m512 xb = _mm512_set1_ps(x[j * cols + c]);
      for (int i = 0; i < NP; ++i) acc[i][j] = _mm512_fmadd_ps(w[i], xb, acc[i][j]);
    }
  }
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(y + j * ldy + 16 * i, valid[i], acc[i][j]);
}

template <bool Half, int NP, int NT>
void outer_tile_of(const float_panels& w, int64_t p, const float* x, float* y, int64_t ldy) {
  __mmask16 valid[NP];
  for (int i = 0; i < NP; ++i) {
    const int64_t left = w.rows() - 16 * (p + i);
    valid[i] = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
  }
  outer_tile<Half, NP, NT>(w.data() + static_cast<size_t>(p) * w.panel_bytes(), w.panel_bytes(), x, w.cols(),
                           y + 16 * p, ldy, valid);
}

constexpr int tile_tokens = 12;  // 2 panels x 12 tokens: 24 accumulators, 2 weight vectors, 1 broadcast

// NT tokens (1..12) from token t against panels p (NP of them).
template <bool Half, int NP>
void tokens_tile(const float_panels& w, int64_t p, const float* xr, int t, int nt, float* y, int64_t ldy) {
  const float* x = xr + static_cast<size_t>(t) * w.cols();
  float* yt = y + static_cast<size_t>(t) * ldy;
  switch (nt) {
    case 12: outer_tile_of<Half, NP, 12>(w, p, x, yt, ldy); break;
    case 11: outer_tile_of<Half, NP, 11>(w, p, x, yt, ldy); break;
    case 10: outer_tile_of<Half, NP, 10>(w, p, x, yt, ldy); break;
    case 9: outer_tile_of<Half, NP, 9>(w, p, x, yt, ldy); break;
    case 8: outer_tile_of<Half, NP, 8>(w, p, x, yt, ldy); break;
    case 7: outer_tile_of<Half, NP, 7>(w, p, x, yt, ldy); break;
    case 6: outer_tile_of<Half, NP, 6>(w, p, x, yt, ldy); break;
    case 5: outer_tile_of<Half, NP, 5>(w, p, x, yt, ldy); break;
    case 4: outer_tile_of<Half, NP, 4>(w, p, x, yt, ldy); break;
    case 3: outer_tile_of<Half, NP, 3>(w, p, x, yt, ldy); break;
    case 2: outer_tile_of<Half, NP, 2>(w, p, x, yt, ldy); break;
    default: outer_tile_of<Half, NP, 1>(w, p, x, yt, ldy); break;
  }
}

template <bool Half>
void rows(const float_panels& w, const float* xr, int t0, int t1, int64_t p0, int64_t p1, float* y, int64_t ldy) {
  int64_t p = p0;
  for (; p + 2 <= p1; p += 2)
    for (int t = t0; t < t1; t += tile_tokens) tokens_tile<Half, 2>(w, p, xr, t, std::min(tile_tokens, t1 - t), y, ldy);
  for (; p < p1; ++p)
    for (int t = t0; t < t1; t += tile_tokens) tokens_tile<Half, 1>(w, p, xr, t, std::min(tile_tokens, t1 - t), y, ldy);
}

}  // namespace

void float_panels_rows_avx512(const float_panels& w, const float* xr, int t0, int t1, int64_t p0, int64_t p1,
                              float* y, int64_t ldy) {
  if (w.half()) {
    rows<true>(w, xr, t0, t1, p0, p1, y, ldy);
  } else {
    rows<false>(w, xr, t0, t1, p0, p1, y, ldy);
  }
}

}  // namespace cortex::kernels
