// Type traits, fp16/bf16 conversions, block layouts (hand-built blocks with
// hand-derived values) and quantize -> dequantize error bounds.
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_k_scales.hpp"

namespace cortex {
namespace {

constexpr uint16_t half_one = 0x3c00, half_half = 0x3800, half_quarter = 0x3400, half_minus_one = 0xbc00;

// --- type traits -----------------------------------------------------------

TEST(type_traits, sizes_match_llama_cpp) {
  struct row { uint32_t id; const char* name; int64_t block; size_t bytes; bool supported; };
  const row expected[] = {
      {0, "f32", 1, 4, true},        {1, "f16", 1, 2, true},        {2, "q4_0", 32, 18, true},
      {3, "q4_1", 32, 20, true},     {6, "q5_0", 32, 22, true},     {7, "q5_1", 32, 24, true},
      {8, "q8_0", 32, 34, true},     {9, "q8_1", 32, 36, false},    {10, "q2_K", 256, 84, true},
      {11, "q3_K", 256, 110, true},  {12, "q4_K", 256, 144, true},  {13, "q5_K", 256, 176, true},
      {14, "q6_K", 256, 210, true},  {15, "q8_K", 256, 292, false}, {24, "i8", 1, 1, false},
      {25, "i16", 1, 2, false},      {26, "i32", 1, 4, false},      {27, "i64", 1, 8, false},
      {28, "f64", 1, 8, false},      {30, "bf16", 1, 2, true},
      // ggml-common.h's block_iq*, block_tq*, block_mxfp4 and block_nvfp4.
      {16, "iq2_xxs", 256, 66, true},  {17, "iq2_xs", 256, 74, true},  {18, "iq3_xxs", 256, 98, true},
      {19, "iq1_s", 256, 50, true},    {20, "iq4_nl", 32, 18, true},   {21, "iq3_s", 256, 110, true},
      {22, "iq2_s", 256, 82, true},    {23, "iq4_xs", 256, 136, true}, {29, "iq1_m", 256, 56, true},
      {34, "tq1_0", 256, 54, false},   {35, "tq2_0", 256, 66, false},  {39, "mxfp4", 32, 17, true},
      {40, "nvfp4", 64, 36, false},
  };
  for (const auto& e : expected) {
    const auto t = type_traits(e.id);
    ASSERT_NE(t.name, nullptr) << e.id;
    EXPECT_STREQ(t.name, e.name);
    EXPECT_EQ(t.block_size, e.block) << e.name;
    EXPECT_EQ(t.type_size, e.bytes) << e.name;
    EXPECT_EQ(t.supported, e.supported) << e.name;
    EXPECT_EQ(dequantize_supported(static_cast<ggml_type>(e.id)), e.supported) << e.name;
  }
  for (uint32_t unknown : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 64u, 1000u, 0xffffffffu}) {
    const auto t = type_traits(unknown);
    EXPECT_EQ(t.name, nullptr) << unknown;
    EXPECT_EQ(t.block_size, 0);
    EXPECT_FALSE(t.supported);
  }
  EXPECT_EQ(row_size(ggml_type::q4_k, 4096), 16u * 144u);
  EXPECT_EQ(row_size(ggml_type::q8_0, 64), 2u * 34u);
  EXPECT_EQ(row_size(ggml_type::bf16, 7), 14u);
}

// --- fp16 / bf16 -----------------------------------------------------------

TEST(fp16, decodes_hand_derived_patterns) {
  EXPECT_EQ(fp32_to_bits(fp16_to_fp32(0x0000)), 0x00000000u);
  EXPECT_EQ(fp32_to_bits(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x8200), -std::ldexp(1.0f, -15));
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(fp16_to_fp32(half_one), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x3555), 0x155 * std::ldexp(1.0f, -12) + 0.25f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7c01)));
}

