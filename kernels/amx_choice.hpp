// Whether the packed int8 matmuls of large steps run on AMX tiles: decided
// once per process from the CPU, the OS, a start-up self-test and the
// environment, with a one-line reason for logs and `cortex info`.
//
// AMX is offered only when every one of these holds, checked in this order
// (the first that fails is the reason):
//   CORTEX_AMX is unset, "on" or "emulate" ("off" turns AMX off; any other
//     value is refused, naming it);
//   CORTEX_ISA, if set, is "amx" (scalar, avx2 or avx512 cap the kernels
//     below it);
//   the CPU runs the AVX-512 VNNI kernels (the tile kernels' float epilogue
//     is theirs);
//   under CORTEX_AMX=emulate: the tile kernels on the emulation pass the
//     self-test, and AMX runs emulated (slow: for tests, on any machine);
//   otherwise: cpuid reports AMX-TILE, AMX-INT8 and AMX-BF16, XCR0 enables
//     tile state, the hardware kernels were built, Linux grants tile data
//     (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA), and the hardware kernels
//     pass the self-test (kernels/amx_self_test.hpp).
// Otherwise the kernels stay on avx512.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cpu_features.hpp"

namespace cortex::kernels {

enum class amx_mode : uint8_t { off, hardware, emulated };

const char* amx_mode_name(amx_mode m);  // "off", "hardware", "emulated"

// Steps with fewer tokens keep the VNNI kernels: a tile holds 16 tokens,
// and below two tiles' worth the weights' streaming, not the arithmetic,
// bounds the step. The outputs are the same bits either way.
constexpr int amx_min_tokens = 32;

struct amx_decision {
  amx_mode mode = amx_mode::off;
  std::string reason;  // one line: "amx: hardware tiles ...", "amx: not offered: cpu has no amx_int8"
};

// What the decision is made of. The probes are asked only when the decision
// gets to them; each returns "" for yes, or why not.
struct amx_inputs {
  const char* env_amx = nullptr;  // CORTEX_AMX (nullptr: unset)
  const char* env_isa = nullptr;  // CORTEX_ISA (nullptr: unset)
  cpu_features cpu;
  bool hardware_kernels_built = false;  // the *_amx.cpp kernels are in this build
  std::function<std::string()> request_tile_data;
  std::function<std::string(amx_mode)> self_test;  // the tile kernels of that mode against avx512
};

// The decision of the rules above: a pure function of its inputs.
amx_decision decide_amx(const amx_inputs& in);

// The inputs of this process: its environment, detected_cpu_features(), the
// real arch_prctl request and amx_self_test.
amx_inputs process_amx_inputs();

// decide_amx(process_amx_inputs()), made on first use. Thread-safe.
const amx_decision& process_amx_decision();

// The mode the kernels use: the process decision's, or what
// set_amx_mode_for_testing set last. Cheap (one relaxed atomic load).
amx_mode active_amx_mode();

// For tests: emulated is allowed wherever the CPU runs the AVX-512 kernels,
// hardware only where the process decided on it; off always. Returns the
// mode set (off where the request is not allowed).
amx_mode set_amx_mode_for_testing(amx_mode m);

// Whether this build has the hardware tile kernels (x86/*_amx.cpp).
bool amx_hardware_kernels_built();

// The kernel path for logs and `cortex info`: the active isa and the
// process's AMX reason, "kernels: avx512; amx: not offered: cpu has no
// amx_tile". Makes the AMX decision if it is not made yet.
std::string kernel_path_line();

}  // namespace cortex::kernels
