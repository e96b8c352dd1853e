// The AMX tile kernels (x86/matmul_packed_amx_body.hpp) on the real tiles.
// Compiled with the AVX-512 and AMX flags (kernels/CMakeLists.txt); reached
// only where kernels/amx_choice.hpp found AMX usable and its self-test
// passed. Only the kernels named at the end are exported.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/x86/amx_tiles_hw.hpp"
#include "kernels/x86/matmul_packed_amx_body.hpp"

namespace cortex::kernels {

// Named by the rows of kernels/quant_traits.cpp.
using amx_hw = amx_kernels<amx_tiles_hw>;
extern const packed_rows_fn packed_amx_q4_0 = amx_hw::q4_0, packed_amx_q5_0 = amx_hw::q5_0,
                            packed_amx_q8_0 = amx_hw::q8_0, packed_amx_iq4_nl = amx_hw::iq4_nl,
                            packed_amx_mxfp4 = amx_hw::mxfp4, packed_amx_q4_k = amx_hw::q4_k,
                            packed_amx_q5_k = amx_hw::q5_k;

}  // namespace cortex::kernels
