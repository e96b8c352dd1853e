#include "kernels/amx_choice.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kernels/amx_self_test.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {

namespace {

amx_decision not_offered(const std::string& why) { return {amx_mode::off, "amx: not offered: " + why}; }

bool runs_avx512(const cpu_features& f) { return best_vector_isa(f) == isa::avx512; }

// Linux hands out tile data (8 KiB of state per thread) on request only; a
// tile instruction before the grant is a SIGILL.
std::string request_tile_data_from_linux() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long arch_req_xcomp_perm = 0x1023;
  constexpr long xfeature_xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0) {
    return std::string("Linux refused tile data (arch_prctl ARCH_REQ_XCOMP_PERM: ") + std::strerror(errno) + ")";
  }
  return "";
#else
  return "tile data is only requested on Linux";
#endif
}

std::atomic<int>& mode_slot() {
  static std::atomic<int> slot{static_cast<int>(process_amx_decision().mode)};
  return slot;
}

}  // namespace

const char* amx_mode_name(amx_mode m) {
  switch (m) {
    case amx_mode::off: return "off";
    case amx_mode::hardware: return "hardware";
    case amx_mode::emulated: return "emulated";
  }
  return "unknown";
}

amx_decision decide_amx(const amx_inputs& in) {
  const std::string env_amx = in.env_amx != nullptr ? in.env_amx : "";
  if (env_amx == "off") return {amx_mode::off, "amx: off (CORTEX_AMX=off)"};
  const bool emulate = env_amx == "emulate";
  if (!emulate && !env_amx.empty() && env_amx != "on") {
    return not_offered("CORTEX_AMX=" + env_amx + " is not one of on, off, emulate");
  }
  if (in.env_isa != nullptr) {
    for (const char* below : {"scalar", "avx2", "avx512"}) {
      if (std::strcmp(in.env_isa, below) == 0) return not_offered(std::string("CORTEX_ISA=") + below);
    }
  }
  if (!runs_avx512(in.cpu)) return not_offered("cpu has no avx512 vnni (the tile kernels' epilogue is AVX-512)");
  if (emulate) {
    const std::string why = in.self_test ? in.self_test(amx_mode::emulated) : "no self-test";
    if (!why.empty()) return not_offered("self-test on emulated tiles: " + why);
    return {amx_mode::emulated, "amx: emulated tiles (CORTEX_AMX=emulate: a scalar emulation, for tests, slow)"};
  }
  if (!in.cpu.amx_tile) return not_offered("cpu has no amx_tile");
  if (!in.cpu.amx_int8) return not_offered("cpu has no amx_int8");
  if (!in.cpu.amx_bf16) return not_offered("cpu has no amx_bf16");
  if (!in.cpu.amx_os_state) return not_offered("the OS does not enable tile state (XCR0 bits 17, 18)");
  if (!in.hardware_kernels_built) {
    return not_offered("built without the tile kernels (the compiler took no -mamx-int8)");
  }
  std::string why = in.request_tile_data ? in.request_tile_data() : "no tile data request";
  if (!why.empty()) return not_offered(why);
  why = in.self_test ? in.self_test(amx_mode::hardware) : "no self-test";
  if (!why.empty()) return not_offered("self-test: " + why);
  return {amx_mode::hardware, "amx: hardware tiles (self-test passed)"};
}

bool amx_hardware_kernels_built() {
  return quant_traits_of(ggml_type::q4_0).packed->kernels[static_cast<int>(isa::amx)] != nullptr;
}

amx_inputs process_amx_inputs() {
  amx_inputs in;
  in.env_amx = std::getenv("CORTEX_AMX");
  in.env_isa = std::getenv("CORTEX_ISA");
  in.cpu = detected_cpu_features();
  in.hardware_kernels_built = amx_hardware_kernels_built();
  in.request_tile_data = request_tile_data_from_linux;
  in.self_test = [](amx_mode m) { return amx_self_test(amx_kernels_of(m)); };
  return in;
}

const amx_decision& process_amx_decision() {
  static const amx_decision d = decide_amx(process_amx_inputs());
  return d;
}

std::string kernel_path_line() {
  return std::string("kernels: ") + isa_name(active_isa()) + "; " + process_amx_decision().reason;
}

amx_mode active_amx_mode() { return static_cast<amx_mode>(mode_slot().load(std::memory_order_relaxed)); }

amx_mode set_amx_mode_for_testing(amx_mode m) {
  bool allowed = true;
  if (m == amx_mode::emulated) allowed = runs_avx512(detected_cpu_features());
  if (m == amx_mode::hardware) allowed = process_amx_decision().mode == amx_mode::hardware;
  const amx_mode set = allowed ? m : amx_mode::off;
  mode_slot().store(static_cast<int>(set), std::memory_order_relaxed);
  return set;
}

}  // namespace cortex::kernels