TEST(fp16, encodes_with_round_to_nearest_even) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), half_one);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  // Ties between 1 and its neighbours (half ulp at 1 is 2^-11).
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, down to even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, up to even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // just above tie
  // Overflow: 65520 is the tie between 65504 and 2^16; even is infinity.
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(inf), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-inf), 0xfc00);
  // Subnormals: unit 2^-24.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);      // tie, down to even 0
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25) * 1.0000001f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 units, tie up to even
  EXPECT_EQ(fp32_to_fp16(5 * std::ldexp(1.0f, -25)), 0x0002);  // 2.5 units, tie down to even
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);   // rounds up into the normals
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);
  const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(fp16, every_non_nan_half_round_trips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0) continue;
    ASSERT_EQ(fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(bf16, converts_with_round_to_nearest_even) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f808000u)), 0x3f80);  // tie, down to even
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f818000u)), 0x3f82);  // tie, up to even
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0xbf80ffffu)), 0xbf81);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // overflows to inf
  EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00010000u)), 0x0001);  // subnormal kept
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7f800001u)), 0x7fc0);  // signalling NaN -> quiet, not inf
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0xffc00000u)), 0xffc0);
  EXPECT_EQ(fp32_to_bits(bf16_to_fp32(0x3f81)), 0x3f810000u);
  EXPECT_EQ(fp32_to_bits(bf16_to_fp32(0x8000)), 0x80000000u);
}

// --- k-quant packed scales ---------------------------------------------------

TEST(k_scales, packs_six_bit_scales_and_mins) {
  const uint8_t scale[8] = {1, 2, 3, 4, 0x35, 0x00, 0x3f, 0x10};
  const uint8_t min[8] = {5, 6, 7, 8, 0x2a, 0x3f, 0x00, 0x01};
  uint8_t q[12];
  set_scale_min_k4(scale, min, q);
  // Hand-derived: bytes 0..3 = scale[j] | (scale[j+4] >> 4) << 6, etc.
  const uint8_t expected[12] = {0xc1, 0x02, 0xc3, 0x44, 0x85, 0xc6, 0x07, 0x08, 0xa5, 0xf0, 0x0f, 0x10};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(q[i], expected[i]) << "byte " << i;
  for (int j = 0; j < 8; ++j) {
    uint8_t d, m;
    get_scale_min_k4(j, q, &d, &m);
    EXPECT_EQ(d, scale[j]) << j;
    EXPECT_EQ(m, min[j]) << j;
  }
}

// --- block layouts: one marked element per block -----------------------------

// Dequantizes one block of type t and returns its elements.
template <class block>
std::vector<float> dequantize_block(ggml_type t, const block& b) {
  std::vector<float> y(static_cast<size_t>(type_traits(t).block_size));
  dequantize_row(t, &b, y.data(), static_cast<int64_t>(y.size()));
  return y;
}

// Every element is `rest` except those listed.
void expect_values(const std::vector<float>& y, float rest, std::initializer_list<std::pair<int, float>> marked) {
  for (size_t i = 0; i < y.size(); ++i) {
    float want = rest;
    for (const auto& [idx, v] : marked) if (static_cast<size_t>(idx) == i) want = v;
    EXPECT_EQ(y[i], want) << "element " << i;
  }
}

TEST(dequantize_layout, q4_0) {
  block_q4_0 b;
  b.d = half_half;
  std::memset(b.qs, 0x88, sizeof(b.qs));
  b.qs[3] = 0xf9;  // element 3 = 9 - 8, element 19 = 15 - 8
  expect_values(dequantize_block(ggml_type::q4_0, b), 0.0f, {{3, 0.5f}, {19, 3.5f}});
}

TEST(dequantize_layout, q4_1) {
  block_q4_1 b;
  b.d = half_half;
  b.m = half_minus_one;
  std::memset(b.qs, 0, sizeof(b.qs));
  b.qs[2] = 0x31;
  expect_values(dequantize_block(ggml_type::q4_1, b), -1.0f, {{2, -0.5f}, {18, 0.5f}});
}

TEST(dequantize_layout, q5_0) {
  block_q5_0 b;
  b.d = half_one;
  std::memset(b.qs, 0, sizeof(b.qs));
  const uint32_t qh = 0xffffffffu & ~(1u << 20);  // fifth bit set everywhere but element 20
  std::memcpy(b.qh, &qh, 4);
  b.qs[4] = 0x03;
  expect_values(dequantize_block(ggml_type::q5_0, b), 0.0f, {{4, 3.0f}, {20, -16.0f}});
}

