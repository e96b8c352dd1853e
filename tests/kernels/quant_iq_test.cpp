// The non-linear 4-bit formats (iq4_nl, iq4_xs, mxfp4) and the lattice
// codebooks (iq1_s .. iq3_s): block layouts from hand-built blocks, mxfp4
// against the OCP microscaling spec's definition (E2M1 elements times
// 2^(E - 127)), and quantize -> dequantize properties. Bit-exactness against
// llama.cpp is checked on real files by dequant_golden_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.hpp"
#include "kernels/quant.hpp"
#include "kernels/quant_blocks.hpp"

namespace cortex {
namespace {

constexpr uint16_t half_one = 0x3c00, half_half = 0x3800;

template <class block>
std::vector<float> dequantize_block(ggml_type t, const block& b) {
  std::vector<float> y(static_cast<size_t>(type_traits(t).block_size));
  dequantize_row(t, &b, y.data(), static_cast<int64_t>(y.size()));
  return y;
}

// iq4_nl's table as llama.cpp's ggml-common.h publishes it (kvalues_iq4nl).
constexpr int iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(dequantize_layout, iq4_nl) {
  block_iq4_nl b;
  b.d = half_half;
  std::memset(b.qs, 0x88, sizeof(b.qs));  // code 8: value 1
  b.qs[3] = 0xf0;                         // element 3: code 0, element 19: code 15
  const auto y = dequantize_block(ggml_type::iq4_nl, b);
  for (int j = 0; j < 32; ++j) {
    const float want = j == 3 ? -63.5f : (j == 19 ? 56.5f : 0.5f);
    EXPECT_EQ(y[j], want) << j;
  }
  for (int c = 0; c < 16; ++c) {
    b.qs[0] = static_cast<uint8_t>(c);
    EXPECT_EQ(dequantize_block(ggml_type::iq4_nl, b)[0], 0.5f * static_cast<float>(iq4nl_values[c])) << "code " << c;
  }
}

TEST(dequantize_layout, iq4_xs) {
  block_iq4_xs b{};
  b.d = half_one;
  b.scales_h = 0xaaaa;  // high bits 2 everywhere: scale 32 + low nibble - 32
  b.scales_l[2] = 0x30;  // sub-block 5's low nibble 3: scale 3 (sub-block 4: 0)
  std::memset(b.qs, 0x88, sizeof(b.qs));
  b.qs[16 * 5 + 7] = 0x0f;  // sub-block 5: element 7 code 15, element 23 code 0
  const auto y = dequantize_block(ggml_type::iq4_xs, b);
  for (int e = 0; e < 256; ++e) {
    float want = 0.f;
    if (e == 5 * 32 + 7) {
      want = 3.f * 113;
    } else if (e == 5 * 32 + 23) {
      want = 3.f * -127;
    } else if (e / 32 == 5) {
      want = 3.f;
    }
    EXPECT_EQ(y[e], want) << e;
  }
  // Sub-block 1's scale -32 (raw 0): low nibble in scales_l[0]'s high half,
  // high bits at bits 2-3 of scales_h.
  b.scales_h = static_cast<uint16_t>(0xaaaa & ~0x000c);
  EXPECT_EQ(dequantize_block(ggml_type::iq4_xs, b)[32], -32.f);
}

// OCP MX v1.0: E2M1 is sign, 2 exponent bits (bias 1), 1 mantissa bit; the
// scale E8M0 is 2^(E - 127).
double e2m1_value(int code) {
  const int sign = code >> 3, exp = (code >> 1) & 3, mant = code & 1;
  const double v = exp == 0 ? 0.5 * mant : std::ldexp(1.0 + 0.5 * mant, exp - 1);
  return sign ? -v : v;
}

TEST(dequantize_layout, mxfp4_is_e2m1_times_the_e8m0_scale) {
  block_mxfp4 b;
  for (int e = 0; e < 256; ++e) {
    b.e = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto y = dequantize_block(ggml_type::mxfp4, b);
    for (int j = 0; j < 32; ++j) {
      const int code = j < 16 ? j : 15 - (j - 16);
      const double want = std::ldexp(e2m1_value(code), e - 127);
      if (std::fabs(want) > 3.4e38) {
        EXPECT_TRUE(std::isinf(y[j])) << "e " << e << " code " << code;
      } else {
        EXPECT_EQ(y[j], static_cast<float>(want)) << "e " << e << " code " << code;  // exact, subnormals too
      }
    }
  }
}

// --- lattice codebooks: one marked group per block ---------------------------
//
// Entries of llama.cpp's codebooks (ggml-common.h) that these blocks use:
// iq2 grids: entry 0 all 8, entry 1 = 43 then seven 8s; iq2xs_grid[511] and
// iq2s_grid[1023] all 43; iq3xxs_grid: 0 = {4, 4, 4, 4}, 255 = {4, 28, 52,
// 62}; iq3s_grid: 0 = {1, 1, 1, 1}, 511 = {1, 1, 15, 15}; iq1s_grid: 0 all -1,
// 2047 all +1. Sign bits stored as 7 get an eighth that makes their count even.

// Every element is `rest` except those listed (later entries win).
void expect_super_block(const std::vector<float>& y, float rest, const std::vector<std::pair<int, float>>& marked) {
  ASSERT_EQ(y.size(), 256u);
  std::vector<float> want(256, rest);
  for (const auto& [idx, v] : marked) want[static_cast<size_t>(idx)] = v;
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[e]) << "element " << e;
}

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

TEST(dequantize_layout, iq2_xxs) {
  block_iq2_xxs b{};
  b.d = half_one;  // all indices 0, no signs, scale 2*0+1: every value 8 / 8
  auto* q = reinterpret_cast<uint8_t*>(b.qs);
  q[8 * 3 + 2] = 1;  // block 3, group 2 (elements 112..119): entry 1
  // block 3's word: group 1 signs 0000001 (+ parity bit 7), group 2 signs
  // 0000101, scale 5: (0.5 + 5) / 4 = 1.375.
  put_u32(q + 8 * 3 + 4, (1u << 7) | (5u << 14) | (5u << 28));
  std::vector<std::pair<int, float>> marked;
  for (int e = 96; e < 128; ++e) marked.emplace_back(e, 11.f);
  marked.emplace_back(104, -11.f);
  marked.emplace_back(111, -11.f);
  marked.emplace_back(112, -1.375f * 43);
  marked.emplace_back(114, -11.f);
  expect_super_block(dequantize_block(ggml_type::iq2_xxs, b), 1.f, marked);
}

TEST(dequantize_layout, iq2_xs) {
  block_iq2_xs b{};
  b.d = half_one;
  b.scales[5] = 0x32;  // block 5: elements 160..175 scale 2*2+1, 176..191 2*3+1
  b.qs[4 * 5 + 3] = static_cast<uint16_t>(511 | (3u << 9));  // group 3 (184..191): entry 511, signs 0, 1
  std::vector<std::pair<int, float>> marked;
  for (int e = 160; e < 176; ++e) marked.emplace_back(e, 5.f);
  for (int e = 176; e < 184; ++e) marked.emplace_back(e, 7.f);
  for (int e = 184; e < 192; ++e) marked.emplace_back(e, e < 186 ? -37.625f : 37.625f);
  expect_super_block(dequantize_block(ggml_type::iq2_xs, b), 1.f, marked);
}

TEST(dequantize_layout, iq2_s) {
  block_iq2_s b{};
  b.d = half_one;
  b.scales[6] = 0x10;           // block 6: 192..207 scale 1, 208..223 scale 3
  b.qs[4 * 6 + 2] = 0xff;       // group 2 (208..215): low index bits
  b.qh[6] = 3 << 4;             // ... top bits 3: entry 1023
  b.qs[32 + 4 * 6 + 2] = 0x81;  // its sign byte: elements 0 and 7
  const auto y = dequantize_block(ggml_type::iq2_s, b);
  for (int e = 0; e < 256; ++e) {
    float want = 1.f;
    if (e >= 208 && e < 216) {
      want = (e == 208 || e == 215) ? -16.125f : 16.125f;
    } else if (e >= 216 && e < 224) {
      want = 3.f;
    }
    EXPECT_EQ(y[e], want) << "element " << e;
  }
}

TEST(dequantize_layout, iq3_xxs) {
  block_iq3_xxs b{};
  b.d = half_one;   // entries 0 (all 4), scale (0.5 + 0) / 2: every value 1
  b.qs[8 * 2 + 3] = 255;  // block 2, group 1, second 4 values (76..79): entry 255
  put_u32(b.qs + 64 + 4 * 2, (0x40u << 7) | (3u << 28));  // group 1 signs 1000000 (+ bit 7), scale 3
  const auto y = dequantize_block(ggml_type::iq3_xxs, b);
  for (int e = 0; e < 256; ++e) {
    float want = e >= 64 && e < 96 ? 7.f : 1.f;
    if (e == 77) want = 1.75f * 28;
    if (e == 78) want = -1.75f * 52;
    if (e == 79) want = -1.75f * 62;
    EXPECT_EQ(y[e], want) << "element " << e;
  }
}

TEST(dequantize_layout, iq3_s) {
  block_iq3_s b{};
  b.d = half_half;        // entries 0 (all 1), scale 2*0+1: every value 0.5
  b.scales[3] = 0x20;     // block 7 (224..255): scale 2*2+1
  b.qs[8 * 7 + 3] = 0xff;  // group 1, second 4 values (236..239)
  b.qh[7] = 1 << 3;        // ... 9th bit of index 3: entry 511
  b.signs[4 * 7 + 1] = 0x80;  // element 7 of group 1
  const auto y = dequantize_block(ggml_type::iq3_s, b);
  for (int e = 0; e < 256; ++e) {
    float want = e >= 224 ? 2.5f : 0.5f;
    if (e == 238) want = 37.5f;
    if (e == 239) want = -37.5f;
    EXPECT_EQ(y[e], want) << "element " << e;
  }
}

TEST(dequantize_layout, iq1_s) {
  block_iq1_s b{};
  b.d = half_one;  // entries 0 (all -1), delta +1/8, scale 1: every value -0.875
  b.qs[4 * 4 + 2] = 0xff;  // block 4, group 2 (144..151): low index bits
  b.qh[4] = static_cast<uint16_t>((1u << 15) | (3u << 12) | (7u << 6));  // delta -1/8, scale 7, entry 2047
  const auto y = dequantize_block(ggml_type::iq1_s, b);
  for (int e = 0; e < 256; ++e) {
    float want = -0.875f;
    if (e >= 128 && e < 160) want = e >= 144 && e < 152 ? 6.125f : -7.875f;
    EXPECT_EQ(y[e], want) << "element " << e;
  }
}

TEST(dequantize_layout, iq1_m) {
  block_iq1_m b{};
  // d = 1.0 (f16 0x3c00) in the top nibbles of the scale words 0..3.
  b.scales[5] = 0xc0;
  b.scales[7] = 0x30;
  b.scales[5] |= 0x06;     // word 2, bits 9..11: block 5's second 16 (176..191) scale 2*3+1
  b.qs[4 * 5 + 2] = 0xff;  // group 2 (176..183) low index bits
  b.qh[2 * 5 + 1] = 0x0f;  // its nibble: top bits 7 (entry 2047), delta -1/8
  const auto y = dequantize_block(ggml_type::iq1_m, b);
  for (int e = 0; e < 256; ++e) {
    float want = -0.875f;
    if (e >= 176 && e < 184) want = 6.125f;
    if (e >= 184 && e < 192) want = -6.125f;
    EXPECT_EQ(y[e], want) << "element " << e;
  }
}

// --- quantize -> dequantize -------------------------------------------------

std::vector<float> round_trip(ggml_type t, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_size(t, n) + 1, 0xcd);
  EXPECT_EQ(quantize_row(t, x.data(), q.data(), n), row_size(t, n));
  EXPECT_EQ(q.back(), 0xcd) << "wrote past the row";
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

std::vector<float> normal_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 6.0f;  // outliers, as real weights have
  return x;
}

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) e += (static_cast<double>(x[i]) - y[i]) * (x[i] - y[i]);
  return std::sqrt(e / static_cast<double>(x.size()));
}

