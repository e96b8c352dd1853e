#include "kernels/cpu_features.hpp"

#include <atomic>
#include <cpuid.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/amx_choice.hpp"

namespace cortex::kernels {

namespace {

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

cpu_features detect() {
  cpu_features f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned max_leaf = eax;
  __cpuid(1, eax, ebx, ecx, edx);
  const bool osxsave = (ecx >> 27) & 1;
  const bool fma = (ecx >> 12) & 1;
  const bool f16c = (ecx >> 29) & 1;
  const bool avx = (ecx >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!ymm_state || max_leaf < 7) return f;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  f.avx2 = (ebx >> 5) & 1;
  f.bmi2 = (ebx >> 8) & 1;
  f.fma = fma;
  f.f16c = f16c;
  if (zmm_state) {
    f.avx512f = (ebx >> 16) & 1;
    f.avx512dq = (ebx >> 17) & 1;
    f.avx512bw = (ebx >> 30) & 1;
    f.avx512vl = (ebx >> 31) & 1;
    f.avx512_vnni = (ecx >> 11) & 1;
  }
  f.amx_bf16 = (edx >> 22) & 1;
  f.amx_tile = (edx >> 24) & 1;
  f.amx_int8 = (edx >> 25) & 1;
  f.amx_os_state = ((xcr0 >> 17) & 3) == 3;
  return f;
}

isa vector_isa() {
  static const isa best = best_vector_isa(detected_cpu_features());
  return best;
}

isa clamp_isa(isa requested) {
  const isa best = best_supported_isa();
  return static_cast<int>(requested) > static_cast<int>(best) ? best : requested;
}

isa initial_isa() {
  const char* env = std::getenv("CORTEX_ISA");
  if (env == nullptr) return best_supported_isa();
  if (std::strcmp(env, "scalar") == 0) return isa::scalar;
  if (std::strcmp(env, "avx2") == 0) return clamp_isa(isa::avx2);
  if (std::strcmp(env, "avx512") == 0) return clamp_isa(isa::avx512);
  return best_supported_isa();  // amx, or a value amx_choice.cpp reports
}

std::atomic<int>& active_isa_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

}  // namespace

isa best_vector_isa(const cpu_features& f) {
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512_vnni) return isa::avx512;
  if (avx2) return isa::avx2;
  return isa::scalar;
}

const cpu_features& detected_cpu_features() {
  static const cpu_features features = detect();
  return features;
}

isa best_supported_isa() {
  const isa best = vector_isa();
  return best == isa::avx512 && active_amx_mode() != amx_mode::off ? isa::amx : best;
}

isa active_isa() { return static_cast<isa>(active_isa_slot().load(std::memory_order_relaxed)); }

isa set_isa_for_testing(isa requested) {
  const isa chosen = clamp_isa(requested);
  active_isa_slot().store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

const char* isa_name(isa i) {
  switch (i) {
    case isa::scalar: return "scalar";
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
    case isa::amx: return "amx";
  }
  return "unknown";
}

}  // namespace cortex::kernels
