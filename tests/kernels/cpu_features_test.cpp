#include "kernels/cpu_features.hpp"

#include <gtest/gtest.h>

namespace cortex::kernels {
namespace {

TEST(cpu_features_test, best_isa_is_consistent_with_detected_features) {
  const cpu_features& f = detected_cpu_features();
  const isa best = best_supported_isa();
  if (best >= isa::avx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (best == isa::avx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni);
  }
  if (f.avx2 && f.fma && f.f16c && f.bmi2) {
    EXPECT_GE(best, isa::avx2);
  }
}

TEST(cpu_features_test, set_isa_for_testing_clamps_to_the_cpu) {
  const isa best = best_supported_isa();
  EXPECT_EQ(set_isa_for_testing(isa::scalar), isa::scalar);
  EXPECT_EQ(active_isa(), isa::scalar);
  EXPECT_EQ(set_isa_for_testing(isa::avx512), best);
  EXPECT_EQ(active_isa(), best);
  set_isa_for_testing(best);
}

TEST(cpu_features_test, names) {
  EXPECT_STREQ(isa_name(isa::scalar), "scalar");
  EXPECT_STREQ(isa_name(isa::avx2), "avx2");
  EXPECT_STREQ(isa_name(isa::avx512), "avx512");
}

}  // namespace
}  // namespace cortex::kernels