// A block holding exactly d * table values (d a power of two, the largest
// magnitude -127 d present) comes back unchanged: the scale search finds d.
TEST(quantize_iq, iq4_nl_keeps_values_on_its_grid) {
  std::vector<float> x(64);
  const float d[2] = {0.015625f, -0.25f};
  for (int j = 0; j < 64; ++j) x[j] = d[j / 32] * static_cast<float>(iq4nl_values[(j * 5 + j / 32) % 16]);
  x[7] = d[0] * -127.f;
  x[40] = d[1] * -127.f;
  const auto y = round_trip(ggml_type::iq4_nl, x);
  for (int j = 0; j < 64; ++j) EXPECT_EQ(y[j], x[j]) << j;
}

// Elements at E2M1 values times 2^k, the largest magnitude 4 or 6 times 2^k
// (so llama.cpp's exponent choice floor(log2(amax)) - 2 gives 2^k): exact.
TEST(quantize_iq, mxfp4_keeps_values_on_its_grid) {
  std::vector<float> x(96);
  const int k[3] = {-3, 0, 5};
  for (int j = 0; j < 96; ++j) x[j] = static_cast<float>(std::ldexp(e2m1_value((j * 3) % 16), k[j / 32]));
  x[0] = static_cast<float>(std::ldexp(-6.0, k[0]));
  x[33] = static_cast<float>(std::ldexp(4.0, k[1]));
  x[95] = static_cast<float>(std::ldexp(-4.0, k[2]));
  const auto y = round_trip(ggml_type::mxfp4, x);
  for (int j = 0; j < 96; ++j) EXPECT_EQ(y[j], x[j]) << j;
}

