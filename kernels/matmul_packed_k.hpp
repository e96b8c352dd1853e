// Internal to kernels/matmul_packed.cpp: packing, unpacking and the scalar
// kernel of the k-quant panel layouts (q4_k, q6_k; layout in
// kernels/matmul_kernels.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

constexpr size_t packed_record_q4_k = 2368;
constexpr size_t packed_record_q6_k = 3392;

// Rows [first_row, first_row + 16) of w (q4_k or q6_k) into a zeroed panel;
// rows past w.rows stay zero.
void pack_panel_k(const weight_view& w, int64_t first_row, uint8_t* panel);

// Row i (0..15) of a packed panel back in the original block layout.
void unpack_panel_row_k(ggml_type type, int64_t cols, const uint8_t* panel, int64_t i, uint8_t* out);

// Scalar packed kernel for q4_k / q6_k (x in the q8_kp layout).
void packed_rows_scalar_k(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1);

}  // namespace cortex::kernels
