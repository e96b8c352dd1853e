// AMX tile kernels for packed q4_0 / q5_0 / q8_0 / iq4_nl / mxfp4 and q4_k /
// q5_k weights, written once over a tile class (kernels/amx_tiles.hpp):
// instantiated on the real tiles in x86/matmul_packed_amx.cpp and on the
// emulation in x86/matmul_packed_amx_emu_avx512.cpp. Included by those two
// translation units only (everything here is in an unnamed namespace).
//
// A panel already holds each 32-column block (a sub-block of a k-quant) as
// 8 groups of 64 bytes: group k, row r = the 4 codes of columns 4k .. 4k + 3
// of weight row r. That is AMX's B operand (K / 4 rows of N x 4 bytes) for
// K = 32 and N = 16 rows: q8_0's codes are the B tile as stored, nibble
// types unpack theirs (the same unpacking as the VNNI kernels) into a
// 512-byte buffer. A is the activations' q8 codes of 16 tokens, 32 bytes a
// token, read in place (the token stride is the tile's row stride). One
// TDPBSUD (A signed, B unsigned) gives the int32 block dots of 16 tokens x
// 16 rows; they are stored and go through the float epilogue of the VNNI
// kernels, operation for operation and in the same block order, so every
// output is the VNNI kernel's bits: a token gives the same result whether
// its step ran on AMX (prefill) or on VNNI (decode).
//
// Tiles (palette 1): C(i, j) = tmm(2i + j), the dots of panel i (0, 1) and
// token group j (0, 1: 16 tokens each); A(j) = tmm(4 + j); B(i) = tmm(6 + i).
// Calls take at most 2 panels x 32 tokens at a time; a group of fewer
// tokens reconfigures its A and C tiles to that many rows.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/amx_tiles.hpp"
#include "kernels/matmul_kernels.hpp"
#include "kernels/x86/matmul_tile_loop.hpp"
#include "kernels/x86/packed_codes_avx512.hpp"

