// The AMX tile kernels (x86/matmul_packed_amx_body.hpp) on the real tiles.
// Compiled with the AVX-512 and AMX flags (kernels/CMakeLists.txt); reached
// only where kernels/amx_choice.hpp found AMX usable and its self-test
// passed. Only the kernels named at the end are exported.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/x86/amx_tiles_hw.hpp"
#include "kernels/x86/matmul_packed_amx_body.hpp"

CORTEX_AMX_EXPORT_KERNELS(packed_amx_, amx_tiles_hw)
