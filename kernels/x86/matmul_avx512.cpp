// AVX-512 (F/BW/VL/DQ + VNNI) matmul kernels: f32/f16/bf16, the q8_32
// quant types (q4_0, q5_0, q8_0, and the table types iq4_nl, mxfp4) and the
// q8_1 ones (q4_1, q5_1). Only the kernels named at the end are exported.
//
// Quant kernels take two blocks (64 codes) per zmm. Weight codes are made
// unsigned (q8_0, iq4_nl: +128; mxfp4: +16) so vpdpbusd(codes u8, x s8)
// applies; the zero point
// comes back through the activation's cxv term: per block
//   (sum(code * xq) * dx - offset * sum(xq) * dx) * dw,
// and q4_1 / q5_1's min through q8_1's s: sum(code * xq) * dx * dw + m * s.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/x86/matmul_isa_avx512.hpp"
#include "kernels/x86/matmul_tile_body.hpp"

namespace cortex::kernels {

namespace {

// ---- float weights --------------------------------------------------------

struct load_f32 {
  static __m512 load(const uint8_t* row, int64_t k) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
  static __m512 load_tail(const uint8_t* row, int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
  }
};

struct load_f16 {
  static __m512 load(const uint8_t* row, int64_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k * 2)));
  }
  static __m512 load_tail(const uint8_t* row, int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + k * 2));
  }
};

struct load_bf16 {
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 load(const uint8_t* row, int64_t k) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k * 2)));
  }
  static __m512 load_tail(const uint8_t* row, int64_t k, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, row + k * 2));
  }
};

// ---- q8_32 weights --------------------------------------------------------

__m512i broadcast_halves(__m128i a, __m128i b) {
  return _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_broadcastsi128_si256(a)), _mm256_broadcastsi128_si256(b), 1);
}

// Nibbles of [a, a, b, b] (16 bytes each) -> [a lo, a hi, b lo, b hi].
__m512i split_nibbles(__m512i v) {
  return _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0f));
}

// Each unpack gives unsigned codes of blocks b, b+1 (pair) or of block b in
// the low half and zeros above (single), element j of block b in byte j.
template <class Block>
struct unpack_nibbles {
  using block = Block;
  static __m512i pair(const block* b) {
    return split_nibbles(broadcast_halves(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs))));
  }
  static __m512i single(const block* b) {
    return split_nibbles(_mm512_zextsi256_si512(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)))));
  }
};

using unpack_q4_0 = unpack_nibbles<block_q4_0>;
using unpack_q4_1 = unpack_nibbles<block_q4_1>;

// Nibbles plus the fifth bit of element j from bit j of qh.
template <class Block>
struct unpack_five_bits {
  using block = Block;
  static uint64_t high_bits(const block& b) {
    uint32_t qh;
    __builtin_memcpy(&qh, b.qh, 4);
    return qh;
  }
  static __m512i pair(const block* b) {
    const __m512i lo = split_nibbles(broadcast_halves(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)),
                                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs))));
    const __mmask64 hi = high_bits(b[0]) | (high_bits(b[1]) << 32);
    return _mm512_or_si512(lo, _mm512_maskz_mov_epi8(hi, _mm512_set1_epi8(0x10)));
  }
  static __m512i single(const block* b) {
    const __m512i lo = split_nibbles(_mm512_zextsi256_si512(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)))));
    return _mm512_or_si512(lo, _mm512_maskz_mov_epi8(high_bits(b[0]), _mm512_set1_epi8(0x10)));
  }
};

using unpack_q5_0 = unpack_five_bits<block_q5_0>;
using unpack_q5_1 = unpack_five_bits<block_q5_1>;

struct unpack_q8_0 {
  using block = block_q8_0;
  static __m512i pair(const block* b) {
    const __m512i v = _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
    return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static __m512i single(const block* b) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    return _mm512_zextsi256_si512(_mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))));
  }
};

