// AVX-512 VNNI kernels for packed q4_0 / q5_0 / q8_0 / iq4_nl / mxfp4
// weights (layout in kernels/matmul_kernels.hpp). Only the kernels named at
// the end are exported. q5_0 is q4_0 plus each block's fifth bits, ORed in as
// 0x10; iq4_nl and mxfp4 are q4_0's nibbles looked up in their table (one
// vpshufb per 64 codes), offset by their zero point.
//
// A 64-byte load gives 4 codes of each of 16 rows; vpdpbusd with the token's
// 4 matching activation bytes broadcast to every lane accumulates one int32
// block dot per row and lane. Per (block, panel, token) the float work is one
// convert and one multiply-add for 16 rows, and the result is 16 contiguous
// outputs: no horizontal sums. The zero point (8, 16 or 128) enters as the
// accumulator's initial value, corr = -zero_point * sum(x codes of the block).
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_kernels.hpp"
#include "kernels/x86/dpbusd_inplace.hpp"
#include "kernels/x86/even_split.hpp"
#include "kernels/x86/matmul_tile_loop.hpp"
#include "kernels/x86/packed_codes_avx512.hpp"
#include "kernels/x86/prefetch_ahead.hpp"

namespace cortex::kernels {

namespace {

// y for panels [p, p + NP) and tokens [t, t + NT).
template <class Fmt, int NP, int NT>
void tile(const packed_view& w, const quantized_x& x, int64_t p, int t) {
  constexpr int64_t record = record_header + 2 * Fmt::block_code_bytes;
  const int64_t nb = w.cols / 32;
  const int64_t n_records = (nb + 1) / 2;
  const uint8_t* panel[NP];
  for (int i = 0; i < NP; ++i) panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  const q8p_tokens<NT> xt(x, t);
  const auto& xq = xt.q;
  const auto& xd = xt.d;
  const auto& xc = xt.c;
  __m512 acc[NP][NT];
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  const __m512i lut = lut_vector<Fmt>();

  for (int64_t rec = 0; rec < n_records; ++rec) {
    for (int h = 0; h < 2; ++h) {
      const int64_t b = 2 * rec + h;
      const uint8_t* codes[NP];
      for (int i = 0; i < NP; ++i) codes[i] = panel[i] + rec * record + record_header + h * Fmt::block_code_bytes;
      __m512i ia[NP][NT];
      for (int j = 0; j < NT; ++j) {
        const __m512i c = _mm512_set1_epi32(xc[j][b]);
        for (int i = 0; i < NP; ++i) ia[i][j] = c;
      }
      if constexpr (Fmt::block_code_bytes == 256 || Fmt::block_code_bytes == 320) {
        __m512i bits[NP];
        for (int i = 0; i < NP; ++i) bits[i] = fifth_bits_of<Fmt>(codes[i]);
        for (int g = 0; g < 4; ++g) {
          __m512i lo[NP], hi[NP];
          for (int i = 0; i < NP; ++i) nibble_group<Fmt>(codes[i], bits[i], g, lut, lo[i], hi[i]);
          for (int j = 0; j < NT; ++j) {
            const __m512i xl = broadcast_dword(xq[j] + b * 32 + 4 * g);
            const __m512i xh = broadcast_dword(xq[j] + b * 32 + 16 + 4 * g);
            for (int i = 0; i < NP; ++i) {
              ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], lo[i], xl);
              ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], hi[i], xh);
            }
          }
        }
      } else {
        for (int g = 0; g < 8; ++g) {
          __m512i c[NP];
          for (int i = 0; i < NP; ++i) c[i] = _mm512_load_si512(codes[i] + 64 * g);
          for (int j = 0; j < NT; ++j) {
            const __m512i xg = broadcast_dword(xq[j] + b * 32 + 4 * g);
            for (int i = 0; i < NP; ++i) ia[i][j] = _mm512_dpbusd_epi32(ia[i][j], c[i], xg);
          }
        }
      }
      __m512 dw[NP];
      for (int i = 0; i < NP; ++i) dw[i] = block_scales<Fmt>(panel[i] + rec * record + h * 32);
      for (int j = 0; j < NT; ++j) {
        const __m512 dx = _mm512_set1_ps(xd[j][b]);
        for (int i = 0; i < NP; ++i) {
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i][j]), _mm512_mul_ps(dw[i], dx), acc[i][j]);
        }
      }
    }
  }

  for (int i = 0; i < NP; ++i) {
    const packed_dest d = packed_dest_of(w, p + i);
    const __mmask16 m = panel_rows_mask(d.valid);
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(d.y + (t + j) * d.ld, m, acc[i][j]);
  }
}

