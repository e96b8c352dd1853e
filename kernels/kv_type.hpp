// Element types of the K/V cache and their trait rows: how one head's row
// (head_dim values) is stored, how many bytes it takes, and the scalar
// store (f32 -> type, on write) and load (type -> f32, the reference the
// attention kernels' SIMD loads are tested against).
//
// Layouts are llama.cpp's cache types: f32, f16 (IEEE binary16), bf16, and
// q8_0 (blocks of 32 values along head_dim: an f16 scale d = amax / 127 and
// 32 int8 codes round(x / d), 34 bytes; llama.cpp's block_q8_0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/ggml_type.hpp"

namespace cortex::kernels {

enum class kv_type : uint8_t { f32, f16, bf16, q8_0 };

struct kv_type_traits {
  kv_type type;
  const char* name;      // "f16", as llama.cpp's -ctk / -ctv name it
  ggml_type ggml;        // the same layout as a tensor type
  int block_elems;       // values per block (1, or 32 for q8_0)
  int block_bytes;       // bytes per block
  // x (n,) -> dst (row_bytes(n) bytes). REQUIRES: n % block_elems == 0, x finite.
  void (*store_row)(const float* x, void* dst, int n);
  // src (row_bytes(n) bytes) -> y (n,). REQUIRES: n % block_elems == 0.
  void (*load_row)(const void* src, float* y, int n);

  size_t row_bytes(int n) const { return static_cast<size_t>(n / block_elems) * block_bytes; }
  // Whether a head of head_dim values is a whole number of blocks.
  bool fits_head_dim(int head_dim) const { return head_dim > 0 && head_dim % block_elems == 0; }
};

// The row of t. REQUIRES: t is an enumerator.
const kv_type_traits& kv_traits(kv_type t);

inline const char* kv_type_name(kv_type t) { return kv_traits(t).name; }

// "f32" | "f16" | "bf16" | "q8_0" -> the type; false (out unchanged) otherwise.
bool parse_kv_type(const std::string& name, kv_type& out);

// "f32|f16|bf16|q8_0": for help texts and error messages.
const char* kv_type_choices();

}  // namespace cortex::kernels
