// Float weights (f32, f16, bf16) repacked for steps that are all prefill:
// encoders, which never decode, so no output of theirs must agree bit for
// bit with a one-token matmul (kernels/matmul.hpp's dot tiles) — only with
// itself in any batch. Rows in panels of 16; inside a panel, column by
// column: column c of the panel is 16 consecutive weights (f16 as f16, f32
// and bf16 widened to f32), one vector. The kernel is an outer product: a
// column of two panels times each token's x[c] broadcast, 24 accumulators of
// 16 outputs, no horizontal sums and no per-step activation loads.
//
// Every output is summed over the columns in order, one fused multiply-add
// per column starting from +0 (as matmul_float_panels_reference does), so a
// token's outputs are the same bits alone, in any batch, at any position of
// it and on any number of threads. Activations are rounded as llama.cpp
// rounds them for these weight types (to f16 / bf16; f32 as is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/matmul.hpp"

namespace cortex::kernels {

class float_panels {
 public:
  float_panels() = default;
  float_panels(float_panels&&) = default;
  float_panels& operator=(float_panels&&) = default;

  bool empty() const { return data_ == nullptr; }
  ggml_type type() const { return type_; }  // the original weights' type
  bool half() const { return type_ == ggml_type::f16; }  // panels hold f16 (else f32)
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t n_panels() const { return (rows_ + 15) / 16; }
  size_t panel_bytes() const { return static_cast<size_t>(cols_) * 16 * (half() ? 2 : 4); }
  size_t bytes() const { return panel_bytes() * static_cast<size_t>(n_panels()); }
  const uint8_t* data() const { return data_.get(); }

 private:
  friend float_panels pack_float_panels(const weight_view& w, thread_pool& pool);
  struct free_deleter {
    void operator()(uint8_t* p) const;
  };
  ggml_type type_ = ggml_type::f32;
  int64_t rows_ = 0, cols_ = 0;
  std::unique_ptr<uint8_t, free_deleter> data_;
};

// Whether w's type has float panels and the active isa their kernel
// (AVX-512: f32, f16 and bf16); elsewhere use matmul.
bool float_panels_supported(ggml_type type);

// Packs w (f32, f16 or bf16), padding the last panel with zero rows.
float_panels pack_float_panels(const weight_view& w, thread_pool& pool);

// y (n_tokens, rows) = x (n_tokens, cols) @ W^T. REQUIRES: n_tokens >= 1;
// y does not alias x; not called from inside a task of pool.
void matmul_float_panels(const float_panels& w, const float* x, int n_tokens, float* y, thread_pool& pool,
                         matmul_scratch& scratch);

// The same outputs, one at a time in plain C++ (the order of the contract).
void matmul_float_panels_reference(const float_panels& w, const float* x, int n_tokens, float* y);

// ---- per-isa kernel (x86/float_panels_avx512.cpp) -------------------------
// Panels [p0, p1) against tokens [t0, t1) of the rounded activations xr
// (token t at xr + t * cols): y[t * ldy + row].
void float_panels_rows_avx512(const float_panels& w, const float* xr, int t0, int t1, int64_t p0, int64_t p1,
                              float* y, int64_t ldy);

}  // namespace cortex::kernels