// Decode (one token) of the nibble formats (q4_0, q5_0, iq4_nl, mxfp4): NP
// panels, NP weight streams. Each block's low and high nibbles feed two
// int32 chains that meet at the block's end (integer sums: the same bits as
// one chain), which halves the chains' length; and the records
// prefetch_records ahead are prefetched into L1, so the stream does
// not wait on the hardware prefetcher at each of the NP panels' pages.
//
// Records a panel is prefetched ahead (into L1), here and in the batched
// q4_0 kernel below. Until this prefetch went through prefetch_line (an
// asm statement; kernels/x86/prefetch_ahead.hpp says why), GCC had deleted
// it: the kernels ran on the hardware prefetcher alone, and the distances
// once measured here compared nothing. With it, on a Zen 5 (bench_kernels
// matmul_packed/q4_0/11264x2048, 1 GiB of copies, 3 interleaved rounds,
// medians): decode 19.7 -> 27.7 GB/s on 1 thread (the machine's one-thread
// read bandwidth is 29-31) and 28 -> 47 on 2; 2 tokens 20 -> 33, 4 tokens
// 17.7 -> 26.7, 9 tokens 11.4 -> 15.6, 16 tokens 7.7 -> 9.4. 2, 4 and 8
// records ahead measured alike; 4 is kept. q8_0's decode (tile<.., 1>) is
// left to the hardware prefetcher: the same spread prefetch cost it
// 62.9 -> 49.8 GB/s on 2 threads, 33.5 -> 27.5 on 1 (its compute per byte
// is a third of q4_0's).
//
// The prefetches of a record are spread over the steps of its compute
// (records_ahead::step), a line or two per panel and step, not issued at once:
// all NP x 9 at a record's start read 23.4 GB/s on 1 thread and 34 on 2,
// spread 27.7 and 47 (same run).
constexpr int64_t prefetch_records = 4;

// The NP panels starting at panel p, and the prefetch of their record
// rec + prefetch_records (near a panel's end, the next panels' first records:
// the next call starts on them, or another task does).
template <class Fmt, int NP>
struct panel_stream {
  static constexpr int64_t record = record_header + 2 * Fmt::block_code_bytes;
  const uint8_t* panel[NP];
  int64_t n_records;
  size_t panel_bytes;
  panel_stream(const packed_view& w, int64_t p) : n_records((w.cols / 32 + 1) / 2), panel_bytes(w.panel_bytes) {
    for (int i = 0; i < NP; ++i) panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  }
  // Record rec + prefetch_records of every panel, for the compute steps of
  // record rec to prefetch a part each (records_ahead::step).
  records_ahead<NP> ahead(int64_t rec) const {
    static_assert(record % 64 == 0, "records are whole lines");
    return records_ahead<NP>(panel, NP * panel_bytes, n_records, record, rec + prefetch_records);
  }
};

template <class Fmt, int NP>
void decode_tile(const packed_view& w, const quantized_x& x, int64_t p) {
  constexpr int64_t record = panel_stream<Fmt, NP>::record;
  const panel_stream<Fmt, NP> s(w, p);
  const auto& panel = s.panel;
  const q8p_tokens<1> xt(x, 0);
  const int8_t* xq = xt.q[0];
  __m512 acc[NP];
  for (int i = 0; i < NP; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i lut = lut_vector<Fmt>();
  for (int64_t rec = 0; rec < s.n_records; ++rec) {
    const records_ahead<NP> ahead = s.ahead(rec);
    for (int h = 0; h < 2; ++h) {
      const int64_t b = 2 * rec + h;
      __m512i lo_sum[NP], hi_sum[NP], bits[NP];
      const uint8_t* codes[NP];
      for (int i = 0; i < NP; ++i) {
        codes[i] = panel[i] + rec * record + record_header + h * Fmt::block_code_bytes;
        bits[i] = fifth_bits_of<Fmt>(codes[i]);
        lo_sum[i] = _mm512_set1_epi32(xt.c[0][b]);
        hi_sum[i] = _mm512_setzero_si512();
      }
      for (int g = 0; g < 4; ++g) {
        ahead.step(4 * h + g, 8);
        const __m512i xl = broadcast_dword(xq + b * 32 + 4 * g);
        const __m512i xh = broadcast_dword(xq + b * 32 + 16 + 4 * g);
        for (int i = 0; i < NP; ++i) {
          __m512i lo, hi;
          nibble_group<Fmt>(codes[i], bits[i], g, lut, lo, hi);
          lo_sum[i] = _mm512_dpbusd_epi32(lo_sum[i], lo, xl);
          hi_sum[i] = _mm512_dpbusd_epi32(hi_sum[i], hi, xh);
        }
      }
      const __m512 dx = _mm512_set1_ps(xt.d[0][b]);
      for (int i = 0; i < NP; ++i) {
        const __m512 dw = block_scales<Fmt>(panel[i] + rec * record + h * 32);
        const __m512i sum = _mm512_add_epi32(lo_sum[i], hi_sum[i]);
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, dx), acc[i]);
      }
    }
  }
  for (int i = 0; i < NP; ++i) {
    const packed_dest d = packed_dest_of(w, p + i);
    _mm512_mask_storeu_ps(d.y, panel_rows_mask(d.valid), acc[i]);
  }
}

