// The AMX start-up self-test: before the packed matmuls of a process go to
// the tile kernels, each must give the AVX-512 VNNI kernel's bits (batch
// invariance: a token's output may not depend on whether its step ran on
// tiles). kernels/amx_choice.hpp runs it; tests run it on broken kernels.
#pragma once

#include <string>
#include <vector>

#include "kernels/amx_choice.hpp"
#include "kernels/ggml_type.hpp"
#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

struct amx_kernel_under_test {
  ggml_type type;
  packed_rows_fn kernel;
};

// The tile kernels of the trait table (kernels/quant_traits.cpp) for a mode:
// hardware, the real tiles; emulated, the emulation; off, none.
std::vector<amx_kernel_under_test> amx_kernels_of(amx_mode mode);

// Runs each kernel and its type's AVX-512 kernel on the same random weights
// (37 rows: a panel pair and a partial panel; an odd number of blocks or
// super-blocks) and activations of 1, 2, 16, 21 and 70 tokens (a part of a
// tile, a tile and a part, more than a chunk). Returns "" when every output
// has the same bits, else the first difference, naming the type, the row and
// the token: "q4_0: row 17, token 3 of 21: 0x3f800001 where avx512 gives
// 0x3f800000". REQUIRES: the CPU runs the AVX-512 kernels, and can run the
// kernels given (for real tiles: tile data granted).
std::string amx_self_test(const std::vector<amx_kernel_under_test>& kernels);

}  // namespace cortex::kernels
