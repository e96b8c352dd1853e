// AVX-512 VNNI kernels for packed q4_k / q5_k / q6_k weights (layout in
// kernels/matmul_kernels.hpp) against q8_kp activations. Only the
// kernels named at the end are exported. q5_k is q4_k with its fifth bits
// ORed into the unpacked codes.
//
// As for q4_0: a 64-byte load gives 4 codes of 16 rows, the token's 4
// activation bytes are broadcast, and vpdpbusd accumulates one int32 sub-block
// dot per row. Each sub-block dot is then weighted in float by d * scale
// (16 rows at once), so per super-block and token
//   q4_k, q5_k: y += dx * (sum_j d sc_j dot_j - dmin * sum_j min_j bsum32_j)
//         (the min term as vpdpwssd of min pairs with bsum32 pairs)
//   q6_k: y += dx * sum_j d sc_j (dot_j - 32 bsum16_j)
//         (the zero point as the accumulator's initial value).
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
#include "kernels/x86/packed_codes_avx512.hpp"
#include "kernels/x86/prefetch_ahead.hpp"

namespace cortex::kernels {

namespace {

struct x_token {
  const int8_t* q;
  const float* d;
  const uint8_t* aux;
};

template <int NT>
void token_pointers(const quantized_x& x, int t, x_token (&xt)[NT]) {
  for (int j = 0; j < NT; ++j) {
    const uint8_t* base = x.data + static_cast<size_t>(t + j) * x.stride;
    xt[j] = {reinterpret_cast<const int8_t*>(base), reinterpret_cast<const float*>(base + x.d_offset),
             base + x.aux_offset};
  }
}

template <int NP, int NT>
void store_tile(const packed_view& w, int64_t p, int t, const __m512 (&acc)[NP][NT]) {
  for (int i = 0; i < NP; ++i) {
    const packed_dest d = packed_dest_of(w, p + i);
    const __mmask16 m = panel_rows_mask(d.valid);
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(d.y + (t + j) * d.ld, m, acc[i][j]);
  }
}

// Decode tiles: the super-block records k_prefetch_records ahead of each
// panel are prefetched (into L1), spread over the record's compute steps
// (kernels/x86/prefetch_ahead.hpp), as the q4_0 decode does. On a Zen 5,
// 2 threads (bench_kernels matmul_packed/<type>/<shape>/tokens:1, 1 GiB of
// copies, 5 interleaved rounds, medians), without -> with: q4_k 11264x2048
// 37.3 -> 49.4 GB/s, 2048x5632 37.2 -> 46.8, 32000x2048 36.0 -> 49.9; q6_k
// 33.1 -> 46.2, 35.2 -> 43.2, 39.8 -> 49.7. 1 and 2 records ahead measured
// alike on 1 thread; 2 is kept.
constexpr int64_t k_prefetch_records = 2;

template <bool High, int NP, int NT>
void tile_k4(const packed_view& w, const quantized_x& x, int64_t p, int t) {
  using fmt = k4_format<High>;
  const int64_t nb = w.cols / 256;
  const uint8_t* panel[NP];
  for (int i = 0; i < NP; ++i) panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  x_token xt[NT];
  token_pointers(x, t, xt);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[NP][NT];
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec[NP];
    for (int i = 0; i < NP; ++i) rec[i] = panel[i] + b * fmt::record;
    const records_ahead<NP> ahead(panel, NP * w.panel_bytes, nb, fmt::record, b + k_prefetch_records);
    __m512 sum[NP][NT];
    for (int i = 0; i < NP; ++i)
      for (int j = 0; j < NT; ++j) sum[i][j] = _mm512_setzero_ps();
    for (int pr = 0; pr < 4; ++pr) {
      __m512i da[NP][NT], db[NP][NT];
      for (int i = 0; i < NP; ++i)
        for (int j = 0; j < NT; ++j) da[i][j] = db[i][j] = _mm512_setzero_si512();
      for (int g = 0; g < 8; ++g) {
        ahead.step(8 * pr + g, 32);
        __m512i lo[NP], hi[NP];
        for (int i = 0; i < NP; ++i) {
          const __m512i v = _mm512_load_si512(rec[i] + 320 + (pr * 8 + g) * 64);
          lo[i] = _mm512_and_si512(v, low4);
          hi[i] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
          fmt::add_high_bits(rec[i], pr, g, lo[i], hi[i]);
        }
        for (int j = 0; j < NT; ++j) {
          const __m512i xa = broadcast_dword(xt[j].q + b * 256 + 64 * pr + 4 * g);
          const __m512i xb = broadcast_dword(xt[j].q + b * 256 + 64 * pr + 32 + 4 * g);
          for (int i = 0; i < NP; ++i) {
            da[i][j] = _mm512_dpbusd_epi32(da[i][j], lo[i], xa);
            db[i][j] = _mm512_dpbusd_epi32(db[i][j], hi[i], xb);
          }
        }
      }
      for (int i = 0; i < NP; ++i) {
        const __m512 d = load_half16(rec[i]);
        const __m512 sa = scale_u8(rec[i] + 64 + 16 * (2 * pr), d);
        const __m512 sb = scale_u8(rec[i] + 64 + 16 * (2 * pr + 1), d);
        for (int j = 0; j < NT; ++j) {
          sum[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(da[i][j]), sa, sum[i][j]);
          sum[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(db[i][j]), sb, sum[i][j]);
        }
      }
    }
    for (int i = 0; i < NP; ++i) {
      __m512i mins[4];
      k4_load_mins(rec[i], mins);
      const __m512 dmin = load_half16(rec[i] + 32);
      for (int j = 0; j < NT; ++j) {
        const __m512i msum = k4_min_dots(mins, xt[j].aux + b * 128);
        const __m512 s = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, sum[i][j]);
        acc[i][j] = _mm512_fmadd_ps(s, _mm512_set1_ps(xt[j].d[b]), acc[i][j]);
      }
    }
  }
  store_tile<NP, NT>(w, p, t, acc);
}