// Batched q4_0 (2 tokens and up): a panel pair against every token of the
// task. Each weight block is loaded and unpacked once (16 zmm) and feeds all
// tokens; the float accumulators of all tokens live in an L1 buffer. The
// panels are read once per call, so a small batch (a verify step of 1 + 8
// drafted tokens) streams the weights as a decode step does.
//
// Tokens go in groups of at most q4_group_max, sized evenly (9 = 5 + 4, never
// 8 + 1): a group of G tokens over NP panels runs NP * G independent vpdpbusd
// chains, and with a latency of 5 and two issued per cycle it takes ~10
// chains to keep both ports busy. A lone tail token (2 chains) would run at a
// fifth of that rate and cost as much as a full group.
#define CORTEX_INLINE inline __attribute__((always_inline))

constexpr int q4_panel_max_tokens = 32;
constexpr int q4_group_max = 5;  // 2 panels: 10 chains, 16 weight zmm, 2 scales

template <int NP, int G>
CORTEX_INLINE void q4_group(const __m512i (&wl)[NP][4], const __m512i (&wh)[NP][4], const __m512 (&dw)[NP],
                            const uint8_t* xbase, size_t stride, size_t d_off, size_t c_off, int64_t b, float* acc) {
  __m512i ia[NP][G];
  for (int j = 0; j < G; ++j) {
    const __m512i c = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(xbase + j * stride + c_off)[b]);
    for (int i = 0; i < NP; ++i) ia[i][j] = c;
  }
  for (int g = 0; g < 4; ++g) {
    for (int j = 0; j < G; ++j) {
      const int8_t* xq = reinterpret_cast<const int8_t*>(xbase + j * stride) + b * 32;
      for (int i = 0; i < NP; ++i) {
        dpbusd_inplace_bcast(ia[i][j], wl[i][g], xq + 4 * g);
        dpbusd_inplace_bcast(ia[i][j], wh[i][g], xq + 16 + 4 * g);
      }
    }
  }
  for (int j = 0; j < G; ++j) {
    const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(xbase + j * stride + d_off)[b]);
    for (int i = 0; i < NP; ++i) {
      float* a = acc + (i * q4_panel_max_tokens + j) * 16;
      _mm512_store_ps(a, _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i][j]), _mm512_mul_ps(dw[i], dx), _mm512_load_ps(a)));
    }
  }
}

template <int NP>
CORTEX_INLINE void q4_group_of(int n, const __m512i (&wl)[NP][4], const __m512i (&wh)[NP][4], const __m512 (&dw)[NP],
                               const uint8_t* xbase, size_t stride, size_t d_off, size_t c_off, int64_t b, float* acc) {
  static_assert(q4_group_max == 5, "the switch below covers group sizes 1..5");
  switch (n) {
    case 5: q4_group<NP, 5>(wl, wh, dw, xbase, stride, d_off, c_off, b, acc); break;
    case 4: q4_group<NP, 4>(wl, wh, dw, xbase, stride, d_off, c_off, b, acc); break;
    case 3: q4_group<NP, 3>(wl, wh, dw, xbase, stride, d_off, c_off, b, acc); break;
    case 2: q4_group<NP, 2>(wl, wh, dw, xbase, stride, d_off, c_off, b, acc); break;
    default: q4_group<NP, 1>(wl, wh, dw, xbase, stride, d_off, c_off, b, acc); break;
  }
}


