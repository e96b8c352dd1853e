// The AMX tile kernels (x86/matmul_packed_amx_body.hpp) on the emulated
// tiles (kernels/amx_tiles.hpp): CORTEX_AMX=emulate, and the tests, on any
// CPU that runs the AVX-512 kernels (the kernels' own code is AVX-512; only
// the tile instructions are emulated). Only the kernels named at the end are
// exported.
// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/amx_tiles.hpp"
#include "kernels/x86/matmul_packed_amx_body.hpp"

namespace cortex::kernels {

// Named by the rows of kernels/quant_traits.cpp.
using amx_emu = amx_kernels<amx_tiles_emu>;
extern const packed_rows_fn packed_amx_emu_q4_0 = amx_emu::q4_0, packed_amx_emu_q5_0 = amx_emu::q5_0,
                            packed_amx_emu_q8_0 = amx_emu::q8_0, packed_amx_emu_iq4_nl = amx_emu::iq4_nl,
                            packed_amx_emu_mxfp4 = amx_emu::mxfp4, packed_amx_emu_q4_k = amx_emu::q4_k,
                            packed_amx_emu_q5_k = amx_emu::q5_k;

}  // namespace cortex::kernels
