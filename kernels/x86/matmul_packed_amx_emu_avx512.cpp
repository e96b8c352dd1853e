// The AMX tile kernels (x86/matmul_packed_amx_body.hpp) on the emulated
// tiles (kernels/amx_tiles.hpp): CORTEX_AMX=emulate, and the tests, on any
// CPU that runs the AVX-512 kernels (the kernels' own code is AVX-512; only
// the tile instructions are emulated). Only the kernels named at the end are
// exported.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/amx_tiles.hpp"
#include "kernels/x86/matmul_packed_amx_body.hpp"

CORTEX_AMX_EXPORT_KERNELS(packed_amx_emu_, amx_tiles_emu)
