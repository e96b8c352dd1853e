// Weights repacked at load time for the panel kernels: 16 rows interleaved
// so every 64-byte load feeds 16 output rows (layout in
// kernels/matmul_kernels.hpp). The GGUF mapping stays the source of truth;
// a packed_matrix is a derived copy (same size as the q4_0 / q8_0 data plus
// padding) that the forward pass owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/matmul.hpp"

namespace cortex::kernels {

// Types pack_matrix accepts: those whose row in kernels/quant_traits.cpp has
// a packed layout (q4_0, q5_0, q8_0, q4_k, q5_k and q6_k).
bool packed_supported(ggml_type type);

// Whether the active isa has a SIMD packed kernel for the type (AVX-512 VNNI:
// all six; AVX2: all but q5_0 and q5_k); elsewhere the packed path is the
// scalar reference: use matmul.
bool packed_is_faster(ggml_type type);

// Several weight matrices of one type and cols, stacked: part s has rows_s
// rows, padded to a whole number of 16-row panels. Move-only; owns its buffer.
class packed_matrix {
 public:
  packed_matrix() = default;
  packed_matrix(packed_matrix&&) = default;
  packed_matrix& operator=(packed_matrix&&) = default;

  bool empty() const { return data_ == nullptr; }
  ggml_type type() const { return type_; }
  int64_t cols() const { return cols_; }
  int n_parts() const { return static_cast<int>(part_rows_.size()); }
  int64_t part_rows(int s) const { return part_rows_[static_cast<size_t>(s)]; }
  int64_t part_panel_begin(int s) const { return part_panel_begin_[static_cast<size_t>(s)]; }
  int64_t n_panels() const { return n_panels_; }
  size_t panel_bytes() const { return panel_bytes_; }
  size_t bytes() const { return panel_bytes_ * static_cast<size_t>(n_panels_); }
  const uint8_t* data() const { return data_.get(); }

 private:
  friend packed_matrix pack_matrix(const weight_view* parts, int n_parts, thread_pool& pool);
  struct free_deleter {
    void operator()(uint8_t* p) const;
  };
  ggml_type type_ = ggml_type::f32;
  int64_t cols_ = 0;
  int64_t n_panels_ = 0;
  size_t panel_bytes_ = 0;
  std::vector<int64_t> part_rows_, part_panel_begin_;
  std::unique_ptr<uint8_t, free_deleter> data_;
};

// Packs parts[0 .. n_parts) (REQUIRES: n_parts >= 1, all of one
// packed_supported type and the same cols). Reads the weights once; uses pool.
packed_matrix pack_matrix(const weight_view* parts, int n_parts, thread_pool& pool);

// Writes row `row` of part `part` back in the original block layout
// (row_bytes of matmul_row_bytes(type, cols)): the inverse of packing.
void unpack_row(const packed_matrix& w, int part, int64_t row, uint8_t* out);

// ys[s] (n_tokens, part_rows(s)) = x (n_tokens, cols) @ W_s^T for every part,
// with the same results (up to float summation order) as matmul on each
// original part. One activation quantization and one parallel_for for all
// parts. REQUIRES: n_tokens >= 1; no y aliases x; not called from inside a
// task of pool.
void matmul_packed(const packed_matrix& w, const float* x, int n_tokens, float* const* ys, thread_pool& pool,
                   matmul_scratch& scratch);

}  // namespace cortex::kernels