template <class Fmt, int NP>
void q4_panel_all_tokens(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p) {
  constexpr int64_t record = panel_stream<Fmt, NP>::record;
  const panel_stream<Fmt, NP> s(w, p);
  const auto& panel = s.panel;
  const __m512i lut = lut_vector<Fmt>();
  alignas(64) float acc[NP * q4_panel_max_tokens * 16];
  for (int t0 = 0; t0 < n_tokens; t0 += q4_panel_max_tokens) {
    const int nt = n_tokens - t0 < q4_panel_max_tokens ? n_tokens - t0 : q4_panel_max_tokens;
    const uint8_t* xt = x.data + static_cast<size_t>(t0) * x.stride;
    const even_split groups(nt, q4_group_max);
    for (int i = 0; i < NP; ++i)
      for (int j = 0; j < nt; ++j) _mm512_store_ps(acc + (i * q4_panel_max_tokens + j) * 16, _mm512_setzero_ps());
    for (int64_t rec = 0; rec < s.n_records; ++rec) {
      const records_ahead<NP> ahead = s.ahead(rec);
      for (int h = 0; h < 2; ++h) {
        ahead.step(h, 2);
        const int64_t b = 2 * rec + h;
        __m512i wl[NP][4], wh[NP][4];
        __m512 dw[NP];
        for (int i = 0; i < NP; ++i) {
          const uint8_t* codes = panel[i] + rec * record + record_header + h * Fmt::block_code_bytes;
          for (int g = 0; g < 4; ++g) nibble_group<Fmt>(codes, _mm512_setzero_si512(), g, lut, wl[i][g], wh[i][g]);
          dw[i] = block_scales<Fmt>(panel[i] + rec * record + h * 32);
        }
        for (int k = 0, j = 0; k < groups.count; ++k) {
          const int g_size = groups.size(k);
          q4_group_of<NP>(g_size, wl, wh, dw, xt + j * x.stride, x.stride, x.d_offset, x.aux_offset, b, acc + 16 * j);
          j += g_size;
        }
      }
    }
    for (int i = 0; i < NP; ++i) {
      const packed_dest d = packed_dest_of(w, p + i);
      const __mmask16 m = panel_rows_mask(d.valid);
      for (int j = 0; j < nt; ++j)
        _mm512_mask_storeu_ps(d.y + (t0 + j) * d.ld, m, _mm512_load_ps(acc + (i * q4_panel_max_tokens + j) * 16));
    }
  }
}

template <class Fmt, int NP>
void token_loop(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p) {
  int t = 0;
  for (; t + 4 <= n_tokens; t += 4) tile<Fmt, NP, 4>(w, x, p, t);
  switch (n_tokens - t) {
    case 3: tile<Fmt, NP, 3>(w, x, p, t); break;
    case 2: tile<Fmt, NP, 2>(w, x, p, t); break;
    case 1: tile<Fmt, NP, 1>(w, x, p, t); break;
    default: break;
  }
}

template <class Fmt>
void packed_rows(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  int64_t p = p0;
  if (n_tokens == 1) {
    // Decode: four panels (four weight streams) per pass.
    if constexpr (Fmt::block_code_bytes == 256 || Fmt::block_code_bytes == 320) {
      for (; p + 4 <= p1; p += 4) decode_tile<Fmt, 4>(w, x, p);
      for (; p < p1; ++p) decode_tile<Fmt, 1>(w, x, p);
    } else {
      for (; p + 4 <= p1; p += 4) tile<Fmt, 4, 1>(w, x, p, 0);
      for (; p < p1; ++p) tile<Fmt, 1, 1>(w, x, p, 0);
    }
    return;
  }
  if (Fmt::block_code_bytes == 256) {
    for (; p + 2 <= p1; p += 2) q4_panel_all_tokens<Fmt, 2>(w, x, n_tokens, p);
    for (; p < p1; ++p) q4_panel_all_tokens<Fmt, 1>(w, x, n_tokens, p);
    return;
  }
  for (; p + 2 <= p1; p += 2) token_loop<Fmt, 2>(w, x, n_tokens, p);
  for (; p < p1; ++p) token_loop<Fmt, 1>(w, x, n_tokens, p);
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const packed_rows_fn packed_avx512_q4_0 = packed_rows<fmt_q4_0>, packed_avx512_q5_0 = packed_rows<fmt_q5_0>,
                            packed_avx512_q8_0 = packed_rows<fmt_q8_0>, packed_avx512_iq4_nl = packed_rows<fmt_iq4_nl>,
                            packed_avx512_mxfp4 = packed_rows<fmt_mxfp4>;

}  // namespace cortex::kernels