namespace cortex::kernels {
namespace {

constexpr int amx_group_tokens = 16;  // M of a tile
constexpr int amx_chunk_tokens = 2 * amx_group_tokens;

// Tokens in groups 0 and 1 of a chunk; the tile shapes follow.
struct amx_groups {
  int m0 = 0, m1 = 0;
  bool operator!=(const amx_groups& o) const { return m0 != o.m0 || m1 != o.m1; }
};

inline amx_tile_config amx_config_of(amx_groups g) {
  amx_tile_config c;
  c.palette_id = 1;
  const int m[2] = {g.m0, g.m1};
  for (int j = 0; j < 2; ++j) {
    if (m[j] == 0) continue;
    for (int i = 0; i < 2; ++i) {
      c.rows[2 * i + j] = static_cast<uint8_t>(m[j]);
      c.colsb[2 * i + j] = 64;  // 16 rows' int32
    }
    c.rows[4 + j] = static_cast<uint8_t>(m[j]);
    c.colsb[4 + j] = 32;  // one block of activation codes
  }
  for (int i = 0; i < 2; ++i) {
    c.rows[6 + i] = 8;  // K / 4
    c.colsb[6 + i] = 64;
  }
  return c;
}

// int32 block dots of a chunk: [panel][group][token of the group][row].
struct amx_dots {
  alignas(64) int32_t v[2][2][amx_group_tokens][16];
};

// dots(i, j) = A(j) . B(i) for NP panels (B tiles at b[i], 8 rows of 64
// bytes) and the chunk's groups (A rows at a, a_stride apart, 32 bytes each).
template <class Tiles, int NP>
inline void amx_block_dots(const uint8_t* const (&b)[NP], const uint8_t* a, size_t a_stride, bool two_groups,
                           amx_dots& out) {
  Tiles::template load<6>(b[0], 64);
  Tiles::template load<4>(a, a_stride);
  Tiles::template zero<0>();
  Tiles::template dpbsud<0, 4, 6>();
  if constexpr (NP == 2) {
    Tiles::template load<7>(b[1], 64);
    Tiles::template zero<2>();
    Tiles::template dpbsud<2, 4, 7>();
  }
  if (two_groups) {
    Tiles::template load<5>(a + amx_group_tokens * a_stride, a_stride);
    Tiles::template zero<1>();
    Tiles::template dpbsud<1, 5, 6>();
    if constexpr (NP == 2) {
      Tiles::template zero<3>();
      Tiles::template dpbsud<3, 5, 7>();
    }
  }
  Tiles::template store<0>(out.v[0][0], 64);
  if constexpr (NP == 2) Tiles::template store<2>(out.v[1][0], 64);
  if (two_groups) {
    Tiles::template store<1>(out.v[0][1], 64);
    if constexpr (NP == 2) Tiles::template store<3>(out.v[1][1], 64);
  }
}

// The 16 int32 dots of token t (0..31) of the chunk, panel i.
inline __m512i amx_dots_of(const amx_dots& d, int i, int t) {
  return _mm512_load_si512(d.v[i][t / amx_group_tokens][t % amx_group_tokens]);
}

// What a kernel computes at a time: panels [p, p + NP) against the chunk's
// tokens, each token's 16 outputs per panel left in acc.
template <int NP>
struct amx_chunk {
  const uint8_t* panel[NP];
  const uint8_t* xt;                   // the activations of the chunk's first token
  int nt;                              // its tokens, 1..32
  bool two_groups;                     // nt > 16
  float (*acc)[amx_chunk_tokens][16];  // acc[i][t]: panel i, token t; zero at the start
};

// Runs panels [p, p + NP) against every token in chunks of 32: chunk(c)
// fills c.acc, which goes to the panels' rows.
template <class Tiles, int NP, class Chunk>
void amx_for_each_chunk(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p, amx_groups& shape,
                        Chunk&& chunk) {
  alignas(64) float acc[NP][amx_chunk_tokens][16];
  amx_chunk<NP> c;
  for (int i = 0; i < NP; ++i) c.panel[i] = w.data + static_cast<size_t>(p + i) * w.panel_bytes;
  c.acc = acc;
  for (int t0 = 0; t0 < n_tokens; t0 += amx_chunk_tokens) {
    const int nt = n_tokens - t0 < amx_chunk_tokens ? n_tokens - t0 : amx_chunk_tokens;
    const amx_groups g{nt < amx_group_tokens ? nt : amx_group_tokens,
                       nt > amx_group_tokens ? nt - amx_group_tokens : 0};
    if (g != shape) {
      Tiles::configure(amx_config_of(g));
      shape = g;
    }
    for (int i = 0; i < NP; ++i)
      for (int t = 0; t < nt; ++t) _mm512_store_ps(acc[i][t], _mm512_setzero_ps());
    c.xt = x.data + static_cast<size_t>(t0) * x.stride;
    c.nt = nt;
    c.two_groups = g.m1 > 0;
    chunk(static_cast<const amx_chunk<NP>&>(c));
    for (int i = 0; i < NP; ++i) {
      const packed_dest d = packed_dest_of(w, p + i);
      const __mmask16 m = panel_rows_mask(d.valid);
      for (int t = 0; t < nt; ++t) _mm512_mask_storeu_ps(d.y + (t0 + t) * d.ld, m, _mm512_load_ps(acc[i][t]));
    }
  }
}

// ---- q4_0 / q5_0 / q8_0 / iq4_nl / mxfp4 (kernels/x86/matmul_tile_loop.hpp's Fmt)

// Block b's B tile of a panel: q8_0's codes as stored; a nibble type's
// unpacked into buf (rows 0..3: columns 4g.., the low nibbles; rows 4..7:
// 16 + 4g.., the high ones).
template <class Fmt>
inline const uint8_t* amx_b_tile(const uint8_t* codes, __m512i lut, uint8_t* buf) {
  if constexpr (Fmt::block_code_bytes == 512) {
    return codes;
  } else {
    const __m512i bits = fifth_bits_of<Fmt>(codes);
    for (int g = 0; g < 4; ++g) {
      __m512i lo, hi;
      nibble_group<Fmt>(codes, bits, g, lut, lo, hi);
      _mm512_store_si512(buf + 64 * g, lo);
      _mm512_store_si512(buf + 256 + 64 * g, hi);
    }
    return buf;
  }
}

template <class Tiles, class Fmt>
struct amx_q8p {
  template <int NP>
  static void run(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p, amx_groups& shape) {
    constexpr int64_t record = record_header + 2 * Fmt::block_code_bytes;
    // Every block of the last record, the zero padding block too: the VNNI
    // kernels add its (zero) product as well, and -0 + 0 is +0.
    const int64_t n_blocks = 2 * ((w.cols / 32 + 1) / 2);
    const __m512i lut = lut_vector<Fmt>();
    alignas(64) uint8_t buf[NP][512];
    amx_dots dots;
    amx_for_each_chunk<Tiles, NP>(w, x, n_tokens, p, shape, [&](const amx_chunk<NP>& c) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* bt[NP];
        __m512 dw[NP];
        for (int i = 0; i < NP; ++i) {
          const uint8_t* rec = c.panel[i] + (b / 2) * record;
          bt[i] = amx_b_tile<Fmt>(rec + record_header + (b % 2) * Fmt::block_code_bytes, lut, buf[i]);
          dw[i] = block_scales<Fmt>(rec + (b % 2) * 32);
        }
        amx_block_dots<Tiles, NP>(bt, c.xt + b * 32, x.stride, c.two_groups, dots);
        // The VNNI epilogue: acc += float(corr + dot) * (dw * dx).
        for (int t = 0; t < c.nt; ++t) {
          const uint8_t* xr = c.xt + static_cast<size_t>(t) * x.stride;
          const __m512i corr = _mm512_set1_epi32(reinterpret_cast<const int32_t*>(xr + x.aux_offset)[b]);
          const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(xr + x.d_offset)[b]);
          for (int i = 0; i < NP; ++i) {
            const __m512i ia = _mm512_add_epi32(corr, amx_dots_of(dots, i, t));
            _mm512_store_ps(c.acc[i][t], _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(dw[i], dx),
                                                         _mm512_load_ps(c.acc[i][t])));
          }
        }
      }
    });
  }
};