// Nibbles looked up in a 16-entry value table (iq4_nl, mxfp4), offset to
// unsigned bytes by the type's zero point: 128 for iq4_nl's -127..113 (as
// q8_0), 16 for mxfp4's -12..12 (a smaller offset loses fewer bits when
// cxv takes it back out).
template <class Block, const int8_t (&Table)[16], int ZeroPoint>
struct unpack_table {
  using block = Block;
  static __m512i lookup(__m512i codes) {
    const __m512i t = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(Table)));
    return _mm512_shuffle_epi8(_mm512_add_epi8(t, _mm512_set1_epi8(static_cast<char>(ZeroPoint))), codes);
  }
  static __m512i pair(const block* b) { return lookup(unpack_nibbles<Block>::pair(b)); }
  static __m512i single(const block* b) { return lookup(unpack_nibbles<Block>::single(b)); }
};

using unpack_iq4_nl = unpack_table<block_iq4_nl, kvalues_iq4nl, 128>;
using unpack_mxfp4 = unpack_table<block_mxfp4, kvalues_mxfp4, 16>;

// A block's scale: its f16 d, or mxfp4's E8M0 exponent.
template <class Block>
float block_scale(const Block& b) {
  return _cvtsh_ss(b.d);
}
float block_scale(const block_mxfp4& b) { return e8m0_half_to_fp32(b.e); }

// Scale vector of blocks b, b+1: lanes 0-7 d of b, lanes 8-15 d of b+1.
// One masked load (never past block b+1) and one word permute.
template <class Block>
struct pair_scale_index {
  static constexpr int stride = sizeof(Block) / 2;  // block size in 16-bit words
  alignas(64) uint16_t words[32];
  constexpr pair_scale_index() : words{} {
    for (int i = 8; i < 16; ++i) words[i] = stride;
  }
};

template <class Block>
__m512 pair_scales(const Block* b) {
  static_assert(sizeof(Block) % 2 == 0 && offsetof(Block, d) == 0, "f16 d first, word-aligned blocks");
  static constexpr pair_scale_index<Block> index{};
  constexpr int stride = pair_scale_index<Block>::stride;
  const __m512i v = _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1u << (stride + 1)) - 1), b);
  const __m512i d = _mm512_permutexvar_epi16(_mm512_load_si512(index.words), v);
  return _mm512_cvtph_ps(_mm512_castsi512_si256(d));
}

// mxfp4 blocks (17 bytes, an exponent byte for a scale) take theirs one by one.
__m512 pair_scales(const block_mxfp4* b) {
  return _mm512_insertf32x8(_mm512_set1_ps(block_scale(b[0])), _mm256_set1_ps(block_scale(b[1])), 1);
}

// Scale and min vectors of blocks b, b+1 of q4_1 / q5_1 (d, m first): lanes
// 0-7 of blocks b, lanes 8-15 of b+1. One masked load of the words up to
// b+1's m and one word permute: d in words 0-15, m in words 16-31.
template <class Block>
struct pair_scale_min_index {
  static constexpr int stride = sizeof(Block) / 2;
  alignas(64) uint16_t words[32];
  constexpr pair_scale_min_index() : words{} {
    for (int i = 0; i < 32; ++i) words[i] = static_cast<uint16_t>((i / 16) + (i % 16 < 8 ? 0 : stride));
  }
};

template <class Block>
void pair_scales_mins(const Block* b, __m512& d, __m512& m) {
  static_assert(sizeof(Block) % 2 == 0 && offsetof(Block, d) == 0 && offsetof(Block, m) == 2,
                "f16 d then m first, word-aligned blocks");
  static constexpr pair_scale_min_index<Block> index{};
  constexpr int stride = pair_scale_min_index<Block>::stride;
  const __m512i v = _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1u << (stride + 2)) - 1), b);
  const __m512i w = _mm512_permutexvar_epi16(_mm512_load_si512(index.words), v);
  d = _mm512_cvtph_ps(_mm512_castsi512_si256(w));
  m = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(w, 1));
}