template <int NP, int NT>
void tile_q6_k(const packed_view& w, const quantized_x& x, int64_t p, int t) {
  const int64_t nb = w.cols / 256;
  const uint8_t* panel[NP];
  for (int i = 0; i < NP; ++i) panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  x_token xt[NT];
  token_pointers(x, t, xt);
  const __m512i low4 = _mm512_set1_epi8(0x0f), high2 = _mm512_set1_epi8(0x30);
  // (a & 0x0f) | (b & 0x30) given b already masked: bitwise select by low4.
  auto merge = [&](__m512i a, __m512i b) { return _mm512_ternarylogic_epi32(a, b, low4, 0xE4); };
  __m512 acc[NP][NT];
  for (int i = 0; i < NP; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec[NP];
    for (int i = 0; i < NP; ++i) rec[i] = panel[i] + b * record_q6_k;
    const records_ahead<NP> ahead(panel, NP * w.panel_bytes, nb, record_q6_k, b + k_prefetch_records);
    __m512 sum[NP][NT];
    for (int i = 0; i < NP; ++i)
      for (int j = 0; j < NT; ++j) sum[i][j] = _mm512_setzero_ps();
    for (int h = 0; h < 2; ++h) {
      for (int half2 = 0; half2 < 2; ++half2) {
        // Sub-blocks 8h + 2c + half2 for c = 0..3.
        __m512i dot[NP][NT][4];
        for (int j = 0; j < NT; ++j) {
          const auto* corr = reinterpret_cast<const int32_t*>(xt[j].aux + b * 128 + 64);
          for (int c = 0; c < 4; ++c) {
            const __m512i c0 = _mm512_set1_epi32(corr[8 * h + 2 * c + half2]);
            for (int i = 0; i < NP; ++i) dot[i][j][c] = c0;
          }
        }
        for (int lq = 4 * half2; lq < 4 * half2 + 4; ++lq) {
          ahead.step(8 * h + lq, 16);
          __m512i codes[NP][4];
          for (int i = 0; i < NP; ++i) {
            const uint8_t* g = rec[i] + 320 + (h * 8 + lq) * 3 * 64;
            const __m512i a = _mm512_load_si512(g), bq = _mm512_load_si512(g + 64), hb = _mm512_load_si512(g + 128);
            codes[i][0] = merge(a, _mm512_and_si512(_mm512_slli_epi16(hb, 4), high2));
            codes[i][1] = merge(bq, _mm512_and_si512(_mm512_slli_epi16(hb, 2), high2));
            codes[i][2] = merge(_mm512_srli_epi16(a, 4), _mm512_and_si512(hb, high2));
            codes[i][3] = merge(_mm512_srli_epi16(bq, 4), _mm512_and_si512(_mm512_srli_epi16(hb, 2), high2));
          }
          for (int j = 0; j < NT; ++j) {
            for (int c = 0; c < 4; ++c) {
              const __m512i xv = broadcast_dword(xt[j].q + b * 256 + 128 * h + 32 * c + 4 * lq);
              for (int i = 0; i < NP; ++i) dot[i][j][c] = _mm512_dpbusd_epi32(dot[i][j][c], codes[i][c], xv);
            }
          }
        }
        for (int i = 0; i < NP; ++i) {
          const __m512 d = load_half16(rec[i]);
          for (int c = 0; c < 4; ++c) {
            const __m512 s = scale_i8(rec[i] + 64 + 16 * (8 * h + 2 * c + half2), d);
            for (int j = 0; j < NT; ++j) sum[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][j][c]), s, sum[i][j]);
          }
        }
      }
    }
    for (int i = 0; i < NP; ++i)
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_fmadd_ps(sum[i][j], _mm512_set1_ps(xt[j].d[b]), acc[i][j]);
  }
  store_tile<NP, NT>(w, p, t, acc);
}