// ---- q4_k / q5_k: one TDPBSUD per 32-column sub-block

template <class Tiles, bool High>
struct amx_k4 {
  template <int NP>
  static void run(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p, amx_groups& shape) {
    using fmt = k4_format<High>;
    const int64_t nb = w.cols / 256;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    alignas(64) uint8_t buf[NP][2][512];  // B tiles of sub-blocks 2 pr and 2 pr + 1
    alignas(64) float sum[NP][amx_chunk_tokens][16];
    amx_dots dots;
    amx_for_each_chunk<Tiles, NP>(w, x, n_tokens, p, shape, [&](const amx_chunk<NP>& c) {
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec[NP];
        for (int i = 0; i < NP; ++i) rec[i] = c.panel[i] + b * fmt::record;
        for (int i = 0; i < NP; ++i)
          for (int t = 0; t < c.nt; ++t) _mm512_store_ps(sum[i][t], _mm512_setzero_ps());
        for (int pr = 0; pr < 4; ++pr) {
          __m512 s[NP][2];
          for (int i = 0; i < NP; ++i) {
            const __m512 d = load_half16(rec[i]);
            s[i][0] = scale_u8(rec[i] + 64 + 16 * (2 * pr), d);
            s[i][1] = scale_u8(rec[i] + 64 + 16 * (2 * pr + 1), d);
            for (int g = 0; g < 8; ++g) {
              const __m512i v = _mm512_load_si512(rec[i] + 320 + (pr * 8 + g) * 64);
              __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
              fmt::add_high_bits(rec[i], pr, g, lo, hi);
              _mm512_store_si512(buf[i][0] + 64 * g, lo);
              _mm512_store_si512(buf[i][1] + 64 * g, hi);
            }
          }
          // Sub-blocks 2 pr then 2 pr + 1, as the VNNI kernels sum them:
          // sum += float(dot) * (d * scale).
          for (int h = 0; h < 2; ++h) {
            const uint8_t* bt[NP];
            for (int i = 0; i < NP; ++i) bt[i] = buf[i][h];
            amx_block_dots<Tiles, NP>(bt, c.xt + b * 256 + 64 * pr + 32 * h, x.stride, c.two_groups, dots);
            for (int t = 0; t < c.nt; ++t) {
              for (int i = 0; i < NP; ++i) {
                _mm512_store_ps(sum[i][t], _mm512_fmadd_ps(_mm512_cvtepi32_ps(amx_dots_of(dots, i, t)), s[i][h],
                                                           _mm512_load_ps(sum[i][t])));
              }
            }
          }
        }
        // The mins and the token's scale, as the VNNI kernels:
        // acc += (sum - float(mins . bsum32) * dmin) * dx.
        for (int i = 0; i < NP; ++i) {
          __m512i mins[4];
          k4_load_mins(rec[i], mins);
          const __m512 dmin = load_half16(rec[i] + 32);
          for (int t = 0; t < c.nt; ++t) {
            const uint8_t* xr = c.xt + static_cast<size_t>(t) * x.stride;
            const __m512i msum = k4_min_dots(mins, xr + x.aux_offset + b * 128);
            const __m512 st = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, _mm512_load_ps(sum[i][t]));
            const float dx = reinterpret_cast<const float*>(xr + x.d_offset)[b];
            _mm512_store_ps(c.acc[i][t], _mm512_fmadd_ps(st, _mm512_set1_ps(dx), _mm512_load_ps(c.acc[i][t])));
          }
        }
      }
    });
  }
};

