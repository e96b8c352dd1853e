// Tile loop shared by the isa-specific matmul translation units.
// Deliberately in an anonymous namespace: each isa TU gets its own copy,
// compiled with its own flags, so the linker can never pick an AVX-512 copy
// for a caller on another CPU (the ODR hazard of inline functions).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {
namespace {

inline const uint8_t* weight_row(const weight_view& w, int64_t r) {
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes;
}

// Packed q4_0 / q8_0 records (kernels/matmul_kernels.hpp): a 64-byte header
// of two blocks' f16 scales, then each block's code groups.
constexpr int64_t record_header = 64;
struct fmt_q4_0 {
  static constexpr int64_t block_code_bytes = 256;
};
struct fmt_q8_0 {
  static constexpr int64_t block_code_bytes = 512;
};

// Pointers into the q8_p activations (kernels/matmul_kernels.hpp) of tokens
// [t, t + NT): codes, block scales, zero-point corrections.
template <int NT>
struct q8p_tokens {
  const int8_t* q[NT];
  const float* d[NT];
  const int32_t* c[NT];
  q8p_tokens(const quantized_x& x, int t) {
    for (int j = 0; j < NT; ++j) {
      const uint8_t* base = x.data + static_cast<size_t>(t + j) * x.stride;
      q[j] = reinterpret_cast<const int8_t*>(base);
      d[j] = reinterpret_cast<const float*>(base + x.d_offset);
      c[j] = reinterpret_cast<const int32_t*>(base + x.aux_offset);
    }
  }
};

// Calls tile.run<nr, nt>(r, t) over rows [r0, r1) x tokens [0, n_tokens):
// NR x NT tiles, NR x 1 for leftover tokens, then single rows at the end.
template <int NR, int NT, class Tile>
void for_each_tile(int64_t r0, int64_t r1, int n_tokens, const Tile& tile) {
  int64_t r = r0;
  for (; r + NR <= r1; r += NR) {
    int t = 0;
    for (; t + NT <= n_tokens; t += NT) tile.template run<NR, NT>(r, t);
    for (; t < n_tokens; ++t) tile.template run<NR, 1>(r, t);
  }
  for (; r < r1; ++r) {
    int t = 0;
    for (; t + NT <= n_tokens; t += NT) tile.template run<1, NT>(r, t);
    for (; t < n_tokens; ++t) tile.template run<1, 1>(r, t);
  }
}

}  // namespace
}  // namespace cortex::kernels