// Batched q6_k (2 tokens and up): one panel against every token of the task,
// as q4_panel_all_tokens does for q4_0. Each 64-byte group of codes is loaded
// and unpacked once and feeds all tokens (tinyllama's output head at a verify
// step of 1 + 8 tokens unpacked every group three times, once per pass of 3
// tokens); the per-token float sums live in L1 buffers. Tokens go in groups
// of at most 3 (3 x 4 sub-block chains, with the 16 unpacked code registers),
// sized evenly. Sums in the same order as tile_q6_k: same results.
#define CORTEX_INLINE inline __attribute__((always_inline))

constexpr int k_panel_max_tokens = 32;
constexpr int q6_group_max = 3;

constexpr int q4_k_group_max = 5;

// q4_k: pair pr of sub-blocks (2 pr, 2 pr + 1) for G tokens, the codes
// unpacked (lo: sub-block 2 pr, hi: 2 pr + 1).
template <int G>
CORTEX_INLINE void q4_k_group(const __m512i (&lo)[8], const __m512i (&hi)[8], const __m512* s, const uint8_t* xbase,
                              size_t stride, int64_t b, int pr, float* sum) {
  __m512i da[G], db[G];
  for (int j = 0; j < G; ++j) da[j] = db[j] = _mm512_setzero_si512();
  for (int g = 0; g < 8; ++g) {
    for (int j = 0; j < G; ++j) {
      const int8_t* xq = reinterpret_cast<const int8_t*>(xbase + j * stride) + b * 256 + 64 * pr + 4 * g;
      dpbusd_inplace_bcast(da[j], lo[g], xq);
      dpbusd_inplace_bcast(db[j], hi[g], xq + 32);
    }
  }
  for (int j = 0; j < G; ++j) {
    __m512 r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(da[j]), s[0], _mm512_load_ps(sum + 16 * j));
    _mm512_store_ps(sum + 16 * j, _mm512_fmadd_ps(_mm512_cvtepi32_ps(db[j]), s[1], r));
  }
}

