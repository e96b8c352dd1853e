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
