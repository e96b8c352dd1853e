// K/V element types: sizes and layouts as llama.cpp's cache types define
// them, parsing, and store -> load round trips within each type's rounding.
#include "kernels/kv_type.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace cortex::kernels {
namespace {

const kv_type k_all[] = {kv_type::f32, kv_type::f16, kv_type::bf16, kv_type::q8_0};

TEST(kv_type, sizes_per_row_as_llama_cpp) {
  // ggml: f32 4 bytes, f16 / bf16 2, q8_0 34 per 32 values (f16 scale + 32 int8).
  EXPECT_EQ(kv_traits(kv_type::f32).row_bytes(128), 512u);
  EXPECT_EQ(kv_traits(kv_type::f16).row_bytes(128), 256u);
  EXPECT_EQ(kv_traits(kv_type::bf16).row_bytes(64), 128u);
  EXPECT_EQ(kv_traits(kv_type::q8_0).row_bytes(128), 136u);
  EXPECT_TRUE(kv_traits(kv_type::q8_0).fits_head_dim(64));
  EXPECT_FALSE(kv_traits(kv_type::q8_0).fits_head_dim(8)) << "stories260K's head_dim";
  EXPECT_TRUE(kv_traits(kv_type::f16).fits_head_dim(8));
}

TEST(kv_type, names_parse_back) {
  for (kv_type t : k_all) {
    kv_type got = kv_type::f32;
    ASSERT_TRUE(parse_kv_type(kv_type_name(t), got)) << kv_type_name(t);
    EXPECT_EQ(got, t);
  }
  kv_type keep = kv_type::bf16;
  EXPECT_FALSE(parse_kv_type("q4_0", keep));
  EXPECT_FALSE(parse_kv_type("F16", keep));
  EXPECT_EQ(keep, kv_type::bf16) << "a bad name leaves the output alone";
}

TEST(kv_type, f16_and_bf16_bit_patterns) {
  // 1.0 = 0x3c00 in binary16, 0x3f80 in bfloat16; -2.5 = 0xc100 / 0xc020.
  const float x[2] = {1.0f, -2.5f};
  uint16_t h[2];
  kv_traits(kv_type::f16).store_row(x, h, 2);
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0xc100);
  kv_traits(kv_type::bf16).store_row(x, h, 2);
  EXPECT_EQ(h[0], 0x3f80);
  EXPECT_EQ(h[1], 0xc020);
}

TEST(kv_type, q8_0_block_layout) {
  // amax 127 -> d = 1 (f16 0x3c00), codes are the values rounded.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i * 4 - 1) * (i % 2 ? 1.0f : -1.0f);
  x[5] = 127.0f;
  x[6] = 2.4f;
  x[7] = -2.6f;
  uint8_t b[34];
  kv_traits(kv_type::q8_0).store_row(x.data(), b, 32);
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
  const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
  EXPECT_EQ(qs[5], 127);
  EXPECT_EQ(qs[6], 2);
  EXPECT_EQ(qs[7], -3);
  EXPECT_EQ(qs[3], 11);
}

TEST(kv_type, round_trip_within_the_types_rounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const int n = 128;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = u(rng);
  x[3] = 0.0f;
  x[4] = 1e-3f;
  for (kv_type t : k_all) {
    const auto& tr = kv_traits(t);
    std::vector<uint8_t> buf(tr.row_bytes(n));
    tr.store_row(x.data(), buf.data(), n);
    tr.load_row(buf.data(), y.data(), n);
    for (int i0 = 0; i0 < n; i0 += 32) {
      float amax = 0.0f;
      for (int i = i0; i < i0 + 32; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
      for (int i = i0; i < i0 + 32; ++i) {
        const float xi = x[static_cast<size_t>(i)], ax = std::fabs(xi);
        // From the definitions: round to nearest keeps half an ulp of 11
        // (f16) / 8 (bf16) significant bits; q8_0 half a step d = amax/127
        // plus the f16 rounding of d on up to 127 steps.
        const float bound = t == kv_type::f32    ? 0.0f
                            : t == kv_type::f16  ? ax * 0x1p-11f
                            : t == kv_type::bf16 ? ax * 0x1p-8f
                                                 : amax / 127.0f * (0.5f + 127.0f * 0x1p-11f);
        ASSERT_LE(std::fabs(y[static_cast<size_t>(i)] - xi), bound) << kv_type_name(t) << " i=" << i << " x=" << xi;
      }
    }
    EXPECT_EQ(y[3], 0.0f) << kv_type_name(t) << ": zero stays zero";
  }
}

}  // namespace
}  // namespace cortex::kernels
