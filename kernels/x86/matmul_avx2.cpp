// AVX2 matmul kernels: f32/f16/bf16, the q8_32 quant types (q4_0, q5_0,
// q8_0, and the table types iq4_nl, mxfp4) and the q8_1 ones (q4_1, q5_1).
// Only the kernels named at the end are exported (this file is compiled with
// -mavx2 -mfma -mf16c).
#include <immintrin.h>

#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/x86/matmul_isa_avx2.hpp"
#include "kernels/x86/matmul_tile_body.hpp"

namespace cortex::kernels {

namespace {

// ---- float weights --------------------------------------------------------

struct load_f32 {
  static __m256 load(const uint8_t* row, int64_t k) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
  static float load1(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};

struct load_f16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k * 2)));
  }
  static float load1(const uint8_t* row, int64_t k) {
    return _cvtsh_ss(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};

struct load_bf16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k * 2)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float load1(const uint8_t* row, int64_t k) {
    const uint32_t bits = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[k]) << 16;
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits))));
  }
};

// ---- q8_32 weights (blocks of 32 with one scale) --------------------------

// A block's scale: its f16 d, or mxfp4's E8M0 exponent.
template <class Block>
float block_scale(const Block& b) {
  return _cvtsh_ss(b.d);
}
float block_scale(const block_mxfp4& b) { return e8m0_half_to_fp32(b.e); }

// Each unpack gives the 32 codes of block b as bytes, element j in byte j:
// unsigned codes (zero point removed through cxv, or a min added through
// q8_1's s) or, for q8_0 and the table types, signed.
template <class Block>
struct unpack_nibbles {
  using block = Block;
  static constexpr bool is_signed = false;
  static __m256i codes(const block& b) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
  }
};

using unpack_q4_0 = unpack_nibbles<block_q4_0>;
using unpack_q4_1 = unpack_nibbles<block_q4_1>;

// Nibbles plus the fifth bit of element j from bit j of qh.
template <class Block>
struct unpack_five_bits {
  using block = Block;
  static constexpr bool is_signed = false;
  static __m256i codes(const block& b) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m256i lo = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
    int32_t qh;
    __builtin_memcpy(&qh, b.qh, 4);
    // Spread bit j of qh to byte j, as 0x10.
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(qh), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                 0x0101010101010101, 0x0000000000000000));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_or_si256(lo, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  }
};

using unpack_q5_0 = unpack_five_bits<block_q5_0>;
using unpack_q5_1 = unpack_five_bits<block_q5_1>;

struct unpack_q8_0 {
  using block = block_q8_0;
  static constexpr bool is_signed = true;
  static __m256i codes(const block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};

// Nibbles looked up in a 16-entry value table (iq4_nl, mxfp4): signed
// values of magnitude <= 127, so the sign trick keeps maddubs exact.
template <class Block, const int8_t (&Table)[16]>
struct unpack_table {
  using block = Block;
  static constexpr bool is_signed = true;
  static __m256i codes(const block& b) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(Table));
    return _mm256_set_m128i(_mm_shuffle_epi8(t, _mm_and_si128(_mm_srli_epi16(q, 4), m)),
                            _mm_shuffle_epi8(t, _mm_and_si128(q, m)));
  }
};

using unpack_iq4_nl = unpack_table<block_iq4_nl, kvalues_iq4nl>;
using unpack_mxfp4 = unpack_table<block_mxfp4, kvalues_mxfp4>;

// The q8_32 steps of the generic tile (matmul_tile_body.hpp): one block of
// 32 per step; q8_0's signed codes take the sign trick instead of cxv.
struct avx2_q8_32 : avx2_isa {
  static constexpr int q8_blocks = 1;
  using qvec = __m256i;
  using wscale = facc;
  template <class Unpack, int n>
  static qvec codes(const typename Unpack::block* b) {
    return Unpack::codes(b[0]);
  }
  template <int n, class Block>
  static facc scales(const Block* b) {
    return _mm256_set1_ps(block_scale(b[0]));
  }
  struct q8_x {
    __m256i q;
    __m256 d, c;
  };
  static q8_x load_x(const uint8_t* xt, const quantized_x& x, int64_t b) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(xt + b * 32)),
            _mm256_load_ps(reinterpret_cast<const float*>(xt + x.d_offset) + b * 8),
            _mm256_load_ps(reinterpret_cast<const float*>(xt + x.aux_offset) + b * 8)};
  }
  template <class Unpack>
  static facc dot(qvec wq, facc wd, const q8_x& xb, facc acc) {
    __m256i p;
    if constexpr (Unpack::is_signed) {
      p = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xb.q, wq));
    } else {
      p = _mm256_maddubs_epi16(wq, xb.q);
    }
    const __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
    __m256 s;
    if constexpr (Unpack::is_signed) {
      s = _mm256_mul_ps(f, xb.d);
    } else {
      s = _mm256_fmadd_ps(f, xb.d, xb.c);
    }
    return _mm256_fmadd_ps(s, wd, acc);
  }
};

// The q8_1 steps (q4_1, q5_1 weights): the codes' dot as for q8_32, plus
// the weight block's min m times the activation block's s (lane 0 of sxv).
struct avx2_q8_1 : avx2_q8_32 {
  struct wscale {
    __m256 d, m;
  };
  template <int n, class Block>
  static wscale scales(const Block* b) {
    return {_mm256_set1_ps(_cvtsh_ss(b[0].d)), _mm256_set1_ps(_cvtsh_ss(b[0].m))};
  }
  template <class Unpack>
  static facc dot(qvec wq, const wscale& w, const q8_x& xb, facc acc) {
    const __m256i p = _mm256_maddubs_epi16(wq, xb.q);
    const __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(f, xb.d), w.d, acc);
    return _mm256_fmadd_ps(xb.c, w.m, acc);
  }
};

}  // namespace

// Activations of f16 weights: F16C conversions round to nearest even with
// subnormals and overflow to inf, like the scalar fp32_to_fp16.
void round_to_f16_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) y[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void to_f16_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_avx2_f32 = tiled_rows<float_tile<avx2_isa, load_f32>, 4, 2, 4>,
                            matmul_avx2_f16 = tiled_rows<float_tile<avx2_isa, load_f16>, 4, 2, 4>,
                            matmul_avx2_bf16 = tiled_rows<float_tile<avx2_isa, load_bf16>, 4, 2, 4>,
                            matmul_avx2_q4_0 = tiled_rows<q8_32_tile<avx2_q8_32, unpack_q4_0>, 4, 2, 3>,
                            matmul_avx2_q5_0 = tiled_rows<q8_32_tile<avx2_q8_32, unpack_q5_0>, 4, 2, 3>,
                            matmul_avx2_q8_0 = tiled_rows<q8_32_tile<avx2_q8_32, unpack_q8_0>, 4, 2, 3>,
                            matmul_avx2_q4_1 = tiled_rows<q8_32_tile<avx2_q8_1, unpack_q4_1>, 4, 2, 3>,
                            matmul_avx2_q5_1 = tiled_rows<q8_32_tile<avx2_q8_1, unpack_q5_1>, 4, 2, 3>,
                            matmul_avx2_iq4_nl = tiled_rows<q8_32_tile<avx2_q8_32, unpack_iq4_nl>, 4, 2, 3>,
                            matmul_avx2_mxfp4 = tiled_rows<q8_32_tile<avx2_q8_32, unpack_mxfp4>, 4, 2, 3>;

}  // namespace cortex::kernels
