// Run-time CPU feature detection and the instruction-set choice for kernels.
#pragma once

namespace cortex::kernels {

struct cpu_features {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_vnni = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  bool amx_os_state = false;  // XCR0 enables XTILECFG and XTILEDATA (bits 17, 18)
};

// Instruction sets the kernels are built for, in increasing order.
// avx2 needs avx2+fma+f16c+bmi2; avx512 needs f/bw/vl/dq + vnni (and avx2).
// amx is avx512 whose packed int8 matmuls of steps of amx_min_tokens tokens
// or more run on AMX tiles, where kernels/amx_choice.hpp offers them (the
// hardware, or the emulation under CORTEX_AMX=emulate); every other kernel
// is avx512's.
enum class isa { scalar = 0, avx2 = 1, avx512 = 2, amx = 3 };

// What this CPU and OS support (cpuid, plus xgetbv for saved register state).
const cpu_features& detected_cpu_features();

// The best vector isa (avx512, avx2 or scalar; never amx) a CPU with these
// features runs: the one rule for what each kernel set requires.
isa best_vector_isa(const cpu_features& f);

// Best isa the CPU supports: amx where active_amx_mode() is not off (the
// first call makes the process's AMX decision, kernels/amx_choice.hpp).
isa best_supported_isa();

// The isa kernels dispatch on: best_supported_isa(), lowered by the
// environment variable CORTEX_ISA=scalar|avx2|avx512|amx (never raised above
// what the CPU has), or whatever set_isa_for_testing chose last.
// Thread-safe; cheap (one relaxed atomic load).
isa active_isa();

// Forces the isa for tests and benchmarks, clamped to best_supported_isa().
// Returns the isa actually set. Not meant to race with running kernels.
isa set_isa_for_testing(isa requested);

const char* isa_name(isa i);

}  // namespace cortex::kernels
