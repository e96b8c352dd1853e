// Test helper: the kernel ISA paths this CPU can run, for parameterised tests.
#pragma once

#include <vector>

#include "kernels/cpu_features.hpp"

namespace cortex::kernels {

inline std::vector<isa> runnable_isas() {
  std::vector<isa> out;
  for (isa i : {isa::scalar, isa::avx2, isa::avx512}) {
    if (static_cast<int>(i) <= static_cast<int>(best_supported_isa())) out.push_back(i);
  }
  return out;
}

inline void restore_default_isa() { set_isa_for_testing(best_supported_isa()); }

}  // namespace cortex::kernels