CORTEX_INLINE void q4_k_group_of(int n, const __m512i (&lo)[8], const __m512i (&hi)[8], const __m512* s,
                                 const uint8_t* xbase, size_t stride, int64_t b, int pr, float* sum) {
  static_assert(q4_k_group_max == 5, "the switch below covers group sizes 1..5");
  switch (n) {
    case 5: q4_k_group<5>(lo, hi, s, xbase, stride, b, pr, sum); break;
    case 4: q4_k_group<4>(lo, hi, s, xbase, stride, b, pr, sum); break;
    case 3: q4_k_group<3>(lo, hi, s, xbase, stride, b, pr, sum); break;
    case 2: q4_k_group<2>(lo, hi, s, xbase, stride, b, pr, sum); break;
    default: q4_k_group<1>(lo, hi, s, xbase, stride, b, pr, sum); break;
  }
}

// One super-block of a panel kernel's call, as k_panel_chunks hands it out.
struct k_block {
  const uint8_t* xt;          // the chunk's first token's activations
  int nt;                     // tokens in the chunk
  const even_split& groups;   // the nt tokens in the kernel's groups
  int64_t b;                  // super-block
  const uint8_t* rec;         // its record in the panel
  __m512 d;                   // its super-block scale (16 rows)
  float* sum;                 // per-token float sums of b (16 floats each), zeroed
  float* acc;                 // per-token accumulators of the chunk
  const uint8_t* ahead;       // the record two super-blocks ahead
  int64_t record_bytes;
  // Prefetches quarter q (0..3) of `ahead`: each of a super-block's four
  // parts brings a quarter of the record it will need two blocks later.
  void prefetch_quarter(int q) const { prefetch_lines(ahead + q * (record_bytes / 4), record_bytes / 4); }
};

// For each chunk of at most k_panel_max_tokens tokens of the call: the
// chunk's float accumulators (16 rows per token, in L1) zeroed,
// super_block(k_block) for every super-block of panel p (records of
// Record bytes), and the accumulators stored to panel p's rows. Tokens go
// in groups of at most GroupMax, sized evenly.
template <int64_t Record, int GroupMax, class SuperBlock>
CORTEX_INLINE void k_panel_chunks(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p,
                                  SuperBlock&& super_block) {
  const int64_t nb = w.cols / 256;
  const uint8_t* panel = w.data + static_cast<size_t>(p) * w.panel_bytes;
  alignas(64) float acc[k_panel_max_tokens * 16];
  alignas(64) float sum[k_panel_max_tokens * 16];
  for (int t0 = 0; t0 < n_tokens; t0 += k_panel_max_tokens) {
    const int nt = n_tokens - t0 < k_panel_max_tokens ? n_tokens - t0 : k_panel_max_tokens;
    const even_split groups(nt, GroupMax);
    for (int j = 0; j < nt; ++j) _mm512_store_ps(acc + 16 * j, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; ++b) {
      for (int j = 0; j < nt; ++j) _mm512_store_ps(sum + 16 * j, _mm512_setzero_ps());
      const uint8_t* rec = panel + b * Record;
      super_block(k_block{x.data + static_cast<size_t>(t0) * x.stride, nt, groups, b, rec, load_half16(rec), sum, acc,
                          record_ahead(panel, panel + w.panel_bytes, nb, Record, b + 2), Record});
    }
    const packed_dest dst = packed_dest_of(w, p);
    const __mmask16 m = panel_rows_mask(dst.valid);
    for (int j = 0; j < nt; ++j) _mm512_mask_storeu_ps(dst.y + (t0 + j) * dst.ld, m, _mm512_load_ps(acc + 16 * j));
  }
}

