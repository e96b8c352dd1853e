// Test helper: the kernel ISA paths this CPU can run, for parameterised tests.
#pragma once

#include <vector>

#include "kernels/amx_choice.hpp"
#include "kernels/cpu_features.hpp"

namespace cortex::kernels {

inline std::vector<isa> runnable_isas() {
  std::vector<isa> out;
  for (isa i : {isa::scalar, isa::avx2, isa::avx512}) {
    if (static_cast<int>(i) <= static_cast<int>(best_supported_isa())) out.push_back(i);
  }
  return out;
}

// Makes i the active isa; amx runs on the real tiles where this process
// chose them, else on the emulation (wherever the AVX-512 kernels run).
// False where this CPU cannot run i.
inline bool use_isa_for_testing(isa i) {
  if (i == isa::amx && active_amx_mode() == amx_mode::off) set_amx_mode_for_testing(amx_mode::emulated);
  return set_isa_for_testing(i) == i;
}

inline void restore_default_isa() {
  set_amx_mode_for_testing(process_amx_decision().mode);
  set_isa_for_testing(best_supported_isa());
}

}  // namespace cortex::kernels