TEST(dequantize_layout, q5_1) {
  block_q5_1 b;
  b.d = half_one;
  b.m = 0;
  std::memset(b.qs, 0, sizeof(b.qs));
  const uint32_t qh = 1u << 7;
  std::memcpy(b.qh, &qh, 4);
  b.qs[7] = 0x21;  // element 7 = 1 + 16, element 23 = 2
  expect_values(dequantize_block(ggml_type::q5_1, b), 0.0f, {{7, 17.0f}, {23, 2.0f}});
}

TEST(dequantize_layout, q8_0) {
  block_q8_0 b;
  b.d = half_quarter;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 4 - 64);
  const auto y = dequantize_block(ggml_type::q8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(j - 16)) << j;
}

TEST(dequantize_layout, q2_k) {
  block_q2_k b{};
  b.d = half_one;
  b.dmin = half_one;
  b.scales[12] = 0x21;  // sub-block 12 (elements 192..207): scale 1, min 2
  b.qs[32 + 5] = 3 << 4;  // element 128*1 + 32*2 + 5 = 197
  std::vector<std::pair<int, float>> marked;
  const auto y = dequantize_block(ggml_type::q2_k, b);
  for (int e = 0; e < 256; ++e) {
    const float want = e == 197 ? 1.0f : (e >= 192 && e < 208 ? -2.0f : 0.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

TEST(dequantize_layout, q3_k) {
  block_q3_k b{};
  b.d = half_one;
  // Raw 6-bit scales are stored +32: 32 = low nibble 0, high bits 2.
  std::memset(b.scales + 8, 0xaa, 4);
  b.scales[5] = 0x30;           // sub-block 13: low nibble 3 -> scale 35 - 32 = 3
  b.qs[32 + 21] = 2 << 4;       // element 128 + 64 + 21 = 213, low bits 2
  b.hmask[21] = 1 << (4 + 2);   // ... and its third bit set: no -4
  const auto y = dequantize_block(ggml_type::q3_k, b);
  for (int e = 0; e < 256; ++e) {
    const float want = e == 213 ? 6.0f : (e >= 208 && e < 224 ? -12.0f : 0.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

// Sub-block 5 of a q4_K / q5_K: scale 19 (0x13), min 34 (0x22).
template <class block>
void set_sub_block_5(block& b) {
  b.d = half_one;
  b.dmin = half_half;
  std::memset(b.scales, 0, sizeof(b.scales));
  b.scales[1] = 0x40;  // top bits of scale 5
  b.scales[5] = 0x80;  // top bits of min 5
  b.scales[9] = 0x23;  // low nibbles: scale 3, min 2
  std::memset(b.qs, 0, sizeof(b.qs));
  b.qs[64 + 7] = 0xb0;  // high nibble of chunk 2: element 64*2 + 32 + 7 = 167
}

TEST(dequantize_layout, q4_k) {
  block_q4_k b;
  set_sub_block_5(b);
  const auto y = dequantize_block(ggml_type::q4_k, b);
  for (int e = 0; e < 256; ++e) {
    const float want = e == 167 ? 19.0f * 11 - 17 : (e >= 160 && e < 192 ? -17.0f : 0.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

TEST(dequantize_layout, q5_k) {
  block_q5_k b;
  set_sub_block_5(b);
  std::memset(b.qh, 0, sizeof(b.qh));
  b.qh[7] = 1 << 5;  // fifth bit of element 7 of sub-block 5
  const auto y = dequantize_block(ggml_type::q5_k, b);
  for (int e = 0; e < 256; ++e) {
    const float want = e == 167 ? 19.0f * 27 - 17 : (e >= 160 && e < 192 ? -17.0f : 0.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

TEST(dequantize_layout, q6_k) {
  block_q6_k b{};
  b.d = half_half;
  b.scales[11] = -3;   // sub-block 11: elements 176..191
  b.ql[64 + 32 + 20] = 0x05;  // element 128 + 32 + 20 = 180: low nibble 5
  b.qh[32 + 20] = 2 << 2;     // ... high bits 2: q = 37 - 32 = 5
  const auto y = dequantize_block(ggml_type::q6_k, b);
  for (int e = 0; e < 256; ++e) {
    const float want = e == 180 ? -7.5f : (e >= 176 && e < 192 ? 48.0f : 0.0f);
    EXPECT_EQ(y[e], want) << e;
  }
}

// --- quantize -> dequantize -------------------------------------------------

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  // Outliers, as real weights have.
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 6.0f;
  return x;
}

std::vector<float> round_trip(ggml_type t, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_size(t, n) + 1, 0xcd);
  EXPECT_EQ(quantize_row(t, x.data(), q.data(), n), row_size(t, n));
  EXPECT_EQ(q.back(), 0xcd) << "wrote past the row";
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) e += (static_cast<double>(x[i]) - y[i]) * (x[i] - y[i]);
  return std::sqrt(e / static_cast<double>(x.size()));
}

constexpr int64_t n_test = 4096;
constexpr double half_eps = 1.0 / 2048;  // fp16 relative rounding of a scale

TEST(quantize, plain_types) {
  const auto x = random_row(n_test, 1);
  EXPECT_EQ(round_trip(ggml_type::f32, x), x);
  const auto h = round_trip(ggml_type::f16, x);
  const auto b = round_trip(ggml_type::bf16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    // Relative half ulp, or half the subnormal unit 2^-24 below 2^-14.
    EXPECT_LE(std::fabs(h[i] - x[i]), std::max(std::fabs(x[i]) * half_eps, std::ldexp(1.0, -25))) << i;
    EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) / 256) << i;
  }
}

// |x - q*d| <= d/2 with d = amax/127, plus up to 127 * |d - fp16(d)|.
TEST(quantize, q8_0_error_within_half_a_step) {
  const auto x = random_row(n_test, 2);
  const auto y = round_trip(ggml_type::q8_0, x);
  for (int64_t blk = 0; blk < n_test / 32; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    const double bound = amax / 127.0 * (0.5 + 127 * half_eps) * (1 + 1e-6);
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[blk * 32 + j] - y[blk * 32 + j]), bound) << blk << " " << j;
  }
}

// d = v/-8 for the largest-magnitude v: levels -8..7 cover [-8d, 7d] in steps
// of d, so the error is <= d/2 except at the +8d end (v itself maps to -8
// exactly; its mirror -v clamps to 7, error d).
TEST(quantize, q4_0_error_within_one_step) {
  const auto x = random_row(n_test, 3);
  const auto y = round_trip(ggml_type::q4_0, x);
  for (int64_t blk = 0; blk < n_test / 32; ++blk) {
    float amax = 0, vmax = 0;
    int imax = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[blk * 32 + j]) > amax) { amax = std::fabs(x[blk * 32 + j]); vmax = x[blk * 32 + j]; imax = j; }
    }
    const double d = amax / 8.0;
    EXPECT_NEAR(y[blk * 32 + imax], vmax, amax * half_eps) << blk;
    for (int j = 0; j < 32; ++j) {
      const double err = std::fabs(x[blk * 32 + j] - y[blk * 32 + j]);
      const bool mirror_end = x[blk * 32 + j] * vmax < 0 && std::fabs(x[blk * 32 + j]) > 7.5 * d;
      ASSERT_LE(err, d * ((mirror_end ? 1.0 : 0.5) + 8 * half_eps) * (1 + 1e-6)) << blk << " " << j;
    }
  }
}

// q4_1 / q5_1: d = (max - min) / nmax, codes round (x - min) / d, so the
// error is <= d/2 plus the fp16 rounding of d (times the code) and of min.
TEST(quantize, q4_1_and_q5_1_error_within_half_a_step) {
  for (const auto& [t, nmax] : {std::pair{ggml_type::q4_1, 15}, std::pair{ggml_type::q5_1, 31}}) {
    SCOPED_TRACE(type_traits(t).name);
    const auto x = random_row(n_test, 5);
    const auto y = round_trip(t, x);
    for (int64_t blk = 0; blk < n_test / 32; ++blk) {
      const auto first = x.begin() + blk * 32;
      const auto [lo, hi] = std::minmax_element(first, first + 32);
      const double d = (*hi - *lo) / nmax;
      const double bound = (d * (0.5 + nmax * half_eps) + std::fabs(*lo) * half_eps) * (1 + 1e-5);
      for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[blk * 32 + j] - y[blk * 32 + j]), bound) << blk << " " << j;
    }
  }
}