// Batched q4_k / q5_k: as q6_k_panel_all_tokens below (sums in tile_k4's
// order).
template <bool High>
void k4_panel_all_tokens(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p) {
  using fmt = k4_format<High>;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  alignas(64) __m512 s[2];
  k_panel_chunks<fmt::record, q4_k_group_max>(w, x, n_tokens, p, [&](const k_block& k) {
    for (int pr = 0; pr < 4; ++pr) {
      k.prefetch_quarter(pr);
      s[0] = scale_u8(k.rec + 64 + 16 * (2 * pr), k.d);
      s[1] = scale_u8(k.rec + 64 + 16 * (2 * pr + 1), k.d);
      __m512i lo[8], hi[8];
      for (int g = 0; g < 8; ++g) {
        const __m512i v = _mm512_load_si512(k.rec + 320 + (pr * 8 + g) * 64);
        lo[g] = _mm512_and_si512(v, low4);
        hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        fmt::add_high_bits(k.rec, pr, g, lo[g], hi[g]);
      }
      for (int i = 0, j = 0; i < k.groups.count; ++i) {
        const int g_size = k.groups.size(i);
        q4_k_group_of(g_size, lo, hi, s, k.xt + j * x.stride, x.stride, k.b, pr, k.sum + 16 * j);
        j += g_size;
      }
    }
    __m512i mins[4];
    k4_load_mins(k.rec, mins);
    const __m512 dmin = load_half16(k.rec + 32);
    for (int j = 0; j < k.nt; ++j) {
      const __m512i msum = k4_min_dots(mins, k.xt + j * x.stride + x.aux_offset + k.b * 128);
      const __m512 sj = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, _mm512_load_ps(k.sum + 16 * j));
      const float dx = reinterpret_cast<const float*>(k.xt + j * x.stride + x.d_offset)[k.b];
      _mm512_store_ps(k.acc + 16 * j, _mm512_fmadd_ps(sj, _mm512_set1_ps(dx), _mm512_load_ps(k.acc + 16 * j)));
    }
  });
}

template <int G>
CORTEX_INLINE void q6_k_group(const __m512i (&codes)[4][4], const __m512* s, const uint8_t* xbase, size_t stride,
                              size_t aux_offset, int64_t b, int h, int half2, float* sum) {
  __m512i dot[G][4];
  for (int j = 0; j < G; ++j) {
    const auto* corr = reinterpret_cast<const int32_t*>(xbase + j * stride + aux_offset + b * 128 + 64);
    for (int c = 0; c < 4; ++c) dot[j][c] = _mm512_set1_epi32(corr[8 * h + 2 * c + half2]);
  }
  for (int l = 0; l < 4; ++l) {
    const int lq = 4 * half2 + l;
    for (int j = 0; j < G; ++j) {
      const int8_t* xq = reinterpret_cast<const int8_t*>(xbase + j * stride) + b * 256 + 128 * h + 4 * lq;
      for (int c = 0; c < 4; ++c) dpbusd_inplace_bcast(dot[j][c], codes[l][c], xq + 32 * c);
    }
  }
  for (int j = 0; j < G; ++j) {
    __m512 r = _mm512_load_ps(sum + 16 * j);
    for (int c = 0; c < 4; ++c) r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[j][c]), s[c], r);
    _mm512_store_ps(sum + 16 * j, r);
  }
}

CORTEX_INLINE void q6_k_group_of(int n, const __m512i (&codes)[4][4], const __m512* s, const uint8_t* xbase,
                                 size_t stride, size_t aux_offset, int64_t b, int h, int half2, float* sum) {
  static_assert(q6_group_max == 3, "the switch below covers group sizes 1..3");
  switch (n) {
    case 3: q6_k_group<3>(codes, s, xbase, stride, aux_offset, b, h, half2, sum); break;
    case 2: q6_k_group<2>(codes, s, xbase, stride, aux_offset, b, h, half2, sum); break;
    default: q6_k_group<1>(codes, s, xbase, stride, aux_offset, b, h, half2, sum); break;
  }
}

