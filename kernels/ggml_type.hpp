// Tensor element types as numbered in GGUF files (llama.cpp's ggml_type;
// ids 4, 5, 31-33 and 36-38 are types llama.cpp has removed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cortex {

enum class ggml_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
};

struct ggml_type_traits {
  const char* name;   // "q4_0", as llama.cpp names it; nullptr if unknown
  int64_t block_size; // elements per block (1 for plain types)
  size_t type_size;   // bytes per block
  bool supported;     // we can read it (the row has a dequantizer)
};

// The file-format part of a type id's row in kernels/quant_traits.cpp
// (defined there; the whole row: kernels/quant_traits.hpp). Unknown ids give
// {nullptr,0,0,false}.
ggml_type_traits type_traits(uint32_t type_id);
inline ggml_type_traits type_traits(ggml_type t) { return type_traits(static_cast<uint32_t>(t)); }

// Bytes for a row of n elements; REQUIRES: n % block_size == 0.
inline size_t row_size(ggml_type t, int64_t n) {
  auto tr = type_traits(t);
  return static_cast<size_t>(n / tr.block_size) * tr.type_size;
}

}  // namespace cortex