// A block holding exactly the grid min + code * d (d, min fp16 numbers)
// quantizes back to those codes: what a llama.cpp file holds survives.
TEST(quantize, q4_1_and_q5_1_keep_values_on_their_grid) {
  std::vector<float> x(64);
  for (int j = 0; j < 32; ++j) {
    x[j] = -1.0f + 0.125f * static_cast<float>(j % 16);       // q4_1 grid: min -1, d 1/8
    x[32 + j] = 0.5f + 0.0625f * static_cast<float>((j * 7) % 32);  // q5_1 grid: min 0.5, d 1/16
  }
  x[3] = 0.875f;   // code 15 present in block 0
  x[35] = 0.5f + 0.0625f * 31;  // code 31 present in block 1
  const auto y4 = round_trip(ggml_type::q4_1, std::vector<float>(x.begin(), x.begin() + 32));
  const auto y5 = round_trip(ggml_type::q5_1, std::vector<float>(x.begin() + 32, x.end()));
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y4[j], x[j]) << j;
    EXPECT_EQ(y5[j], x[32 + j]) << j;
  }
}

// k-quants fit scales by least squares; bound the RMS error relative to the
// data's spread (unit normal here) by what their bit widths allow.
TEST(quantize, k_quants_rms_error) {
  const auto x = random_row(n_test, 4);
  const double rms_q4 = rms_error(x, round_trip(ggml_type::q4_k, x));
  const double rms_q5 = rms_error(x, round_trip(ggml_type::q5_k, x));
  const double rms_q6 = rms_error(x, round_trip(ggml_type::q6_k, x));
  EXPECT_LT(rms_q4, 0.12);
  EXPECT_LT(rms_q5, 0.06);
  EXPECT_LT(rms_q6, 0.03);
  EXPECT_LT(rms_q5, rms_q4 * 0.6);
  EXPECT_LT(rms_q6, rms_q5 * 0.6);
  const double rms_q2 = rms_error(x, round_trip(ggml_type::q2_k, x));
  const double rms_q3 = rms_error(x, round_trip(ggml_type::q3_k, x));
  EXPECT_LT(rms_q2, 0.45);
  EXPECT_LT(rms_q3, 0.26);
  EXPECT_LT(rms_q3, rms_q2 * 0.7);
  EXPECT_LT(rms_q4, rms_q3 * 0.7);
}

