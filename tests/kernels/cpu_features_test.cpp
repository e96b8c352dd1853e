#include "kernels/cpu_features.hpp"

#include <gtest/gtest.h>

#include "kernels/amx_choice.hpp"

namespace cortex::kernels {
namespace {

TEST(cpu_features_test, best_isa_is_consistent_with_detected_features) {
  const cpu_features& f = detected_cpu_features();
  const isa best = best_supported_isa();
  if (best >= isa::avx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (best >= isa::avx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni);
  }
  if (best == isa::amx && active_amx_mode() == amx_mode::hardware) {
    EXPECT_TRUE(f.amx_tile && f.amx_int8 && f.amx_bf16 && f.amx_os_state);
  }
  if (f.avx2 && f.fma && f.f16c && f.bmi2) {
    EXPECT_GE(best, isa::avx2);
  }
}

TEST(cpu_features_test, set_isa_for_testing_clamps_to_the_cpu) {
  const isa best = best_supported_isa();
  EXPECT_EQ(set_isa_for_testing(isa::scalar), isa::scalar);
  EXPECT_EQ(active_isa(), isa::scalar);
  const isa capped = best < isa::avx512 ? best : isa::avx512;
  EXPECT_EQ(set_isa_for_testing(isa::avx512), capped);
  EXPECT_EQ(active_isa(), capped);
  EXPECT_EQ(set_isa_for_testing(isa::amx), best);
  set_isa_for_testing(best);
}

TEST(cpu_features_test, names) {
  EXPECT_STREQ(isa_name(isa::scalar), "scalar");
  EXPECT_STREQ(isa_name(isa::avx2), "avx2");
  EXPECT_STREQ(isa_name(isa::avx512), "avx512");
  EXPECT_STREQ(isa_name(isa::amx), "amx");
}

}  // namespace
}  // namespace cortex::kernels