// A packed_rows_fn from Panels::run<NP>: panel pairs, then a lone panel;
// the tiles are released at the end of the call.
template <class Tiles, class Panels>
void amx_packed_rows(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  amx_groups shape;
  int64_t p = p0;
  for (; p + 2 <= p1; p += 2) Panels::template run<2>(w, x, n_tokens, p, shape);
  if (p < p1) Panels::template run<1>(w, x, n_tokens, p, shape);
  Tiles::release();
}

}  // namespace
}  // namespace cortex::kernels

// Defines the exported kernels of one tile class (named by the rows of
// kernels/quant_traits.cpp): <prefix>q4_0, <prefix>q5_0, ...
#define CORTEX_AMX_EXPORT_KERNELS(prefix, Tiles)                                                   \
  namespace cortex::kernels {                                                                      \
  extern const packed_rows_fn prefix##q4_0 = amx_packed_rows<Tiles, amx_q8p<Tiles, fmt_q4_0>>,     \
                              prefix##q5_0 = amx_packed_rows<Tiles, amx_q8p<Tiles, fmt_q5_0>>,     \
                              prefix##q8_0 = amx_packed_rows<Tiles, amx_q8p<Tiles, fmt_q8_0>>,     \
                              prefix##iq4_nl = amx_packed_rows<Tiles, amx_q8p<Tiles, fmt_iq4_nl>>, \
                              prefix##mxfp4 = amx_packed_rows<Tiles, amx_q8p<Tiles, fmt_mxfp4>>,   \
                              prefix##q4_k = amx_packed_rows<Tiles, amx_k4<Tiles, false>>,         \
                              prefix##q5_k = amx_packed_rows<Tiles, amx_k4<Tiles, true>>;          \
  }