TEST(quantize, zero_rows_stay_zero) {
  const std::vector<float> x(512, 0.0f);
  for (ggml_type t : {ggml_type::f16, ggml_type::bf16, ggml_type::q4_0, ggml_type::q4_1, ggml_type::q5_1,
                      ggml_type::q8_0, ggml_type::q2_k, ggml_type::q3_k, ggml_type::q4_k, ggml_type::q5_k,
                      ggml_type::q6_k}) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << type_traits(t).name << " " << i;
  }
}

// q5_0 as ggml's quantize_row_q5_0_ref lays it out: x = j - 16 has its
// largest magnitude at j = 0 (-16), so d = -16 / -16 = 1 and code j = j: low
// nibbles of j and j + 16 share byte j, the fifth bits (set for j >= 16) fill
// the upper half of qh; dequantized, (code - 16) * d gives x back exactly.
TEST(quantize, q5_0_layout_of_a_hand_computed_block) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = static_cast<float>(j - 16);
  std::vector<uint8_t> q(22, 0);
  ASSERT_EQ(quantize_row(ggml_type::q5_0, x.data(), q.data(), 32), 22u);
  EXPECT_EQ(q[0] | q[1] << 8, 0x3C00) << "d = 1.0 in fp16";
  EXPECT_EQ(q[2], 0x00);
  EXPECT_EQ(q[3], 0x00);
  EXPECT_EQ(q[4], 0xFF);
  EXPECT_EQ(q[5], 0xFF);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(q[static_cast<size_t>(6 + j)], j | (j << 4)) << j;
  std::vector<float> back(32);
  dequantize_row(ggml_type::q5_0, q.data(), back.data(), 32);
  EXPECT_EQ(back, x);
}

TEST(quantize, unsupported_types_write_nothing) {
  const std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> q(1024, 0xcd);
  for (ggml_type t : {ggml_type::iq2_xxs, ggml_type::q8_1, ggml_type::q8_k, ggml_type::i32}) {
    EXPECT_FALSE(quantize_supported(t));
    EXPECT_EQ(quantize_row(t, x.data(), q.data(), 256), 0u);
  }
  for (auto v : q) ASSERT_EQ(v, 0xcd);
}

}  // namespace
}  // namespace cortex