void q6_k_panel_all_tokens(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), high2 = _mm512_set1_epi8(0x30);
  auto merge = [&](__m512i a, __m512i b) { return _mm512_ternarylogic_epi32(a, b, low4, 0xE4); };
  alignas(64) __m512 s[4];
  k_panel_chunks<record_q6_k, q6_group_max>(w, x, n_tokens, p, [&](const k_block& k) {
    for (int h = 0; h < 2; ++h) {
      for (int half2 = 0; half2 < 2; ++half2) {
        k.prefetch_quarter(2 * h + half2);
        for (int c = 0; c < 4; ++c) s[c] = scale_i8(k.rec + 64 + 16 * (8 * h + 2 * c + half2), k.d);
        __m512i codes[4][4];
        for (int l = 0; l < 4; ++l) {
          const uint8_t* g = k.rec + 320 + (h * 8 + 4 * half2 + l) * 3 * 64;
          const __m512i a = _mm512_load_si512(g), bq = _mm512_load_si512(g + 64), hb = _mm512_load_si512(g + 128);
          codes[l][0] = merge(a, _mm512_and_si512(_mm512_slli_epi16(hb, 4), high2));
          codes[l][1] = merge(bq, _mm512_and_si512(_mm512_slli_epi16(hb, 2), high2));
          codes[l][2] = merge(_mm512_srli_epi16(a, 4), _mm512_and_si512(hb, high2));
          codes[l][3] = merge(_mm512_srli_epi16(bq, 4), _mm512_and_si512(_mm512_srli_epi16(hb, 2), high2));
        }
        for (int i = 0, j = 0; i < k.groups.count; ++i) {
          const int g_size = k.groups.size(i);
          q6_k_group_of(g_size, codes, s, k.xt + j * x.stride, x.stride, x.aux_offset, k.b, h, half2, k.sum + 16 * j);
          j += g_size;
        }
      }
    }
    for (int j = 0; j < k.nt; ++j) {
      const float dx = reinterpret_cast<const float*>(k.xt + j * x.stride + x.d_offset)[k.b];
      _mm512_store_ps(k.acc + 16 * j,
                      _mm512_fmadd_ps(_mm512_load_ps(k.sum + 16 * j), _mm512_set1_ps(dx), _mm512_load_ps(k.acc + 16 * j)));
    }
  });
}

template <int NP, int NT>
struct q4_k_tile {
  static void run(const packed_view& w, const quantized_x& x, int64_t p, int t) { tile_k4<false, NP, NT>(w, x, p, t); }
};
template <int NP, int NT>
struct q5_k_tile {
  static void run(const packed_view& w, const quantized_x& x, int64_t p, int t) { tile_k4<true, NP, NT>(w, x, p, t); }
};
template <int NP, int NT>
struct q6_k_tile {
  static void run(const packed_view& w, const quantized_x& x, int64_t p, int t) { tile_q6_k<NP, NT>(w, x, p, t); }
};

// Decode: the tiles, two panels per pass; 2 tokens and up: Panel, each
// panel's codes unpacked once for all tokens.
template <template <int, int> class Tile, void (*Panel)(const packed_view&, const quantized_x&, int, int64_t)>
void packed_rows_k(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  if (n_tokens == 1) {
    int64_t p = p0;
    for (; p + 2 <= p1; p += 2) Tile<2, 1>::run(w, x, p, 0);
    for (; p < p1; ++p) Tile<1, 1>::run(w, x, p, 0);
    return;
  }
  for (int64_t p = p0; p < p1; ++p) Panel(w, x, n_tokens, p);
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp. Decode: the tiles at one
// token. 2 tokens and up (a verify step, prefill): the panel kernels, whose
// unpacking of a 64-byte load of codes (3 ALU ops for q4_k, ~13/4 for q6_k)
// is shared by every token of the call.
extern const packed_rows_fn packed_avx512_q4_k = packed_rows_k<q4_k_tile, k4_panel_all_tokens<false>>,
                            packed_avx512_q5_k = packed_rows_k<q5_k_tile, k4_panel_all_tokens<true>>,
                            packed_avx512_q6_k = packed_rows_k<q6_k_tile, q6_k_panel_all_tokens>;

}  // namespace cortex::kernels
