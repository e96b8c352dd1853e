// One row per GGML tensor type: what the file format says about it (block
// size, bytes per block) and everything the kernels do with it (dequantizer,
// quantizer, the activation format matmul prepares, the zero point of its
// codes, the packed layout, the matmul kernels per isa). The rows are in
// kernels/quant_traits.cpp; code that depends on the type looks its row up
// instead of switching on the type, so adding a type is its row, its kernels
// and its tests (README, "How to add a quant type").
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_type.hpp"
#include "kernels/matmul_kernels.hpp"

namespace cortex {

// src: one row of n elements in the type's layout; dst: n floats.
// REQUIRES: n % block_size == 0.
using dequantize_fn = void (*)(const void* src, float* dst, int64_t n);
// src: n floats; dst: row_size(type, n) bytes. REQUIRES: n % block_size == 0.
using quantize_fn = void (*)(const float* src, void* dst, int64_t n);
// quantize_fn with importance weights: qw[n], one per column of the row
// (llama.cpp's imatrix for this tensor), as llama-quantize --imatrix.
using quantize_weighted_fn = void (*)(const float* src, void* dst, int64_t n, const float* qw);

namespace kernels {

// What matmul turns the f32 activations into for a weight type (layouts in
// kernels/matmul_kernels.hpp): f32 itself, f32 rounded to f16 / bf16
// (llama.cpp's vec_dot_type of those weights), 8-bit blocks of 32 (q8_32 as
// llama.cpp's q8_0; q8_1 also carries each block's scaled sum, for weights
// with a min) or of 256 (q8_256, llama.cpp's q8_K).
enum class x_format : uint8_t { none, f32, f16, bf16, q8_32, q8_256, q8_1 };

// Activations of the packed kernels: q8_p (blocks of 32) or q8_kp (256).
enum class packed_x_format : uint8_t { q8_p, q8_kp };

// Number of isas kernels are indexed by (kernels/cpu_features.hpp: scalar,
// avx2, avx512, amx). A nullptr entry falls back to the isa below it.
constexpr int n_kernel_isas = 4;

// Rows [first_row, first_row + 16) of w into a zeroed panel; rows past
// w.rows stay zero.
using pack_panel_fn = void (*)(const weight_view& w, int64_t first_row, uint8_t* panel);
// Row i (0..15) of a panel of `cols` columns back in the file's block layout.
using unpack_row_fn = void (*)(int64_t cols, const uint8_t* panel, int64_t i, uint8_t* out);

// A packed (16-row panel) layout of one weight type.
struct packed_layout {
  packed_x_format x;
  int64_t cols_per_record;  // a panel is records of this many columns
  size_t record_bytes;      // bytes of one record (16 rows)
  pack_panel_fn pack_panel;
  unpack_row_fn unpack_row;
  // [0] (scalar) is never nullptr. [amx]: the AMX tile kernel on the real
  // tiles (x86/matmul_packed_amx.cpp; nullptr where the build has none),
  // for steps of amx_min_tokens and more (kernels/amx_choice.hpp).
  packed_rows_fn kernels[n_kernel_isas];
  // The same tile kernel on the emulated tiles (CORTEX_AMX=emulate); nullptr
  // for a type without a tile kernel.
  packed_rows_fn amx_emulated = nullptr;
};

}  // namespace kernels

struct quant_traits {
  ggml_type type;
  const char* name;    // as llama.cpp names it ("q4_K")
  int64_t block_size;  // elements per block (1 for plain types)
  size_t type_size;    // bytes per block
  dequantize_fn dequantize;  // nullptr: we cannot read it
  quantize_fn quantize;      // nullptr: we do not write it
  kernels::x_format activation;  // none: no matmul for it
  // Subtracted from the stored (unsigned) code by the q8_32 and packed
  // kernels: 8 (q4_0), 16 (q5_0), 128 (q8_0, whose int8 codes the AVX-512
  // kernels offset to uint8; so too iq4_nl's table values), 16 (mxfp4's
  // values, likewise); 0 where unused (q4_1 / q5_1 add their min through
  // q8_1's block sums instead).
  int zero_point;
  kernels::matmul_rows_fn matmul[kernels::n_kernel_isas];  // [0] set iff activation != none
  const kernels::packed_layout* packed;                   // nullptr: not packed
  // nullptr: its quantizer has no use for importance weights (or it has none).
  quantize_weighted_fn quantize_weighted = nullptr;
};

// The row of a type id read from a file; nullptr if the id is unknown.
const quant_traits* find_quant_traits(uint32_t type_id);

// The row of a known type. REQUIRES: t is one of the ggml_type enumerators.
const quant_traits& quant_traits_of(ggml_type t);

// The kernel of `table` for isa index i, or of the nearest isa below it that
// has one (nullptr only if none has).
template <class Fn>
Fn kernel_for_isa(const Fn (&table)[kernels::n_kernel_isas], int i) {
  for (; i > 0 && table[i] == nullptr; --i) {
  }
  return table[i];
}

}  // namespace cortex
