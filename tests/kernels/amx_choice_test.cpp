// The AMX decision (kernels/amx_choice.hpp) as a function of its inputs: a
// CPU without AMX, refused tile data, a failed self-test, and CORTEX_AMX /
// CORTEX_ISA; and the self-test (kernels/amx_self_test.hpp), which passes
// the tile kernels and refuses one off by one ulp in one output, naming the
// type and the row.
#include "kernels/amx_choice.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/amx_self_test.hpp"
#include "kernels/fp16.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {
namespace {

cpu_features sapphire_rapids() {
  cpu_features f;
  f.avx2 = f.fma = f.f16c = f.bmi2 = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512_vnni = true;
  f.amx_tile = f.amx_int8 = f.amx_bf16 = f.amx_os_state = true;
  return f;
}

cpu_features zen4() {
  cpu_features f = sapphire_rapids();
  f.amx_tile = f.amx_int8 = f.amx_bf16 = f.amx_os_state = false;
  return f;
}

// Inputs whose probes answer as given and count their calls.
struct probes {
  std::string permission, self_test;
  int permission_calls = 0, self_test_calls = 0;
  amx_mode tested = amx_mode::off;

  amx_inputs inputs(const cpu_features& cpu, const char* env_amx = nullptr, const char* env_isa = nullptr) {
    amx_inputs in;
    in.cpu = cpu;
    in.env_amx = env_amx;
    in.env_isa = env_isa;
    in.hardware_kernels_built = true;
    in.request_tile_data = [this] {
      ++permission_calls;
      return permission;
    };
    in.self_test = [this](amx_mode m) {
      ++self_test_calls;
      tested = m;
      return self_test;
    };
    return in;
  }
};

TEST(amx_choice_test, an_amx_cpu_granted_tile_data_whose_self_test_passes_runs_hardware_tiles) {
  probes p;
  const amx_decision d = decide_amx(p.inputs(sapphire_rapids()));
  EXPECT_EQ(d.mode, amx_mode::hardware);
  EXPECT_EQ(d.reason, "amx: hardware tiles (self-test passed)");
  EXPECT_EQ(p.permission_calls, 1);
  EXPECT_EQ(p.self_test_calls, 1);
  EXPECT_EQ(p.tested, amx_mode::hardware);
  EXPECT_EQ(decide_amx(p.inputs(sapphire_rapids(), "on", "amx")).mode, amx_mode::hardware);
}

TEST(amx_choice_test, a_cpu_without_amx_is_not_offered_and_nothing_is_probed) {
  probes p;
  amx_decision d = decide_amx(p.inputs(zen4()));
  EXPECT_EQ(d.mode, amx_mode::off);
  EXPECT_EQ(d.reason, "amx: not offered: cpu has no amx_tile");
  cpu_features f = sapphire_rapids();
  f.amx_int8 = false;
  EXPECT_EQ(decide_amx(p.inputs(f)).reason, "amx: not offered: cpu has no amx_int8");
  f = sapphire_rapids();
  f.amx_bf16 = false;
  EXPECT_EQ(decide_amx(p.inputs(f)).reason, "amx: not offered: cpu has no amx_bf16");
  f = sapphire_rapids();
  f.amx_os_state = false;
  EXPECT_EQ(decide_amx(p.inputs(f)).reason, "amx: not offered: the OS does not enable tile state (XCR0 bits 17, 18)");
  f = sapphire_rapids();
  f.avx512_vnni = false;
  EXPECT_EQ(decide_amx(p.inputs(f)).mode, amx_mode::off);
  EXPECT_NE(decide_amx(p.inputs(f)).reason.find("cpu has no avx512 vnni"), std::string::npos);
  EXPECT_EQ(p.permission_calls, 0);
  EXPECT_EQ(p.self_test_calls, 0);
}

TEST(amx_choice_test, refused_tile_data_is_the_reason_and_skips_the_self_test) {
  probes p;
  p.permission = "Linux refused tile data (arch_prctl ARCH_REQ_XCOMP_PERM: Operation not permitted)";
  const amx_decision d = decide_amx(p.inputs(sapphire_rapids()));
  EXPECT_EQ(d.mode, amx_mode::off);
  EXPECT_EQ(d.reason, "amx: not offered: " + p.permission);
  EXPECT_EQ(p.self_test_calls, 0);
}

TEST(amx_choice_test, a_failed_self_test_is_the_reason) {
  probes p;
  p.self_test = "q4_0: row 17, token 3 of 21: 0x3f800001 where avx512 gives 0x3f800000";
  const amx_decision d = decide_amx(p.inputs(sapphire_rapids()));
  EXPECT_EQ(d.mode, amx_mode::off);
  EXPECT_EQ(d.reason, "amx: not offered: self-test: " + p.self_test);
}

TEST(amx_choice_test, a_build_without_the_tile_kernels_is_not_offered) {
  probes p;
  amx_inputs in = p.inputs(sapphire_rapids());
  in.hardware_kernels_built = false;
  EXPECT_EQ(decide_amx(in).reason,
            "amx: not offered: built without the tile kernels (the compiler took no -mamx-int8)");
  EXPECT_EQ(p.permission_calls, 0);
}

// CORTEX_AMX=off, and a value that is none of on, off, emulate (named in
// the reason), keep AMX off on an AMX CPU without probing anything.
TEST(amx_choice_test, cortex_amx_off_or_a_bad_value_keeps_it_off_without_probing) {
  const std::pair<const char*, const char*> cases[] = {
      {"off", "amx: off (CORTEX_AMX=off)"},
      {"yes please", "amx: not offered: CORTEX_AMX=yes please is not one of on, off, emulate"}};
  for (const auto& [env, reason] : cases) {
    probes p;
    const amx_decision d = decide_amx(p.inputs(sapphire_rapids(), env));
    EXPECT_EQ(d.mode, amx_mode::off) << env;
    EXPECT_EQ(d.reason, reason);
    EXPECT_EQ(p.permission_calls + p.self_test_calls, 0) << env;
  }
}

TEST(amx_choice_test, cortex_amx_emulate_runs_the_emulation_after_its_self_test_on_any_avx512_cpu) {
  probes p;
  const amx_decision d = decide_amx(p.inputs(zen4(), "emulate"));
  EXPECT_EQ(d.mode, amx_mode::emulated);
  EXPECT_NE(d.reason.find("emulated tiles"), std::string::npos);
  EXPECT_EQ(p.tested, amx_mode::emulated);
  EXPECT_EQ(p.permission_calls, 0);
  p.self_test = "q8_0: row 0, token 0 of 1: 0x00000000 where avx512 gives 0x80000000";
  EXPECT_EQ(decide_amx(p.inputs(zen4(), "emulate")).reason,
            "amx: not offered: self-test on emulated tiles: " + p.self_test);
  cpu_features no_avx512 = zen4();
  no_avx512.avx512f = false;
  EXPECT_EQ(decide_amx(p.inputs(no_avx512, "emulate")).mode, amx_mode::off);
}

TEST(amx_choice_test, cortex_isa_below_amx_caps_it) {
  probes p;
  for (const char* below : {"scalar", "avx2", "avx512"}) {
    const amx_decision d = decide_amx(p.inputs(sapphire_rapids(), nullptr, below));
    EXPECT_EQ(d.mode, amx_mode::off);
    EXPECT_EQ(d.reason, std::string("amx: not offered: CORTEX_ISA=") + below);
    EXPECT_EQ(decide_amx(p.inputs(sapphire_rapids(), "emulate", below)).mode, amx_mode::off);
  }
  EXPECT_EQ(p.permission_calls + p.self_test_calls, 0);
}

// The process's own decision is one of the rules' outcomes, and agrees with
// what the CPU reports.
TEST(amx_choice_test, the_process_decision_has_a_reason_line) {
  const amx_decision& d = process_amx_decision();
  EXPECT_EQ(d.reason.rfind("amx: ", 0), 0u) << d.reason;
  if (!detected_cpu_features().amx_int8) {
    EXPECT_NE(d.mode, amx_mode::hardware);
  }
}

// ---- the self-test

const cpu_features& this_cpu() { return detected_cpu_features(); }
bool runs_avx512() {
  const cpu_features& f = this_cpu();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512_vnni && f.avx2 && f.fma && f.f16c;
}

TEST(amx_self_test, the_emulated_tile_kernels_pass) {
  if (!runs_avx512()) GTEST_SKIP() << "the self-test compares against the AVX-512 kernels";
  const std::vector<amx_kernel_under_test> k = amx_kernels_of(amx_mode::emulated);
  EXPECT_EQ(k.size(), 7u);  // q4_0, q5_0, q8_0, iq4_nl, mxfp4, q4_k, q5_k
  EXPECT_EQ(amx_self_test(k), "");
  EXPECT_TRUE(amx_kernels_of(amx_mode::off).empty());
  EXPECT_EQ(amx_self_test({}), "no tile kernels");
}

// The emulated q4_0 tile kernel, then one output (row 17, token 3 of every
// call with 4 tokens or more) off by one ulp.
void broken_q4_0(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  quant_traits_of(ggml_type::q4_0).packed->amx_emulated(w, x, n_tokens, p0, p1);
  if (n_tokens > 3 && p0 <= 1 && 1 < p1) {
    float& y = w.segments[0].y[3 * w.segments[0].ld + 17];
    y = fp32_from_bits(fp32_to_bits(y) + 1);
  }
}

TEST(amx_self_test, a_kernel_off_by_one_ulp_in_one_output_is_refused_naming_type_and_row) {
  if (!runs_avx512()) GTEST_SKIP() << "the self-test compares against the AVX-512 kernels";
  std::vector<amx_kernel_under_test> k = amx_kernels_of(amx_mode::emulated);
  k[0] = {ggml_type::q4_0, broken_q4_0};
  const std::string why = amx_self_test(k);
  EXPECT_EQ(why.rfind("q4_0: row 17, token 3 of 16: 0x", 0), 0u) << why;
  EXPECT_NE(why.find("where avx512 gives 0x"), std::string::npos) << why;

  // The decision of a process whose tile kernel is that one.
  amx_inputs in;
  in.cpu = zen4();
  in.env_amx = "emulate";
  in.self_test = [&](amx_mode) { return amx_self_test(k); };
  const amx_decision d = decide_amx(in);
  EXPECT_EQ(d.mode, amx_mode::off);
  EXPECT_NE(d.reason.find("not offered"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("q4_0: row 17"), std::string::npos) << d.reason;
}

}  // namespace
}  // namespace cortex::kernels
