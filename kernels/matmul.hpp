// Matrix multiplication of f32 activations with (quantized) weight matrices:
// the linear layers of the model. Run-time dispatch to AVX-512 / AVX2 / scalar
// (kernels/cpu_features.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_type.hpp"
#include "kernels/matmul_kernels.hpp"  // weight_view
#include "kernels/thread_pool.hpp"

namespace cortex::kernels {

// Owns the buffer activations are quantized into. Grows on demand, never
// shrinks: after the first call of the largest shape, matmul allocates nothing.
// One scratch per concurrent caller.
class matmul_scratch {
 public:
  matmul_scratch() = default;
  ~matmul_scratch();
  matmul_scratch(const matmul_scratch&) = delete;
  matmul_scratch& operator=(const matmul_scratch&) = delete;

  // A 64-aligned buffer of at least n bytes (contents unspecified).
  uint8_t* reserve(size_t n);
  size_t capacity() const { return capacity_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// Weight types matmul accepts: those whose row in kernels/quant_traits.cpp
// has a matmul kernel (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k,
// q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4, iq1_s, iq1_m, iq2_xxs, iq2_xs,
// iq2_s, iq3_xxs, iq3_s).
bool matmul_supports(ggml_type type);

// y (n_tokens, w.rows) = x (n_tokens, w.cols) @ W^T, all f32 row-major.
// Quantized weights: x is first quantized like llama.cpp does (q8_0-style
// blocks of 32 for q4_0/q5_0/q8_0/iq4_nl/mxfp4, q8_1 blocks of 32 for
// q4_1/q5_1, q8_k blocks of 256 for k-quants and the other iq types), then
// dotted in integers; the result matches llama.cpp's vec_dot semantics.
// F16 / BF16 weights: x is first rounded to f16 / bf16 (llama.cpp's
// vec_dot_type for them), then f32 dot products. F32 weights: f32 dots.
// REQUIRES: matmul_supports(w.type); w.cols a multiple of the block size;
// n_tokens >= 1; y does not alias x; not called from inside a task of pool.
void matmul(const weight_view& w, const float* x, int n_tokens, float* y, thread_pool& pool,
            matmul_scratch& scratch);

// Scalar reference: the same math as matmul on one thread, plain loops.
// Allocates. For tests and benchmarks.
void matmul_reference(const weight_view& w, const float* x, int n_tokens, float* y);

// Bytes of one weight row of the given type and cols.
size_t matmul_row_bytes(ggml_type type, int64_t cols);

}  // namespace cortex::kernels
