// Internal to the scalar packed kernels (kernels/matmul_packed.cpp,
// kernels/matmul_packed_k.cpp): the k-quant record sizes (layouts in
// kernels/matmul_kernels.hpp) and the loop every scalar packed kernel runs.
// Their packing, unpacking and kernels are named by the rows of
// kernels/quant_traits.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

constexpr size_t packed_record_q4_k = 2368;
constexpr size_t packed_record_q5_k = 2880;  // q4_k's, then 8 groups of qh
constexpr size_t packed_record_q6_k = 3392;

// y of every real row i of panels [p0, p1) and token t < n_tokens is
// row_dot(panel, i, xt), xt the token's activations: the output loop of the
// scalar packed kernels (baseline code only: it is an inline template).
template <class RowDot>
void for_each_packed_output(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1,
                            const RowDot& row_dot) {
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* panel = w.data + static_cast<size_t>(p) * w.panel_bytes;
    const packed_dest dst = packed_dest_of(w, p);
    for (int64_t i = 0; i < dst.valid; ++i) {
      for (int t = 0; t < n_tokens; ++t) {
        dst.y[t * dst.ld + i] = row_dot(panel, i, x.data + static_cast<size_t>(t) * x.stride);
      }
    }
  }
}

}  // namespace cortex::kernels
