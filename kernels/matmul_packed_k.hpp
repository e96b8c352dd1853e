// Record sizes of the k-quant panel layouts (q4_k, q6_k; layout in
// kernels/matmul_kernels.hpp). Their packing, unpacking and scalar kernels
// are in kernels/matmul_packed_k.cpp, named by the rows of
// kernels/quant_traits.cpp.
#pragma once

#include <cstddef>

namespace cortex::kernels {

constexpr size_t packed_record_q4_k = 2368;
constexpr size_t packed_record_q6_k = 3392;

}  // namespace cortex::kernels
