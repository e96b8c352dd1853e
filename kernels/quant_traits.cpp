// The trait rows (kernels/quant_traits.hpp), one per GGML type, and the
// per-type functions they name. Declared here, defined with their kind:
// converters in quant.cpp / quantize.cpp, scalar matmul in matmul_scalar.cpp,
// packing in matmul_packed.cpp / matmul_packed_k.cpp, SIMD kernels in
// kernels/x86/*_avx2.cpp / *_avx512.cpp. Taking a SIMD kernel's address is
// safe on any CPU; only calling it needs the isa (callers index by
// active_isa()).
#include "kernels/quant_traits.hpp"

#include "kernels/cpu_features.hpp"
#include "kernels/matmul_packed_k.hpp"
#include "kernels/quant_blocks.hpp"

namespace cortex {

// ---- converters (quant.cpp, quant_iq.cpp, quantize.cpp, quantize_iq.cpp) --
void dequantize_row_f32(const void*, float*, int64_t);
void dequantize_row_f16(const void*, float*, int64_t);
void dequantize_row_bf16(const void*, float*, int64_t);
void dequantize_row_q4_0(const void*, float*, int64_t);
void dequantize_row_q4_1(const void*, float*, int64_t);
void dequantize_row_q5_0(const void*, float*, int64_t);
void dequantize_row_q5_1(const void*, float*, int64_t);
void dequantize_row_q8_0(const void*, float*, int64_t);
void dequantize_row_q2_k(const void*, float*, int64_t);
void dequantize_row_q3_k(const void*, float*, int64_t);
void dequantize_row_q4_k(const void*, float*, int64_t);
void dequantize_row_q5_k(const void*, float*, int64_t);
void dequantize_row_q6_k(const void*, float*, int64_t);
void dequantize_row_iq4_nl(const void*, float*, int64_t);
void dequantize_row_iq4_xs(const void*, float*, int64_t);
void dequantize_row_mxfp4(const void*, float*, int64_t);
void dequantize_row_iq2_xxs(const void*, float*, int64_t);
void dequantize_row_iq2_xs(const void*, float*, int64_t);
void dequantize_row_iq2_s(const void*, float*, int64_t);
void dequantize_row_iq3_xxs(const void*, float*, int64_t);
void dequantize_row_iq3_s(const void*, float*, int64_t);
void dequantize_row_iq1_s(const void*, float*, int64_t);
void dequantize_row_iq1_m(const void*, float*, int64_t);
void quantize_row_f32(const float*, void*, int64_t);
void quantize_row_f16(const float*, void*, int64_t);
void quantize_row_bf16(const float*, void*, int64_t);
void quantize_row_q4_0(const float*, void*, int64_t);
void quantize_row_q4_1(const float*, void*, int64_t);
void quantize_row_q5_0(const float*, void*, int64_t);
void quantize_row_q5_1(const float*, void*, int64_t);
void quantize_row_q8_0(const float*, void*, int64_t);
void quantize_row_q2_k(const float*, void*, int64_t);
void quantize_row_q3_k(const float*, void*, int64_t);
void quantize_row_q4_k(const float*, void*, int64_t);
void quantize_row_q5_k(const float*, void*, int64_t);
void quantize_row_q6_k(const float*, void*, int64_t);
void quantize_row_iq4_nl(const float*, void*, int64_t);
void quantize_row_iq4_xs(const float*, void*, int64_t);
void quantize_row_mxfp4(const float*, void*, int64_t);
void quantize_row_q4_0_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q4_1_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q5_0_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q5_1_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q2_k_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q3_k_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q4_k_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q5_k_weighted(const float*, void*, int64_t, const float*);
void quantize_row_q6_k_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq4_nl_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq4_xs_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq2_xxs_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq2_xs_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq2_s(const float*, void*, int64_t);
void quantize_row_iq2_s_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq3_xxs(const float*, void*, int64_t);
void quantize_row_iq3_s(const float*, void*, int64_t);
void quantize_row_iq3_xxs_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq3_s_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq1_s_weighted(const float*, void*, int64_t, const float*);
void quantize_row_iq1_m_weighted(const float*, void*, int64_t, const float*);

namespace kernels {

static_assert(static_cast<int>(isa::amx) + 1 == n_kernel_isas, "one kernel slot per isa");

// ---- matmul kernels: scalar (matmul_scalar.cpp), x86/matmul_avx2.cpp,
// x86/matmul_avx512.cpp, x86/matmul_k_avx2.cpp, x86/matmul_k_avx512.cpp ----
#define CORTEX_MATMUL_KERNELS(t) \
  extern const matmul_rows_fn matmul_scalar_##t, matmul_avx2_##t, matmul_avx512_##t
CORTEX_MATMUL_KERNELS(f32);
CORTEX_MATMUL_KERNELS(f16);
CORTEX_MATMUL_KERNELS(bf16);
CORTEX_MATMUL_KERNELS(q4_0);
CORTEX_MATMUL_KERNELS(q4_1);
CORTEX_MATMUL_KERNELS(q5_0);
CORTEX_MATMUL_KERNELS(q5_1);
CORTEX_MATMUL_KERNELS(q8_0);
CORTEX_MATMUL_KERNELS(q2_k);
CORTEX_MATMUL_KERNELS(q3_k);
CORTEX_MATMUL_KERNELS(q4_k);
CORTEX_MATMUL_KERNELS(q5_k);
CORTEX_MATMUL_KERNELS(q6_k);
CORTEX_MATMUL_KERNELS(iq4_nl);
CORTEX_MATMUL_KERNELS(iq4_xs);
CORTEX_MATMUL_KERNELS(mxfp4);
CORTEX_MATMUL_KERNELS(iq2_xxs);
CORTEX_MATMUL_KERNELS(iq2_xs);
CORTEX_MATMUL_KERNELS(iq2_s);
CORTEX_MATMUL_KERNELS(iq3_xxs);
CORTEX_MATMUL_KERNELS(iq3_s);
CORTEX_MATMUL_KERNELS(iq1_s);
CORTEX_MATMUL_KERNELS(iq1_m);
#undef CORTEX_MATMUL_KERNELS

// ---- packed layouts: packing and scalar kernel (matmul_packed.cpp,
// matmul_packed_k.cpp), x86/matmul_packed{,_k}_{avx2,avx512}.cpp ------------
#define CORTEX_PACKED_KERNELS(t)               \
  extern const pack_panel_fn pack_panel_##t;   \
  extern const unpack_row_fn unpack_row_##t;   \
  extern const packed_rows_fn packed_scalar_##t, packed_avx2_##t, packed_avx512_##t
CORTEX_PACKED_KERNELS(q4_0);
CORTEX_PACKED_KERNELS(q5_0);
CORTEX_PACKED_KERNELS(q8_0);
CORTEX_PACKED_KERNELS(iq4_nl);
CORTEX_PACKED_KERNELS(mxfp4);
CORTEX_PACKED_KERNELS(q4_k);
CORTEX_PACKED_KERNELS(q5_k);
CORTEX_PACKED_KERNELS(q6_k);
#undef CORTEX_PACKED_KERNELS
// ---- AMX tile kernels: x86/matmul_packed_amx.cpp (real tiles, built where
// the compiler takes the AMX flags: CORTEX_AMX_HW), and the same kernels on
// the emulated tiles (x86/matmul_packed_amx_emu_avx512.cpp) -----------------
#if defined(CORTEX_AMX_HW)
#define CORTEX_AMX_KERNELS(t) extern const packed_rows_fn packed_amx_##t, packed_amx_emu_##t
#define CORTEX_AMX_HW_KERNEL(t) packed_amx_##t
#else
#define CORTEX_AMX_KERNELS(t) extern const packed_rows_fn packed_amx_emu_##t
#define CORTEX_AMX_HW_KERNEL(t) nullptr
#endif
CORTEX_AMX_KERNELS(q4_0);
CORTEX_AMX_KERNELS(q5_0);
CORTEX_AMX_KERNELS(q8_0);
CORTEX_AMX_KERNELS(iq4_nl);
CORTEX_AMX_KERNELS(mxfp4);
CORTEX_AMX_KERNELS(q4_k);
CORTEX_AMX_KERNELS(q5_k);
#undef CORTEX_AMX_KERNELS

}  // namespace kernels

namespace {

using namespace kernels;
using xf = x_format;

#define CORTEX_MATMUL(t) \
  { matmul_scalar_##t, matmul_avx2_##t, matmul_avx512_##t }
#define CORTEX_PACKED(t) \
  pack_panel_##t, unpack_row_##t, { packed_scalar_##t, packed_avx2_##t, packed_avx512_##t }
// A layout with AMX tile kernels (avx2: its AVX2 kernel or nullptr).
#define CORTEX_PACKED_AMX(t, avx2)                                                          \
  pack_panel_##t, unpack_row_##t, {packed_scalar_##t, avx2, packed_avx512_##t, CORTEX_AMX_HW_KERNEL(t)}, \
      packed_amx_emu_##t

// Built on first use: the kernel pointers are other TUs' constants.
struct trait_table {
  // Panel records: two 32-column blocks (64-byte scale header, then 256 /
  // 320 / 512 code bytes per block) or one 256-column super-block. q5_0 has
  // no AVX2 packed kernel (its 5-bit codes would saturate maddubs' int16
  // block sums): packed_is_faster says no there, and matmul runs it.
  //
  // AMX: q6_k has no tile kernel (its scales are per 16 columns, half a
  // TDPBSUD's K), so it stays on avx512 under amx.
  const packed_layout packed_q4_0{packed_x_format::q8_p, 64, 64 + 2 * 256, CORTEX_PACKED_AMX(q4_0, packed_avx2_q4_0)};
  const packed_layout packed_q5_0{packed_x_format::q8_p, 64, 64 + 2 * 320, CORTEX_PACKED_AMX(q5_0, nullptr)};
  const packed_layout packed_q8_0{packed_x_format::q8_p, 64, 64 + 2 * 512, CORTEX_PACKED_AMX(q8_0, packed_avx2_q8_0)};
  // Table-driven nibbles: an AVX-512 kernel only (vpshufb on 64 bytes).
  const packed_layout packed_iq4_nl{packed_x_format::q8_p, 64, 64 + 2 * 256, CORTEX_PACKED_AMX(iq4_nl, nullptr)};
  const packed_layout packed_mxfp4{packed_x_format::q8_p, 64, 64 + 2 * 256, CORTEX_PACKED_AMX(mxfp4, nullptr)};
  const packed_layout packed_q4_k{packed_x_format::q8_kp, 256, packed_record_q4_k, CORTEX_PACKED_AMX(q4_k, packed_avx2_q4_k)};
  // As q5_0: AVX-512 only, matmul runs q5_k elsewhere.
  const packed_layout packed_q5_k{packed_x_format::q8_kp, 256, packed_record_q5_k, CORTEX_PACKED_AMX(q5_k, nullptr)};
  const packed_layout packed_q6_k{packed_x_format::q8_kp, 256, packed_record_q6_k, CORTEX_PACKED(q6_k)};

  // type, name, block size, bytes per block, dequantize, quantize,
  // activation format, zero point, matmul kernels, packed layout.
  const quant_traits rows[33] = {
      {ggml_type::f32, "f32", 1, sizeof(float), dequantize_row_f32, quantize_row_f32, xf::f32, 0,
       CORTEX_MATMUL(f32), nullptr},
      {ggml_type::f16, "f16", 1, sizeof(half_bits), dequantize_row_f16, quantize_row_f16, xf::f16, 0,
       CORTEX_MATMUL(f16), nullptr},
      {ggml_type::bf16, "bf16", 1, sizeof(uint16_t), dequantize_row_bf16, quantize_row_bf16, xf::bf16, 0,
       CORTEX_MATMUL(bf16), nullptr},
      {ggml_type::q4_0, "q4_0", qk4_0, sizeof(block_q4_0), dequantize_row_q4_0, quantize_row_q4_0, xf::q8_32, 8,
       CORTEX_MATMUL(q4_0), &packed_q4_0, quantize_row_q4_0_weighted},
      {ggml_type::q4_1, "q4_1", 32, sizeof(block_q4_1), dequantize_row_q4_1, quantize_row_q4_1, xf::q8_1, 0,
       CORTEX_MATMUL(q4_1), nullptr, quantize_row_q4_1_weighted},
      {ggml_type::q5_0, "q5_0", 32, sizeof(block_q5_0), dequantize_row_q5_0, quantize_row_q5_0, xf::q8_32, 16,
       CORTEX_MATMUL(q5_0), &packed_q5_0, quantize_row_q5_0_weighted},
      {ggml_type::q5_1, "q5_1", 32, sizeof(block_q5_1), dequantize_row_q5_1, quantize_row_q5_1, xf::q8_1, 0,
       CORTEX_MATMUL(q5_1), nullptr, quantize_row_q5_1_weighted},
      {ggml_type::q8_0, "q8_0", qk8_0, sizeof(block_q8_0), dequantize_row_q8_0, quantize_row_q8_0, xf::q8_32, 128,
       CORTEX_MATMUL(q8_0), &packed_q8_0},
      // q8_1 = {d, s} halves + 32 int8; only produced at run time for dot products.
      {ggml_type::q8_1, "q8_1", 32, 2 * sizeof(half_bits) + 32, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::q2_k, "q2_K", qk_k, sizeof(block_q2_k), dequantize_row_q2_k, quantize_row_q2_k, xf::q8_256, 0,
       CORTEX_MATMUL(q2_k), nullptr, quantize_row_q2_k_weighted},
      {ggml_type::q3_k, "q3_K", qk_k, sizeof(block_q3_k), dequantize_row_q3_k, quantize_row_q3_k, xf::q8_256, 0,
       CORTEX_MATMUL(q3_k), nullptr, quantize_row_q3_k_weighted},
      {ggml_type::q4_k, "q4_K", qk_k, sizeof(block_q4_k), dequantize_row_q4_k, quantize_row_q4_k, xf::q8_256, 0,
       CORTEX_MATMUL(q4_k), &packed_q4_k, quantize_row_q4_k_weighted},
      {ggml_type::q5_k, "q5_K", qk_k, sizeof(block_q5_k), dequantize_row_q5_k, quantize_row_q5_k, xf::q8_256, 0,
       CORTEX_MATMUL(q5_k), &packed_q5_k, quantize_row_q5_k_weighted},
      {ggml_type::q6_k, "q6_K", qk_k, sizeof(block_q6_k), dequantize_row_q6_k, quantize_row_q6_k, xf::q8_256, 0,
       CORTEX_MATMUL(q6_k), &packed_q6_k, quantize_row_q6_k_weighted},
      {ggml_type::q8_k, "q8_K", qk_k, sizeof(block_q8_k), nullptr, nullptr, xf::none, 0, {}, nullptr},
      // The non-linear 4-bit types: table values (int8) that the AVX-512
      // kernels offset to uint8 (iq4_nl's -127..113 by 128, mxfp4's -12..12
      // by 16).
      {ggml_type::iq4_nl, "iq4_nl", 32, sizeof(block_iq4_nl), dequantize_row_iq4_nl, quantize_row_iq4_nl, xf::q8_32,
       128, CORTEX_MATMUL(iq4_nl), &packed_iq4_nl, quantize_row_iq4_nl_weighted},
      {ggml_type::iq4_xs, "iq4_xs", qk_k, sizeof(block_iq4_xs), dequantize_row_iq4_xs, quantize_row_iq4_xs,
       xf::q8_256, 0, CORTEX_MATMUL(iq4_xs), nullptr, quantize_row_iq4_xs_weighted},
      {ggml_type::mxfp4, "mxfp4", 32, sizeof(block_mxfp4), dequantize_row_mxfp4, quantize_row_mxfp4, xf::q8_32, 16,
       CORTEX_MATMUL(mxfp4), &packed_mxfp4},
      // The lattice-codebook types (kernels/quant_grids.hpp; quantizers in
      // kernels/quantize_grid.cpp and quantize_iq1.cpp). iq2_xxs, iq2_xs,
      // iq1_s and iq1_m quantize with an importance matrix only, as
      // llama-quantize does; iq2_s, iq3_xxs and iq3_s with or without one.
      {ggml_type::iq2_xxs, "iq2_xxs", qk_k, sizeof(block_iq2_xxs), dequantize_row_iq2_xxs, nullptr, xf::q8_256, 0,
       CORTEX_MATMUL(iq2_xxs), nullptr, quantize_row_iq2_xxs_weighted},
      {ggml_type::iq2_xs, "iq2_xs", qk_k, sizeof(block_iq2_xs), dequantize_row_iq2_xs, nullptr, xf::q8_256, 0,
       CORTEX_MATMUL(iq2_xs), nullptr, quantize_row_iq2_xs_weighted},
      {ggml_type::iq2_s, "iq2_s", qk_k, sizeof(block_iq2_s), dequantize_row_iq2_s, quantize_row_iq2_s, xf::q8_256, 0,
       CORTEX_MATMUL(iq2_s), nullptr, quantize_row_iq2_s_weighted},
      {ggml_type::iq3_xxs, "iq3_xxs", qk_k, sizeof(block_iq3_xxs), dequantize_row_iq3_xxs, quantize_row_iq3_xxs, xf::q8_256, 0,
       CORTEX_MATMUL(iq3_xxs), nullptr, quantize_row_iq3_xxs_weighted},
      {ggml_type::iq3_s, "iq3_s", qk_k, sizeof(block_iq3_s), dequantize_row_iq3_s, quantize_row_iq3_s, xf::q8_256, 0,
       CORTEX_MATMUL(iq3_s), nullptr, quantize_row_iq3_s_weighted},
      {ggml_type::iq1_s, "iq1_s", qk_k, sizeof(block_iq1_s), dequantize_row_iq1_s, nullptr, xf::q8_256, 0,
       CORTEX_MATMUL(iq1_s), nullptr, quantize_row_iq1_s_weighted},
      {ggml_type::iq1_m, "iq1_m", qk_k, sizeof(block_iq1_m), dequantize_row_iq1_m, nullptr, xf::q8_256, 0,
       CORTEX_MATMUL(iq1_m), nullptr, quantize_row_iq1_m_weighted},
      // Known to the file format, not yet to the kernels: a model using them
      // is refused at load, naming the tensor and the type.
      // Ternary types: 5 codes of 3 per byte (tq1_0), 2 bits per code (tq2_0).
      {ggml_type::tq1_0, "tq1_0", qk_k, 54, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::tq2_0, "tq2_0", qk_k, 66, nullptr, nullptr, xf::none, 0, {}, nullptr},
      // nvfp4: 64 elements, four UE4M3 scales and 32 bytes of E2M1 codes.
      {ggml_type::nvfp4, "nvfp4", 64, 36, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::i8, "i8", 1, 1, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::i16, "i16", 1, 2, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::i32, "i32", 1, 4, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::i64, "i64", 1, 8, nullptr, nullptr, xf::none, 0, {}, nullptr},
      {ggml_type::f64, "f64", 1, 8, nullptr, nullptr, xf::none, 0, {}, nullptr},
  };

  static constexpr uint32_t max_id = 63;  // llama.cpp's ids end at 42 (2026)
  const quant_traits* by_id[max_id + 1] = {};

  trait_table() {
    for (const quant_traits& r : rows) {
      if (r.name != nullptr) by_id[static_cast<uint32_t>(r.type)] = &r;  // not a row the size left empty
    }
  }
};

#undef CORTEX_MATMUL
#undef CORTEX_PACKED
#undef CORTEX_PACKED_AMX
#undef CORTEX_AMX_HW_KERNEL

const trait_table& table() {
  static const trait_table t;
  return t;
}

}  // namespace

const quant_traits* find_quant_traits(uint32_t type_id) {
  return type_id <= trait_table::max_id ? table().by_id[type_id] : nullptr;
}

const quant_traits& quant_traits_of(ggml_type t) { return *find_quant_traits(static_cast<uint32_t>(t)); }

ggml_type_traits type_traits(uint32_t type_id) {
  const quant_traits* r = find_quant_traits(type_id);
  if (r == nullptr) return {nullptr, 0, 0, false};
  return {r->name, r->block_size, r->type_size, r->dequantize != nullptr};
}

}  // namespace cortex