// mxfp4 rounds each element to the nearest representable value: with the
// block scale s = 2^(e - 127), within s / 4 below 2 s (steps of s / 2), s / 2
// up to 4 s, s up to 6 s; above 6 s (amax < 8 s) the error is amax - 6 s.
TEST(quantize_iq, mxfp4_rounds_to_the_nearest_value) {
  const auto x = normal_row(4096, 21);
  const auto y = round_trip(ggml_type::mxfp4, x);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const double s = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(amax))) - 2);
    for (int j = 0; j < 32; ++j) {
      const double ax = std::fabs(x[32 * b + j]);
      const double step = ax <= 2 * s ? s / 2 : (ax <= 4 * s ? s : 2 * s);
      const double bound = ax > 6 * s ? ax - 6 * s : step / 2;
      ASSERT_LE(std::fabs(x[32 * b + j] - y[32 * b + j]), bound * (1 + 1e-6)) << b << " " << j;
    }
  }
}

// The least-squares scales: bound the RMS error on unit normal data (with
// outliers) by what 4.5 / 4.25 bits per weight allow; iq4_xs's 6-bit
// sub-block scales cost little against iq4_nl's f16 ones.
TEST(quantize_iq, iq4_rms_error) {
  const auto x = normal_row(8192, 4);
  const double rms_nl = rms_error(x, round_trip(ggml_type::iq4_nl, x));
  const double rms_xs = rms_error(x, round_trip(ggml_type::iq4_xs, x));
  const double rms_mx = rms_error(x, round_trip(ggml_type::mxfp4, x));
  const double rms_q4_0 = rms_error(x, round_trip(ggml_type::q4_0, x));
  EXPECT_LT(rms_nl, 0.12);  // 0.113 measured
  EXPECT_LT(rms_nl, rms_q4_0 * 0.85);
  EXPECT_LT(rms_xs, rms_nl * 1.05);
  EXPECT_LT(rms_mx, 0.17);  // 0.155: power-of-two block scales
}

TEST(quantize_iq, zero_rows_stay_zero) {
  const std::vector<float> x(512, 0.0f);
  for (ggml_type t : {ggml_type::iq4_nl, ggml_type::iq4_xs, ggml_type::mxfp4}) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << type_traits(t).name << " " << i;
  }
}

}  // namespace
}  // namespace cortex