// The q8_32 steps of the generic tile (matmul_tile_body.hpp): two blocks
// (64 codes) per zmm, a single block for an odd last one.
struct avx512_q8_32 : avx512_isa {
  static constexpr int q8_blocks = 2;
  using qvec = __m512i;
  using wscale = facc;
  template <class Unpack, int n>
  static qvec codes(const typename Unpack::block* b) {
    if constexpr (n == 2) {
      return Unpack::pair(b);
    } else {
      return Unpack::single(b);
    }
  }
  template <int n, class Block>
  static facc scales(const Block* b) {
    if constexpr (n == 2) {
      return pair_scales(b);
    } else {
      return _mm512_set1_ps(block_scale(b[0]));
    }
  }
  struct q8_x {
    __m512i q;
    __m512 d, c;
  };
  static q8_x load_x(const uint8_t* xt, const quantized_x& x, int64_t b) {
    return {_mm512_load_si512(xt + b * 32), _mm512_load_ps(reinterpret_cast<const float*>(xt + x.d_offset + b * 32)),
            _mm512_load_ps(reinterpret_cast<const float*>(xt + x.aux_offset + b * 32))};
  }
  template <class Unpack>
  static facc dot(qvec wq, facc wd, const q8_x& xb, facc acc) {
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, xb.q);
    const __m512 s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), xb.d, xb.c);
    return _mm512_fmadd_ps(s, wd, acc);
  }
};

// The q8_1 steps (q4_1, q5_1 weights): the codes' dot as for q8_32, plus
// each weight block's min m times its activation block's s (lanes 0 and 8
// of sxv; the zero padding block's s is 0).
struct avx512_q8_1 : avx512_q8_32 {
  struct wscale {
    __m512 d, m;
  };
  template <int n, class Block>
  static wscale scales(const Block* b) {
    wscale s;
    if constexpr (n == 2) {
      pair_scales_mins(b, s.d, s.m);
    } else {
      s.d = _mm512_set1_ps(_cvtsh_ss(b[0].d));
      s.m = _mm512_set1_ps(_cvtsh_ss(b[0].m));
    }
    return s;
  }
  template <class Unpack>
  static facc dot(qvec wq, const wscale& w, const q8_x& xb, facc acc) {
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, xb.q);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), xb.d), w.d, acc);
    return _mm512_fmadd_ps(xb.c, w.m, acc);
  }
};

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_avx512_f32 = tiled_rows<float_tile<avx512_isa, load_f32>, 4, 4, 4>,
                            matmul_avx512_f16 = tiled_rows<float_tile<avx512_isa, load_f16>, 4, 4, 4>,
                            matmul_avx512_bf16 = tiled_rows<float_tile<avx512_isa, load_bf16>, 4, 4, 4>,
                            matmul_avx512_q4_0 = tiled_rows<q8_32_tile<avx512_q8_32, unpack_q4_0>, 4, 4, 3>,
                            matmul_avx512_q5_0 = tiled_rows<q8_32_tile<avx512_q8_32, unpack_q5_0>, 4, 4, 3>,
                            matmul_avx512_q8_0 = tiled_rows<q8_32_tile<avx512_q8_32, unpack_q8_0>, 4, 4, 3>,
                            matmul_avx512_q4_1 = tiled_rows<q8_32_tile<avx512_q8_1, unpack_q4_1>, 4, 4, 3>,
                            matmul_avx512_q5_1 = tiled_rows<q8_32_tile<avx512_q8_1, unpack_q5_1>, 4, 4, 3>,
                            matmul_avx512_iq4_nl = tiled_rows<q8_32_tile<avx512_q8_32, unpack_iq4_nl>, 4, 4, 3>,
                            matmul_avx512_mxfp4 = tiled_rows<q8_32_tile<avx512_q8_32, unpack_mxfp4>, 4, 4, 3>;

}  // namespace cortex::kernels
