// The AMX emulation against the instruction definitions (Intel SDM vol. 2):
// configuration and its #GP rules, loads and stores that touch exactly the
// configured shape, the four byte dot products (signedness, 32-bit wrap),
// TDPBF16PS's rounding and denormal handling, and the #UD shape rules.
// Expected values come from the definitions, computed here independently.
#include "kernels/amx_tiles.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.hpp"

namespace cortex::kernels {
namespace {

amx_tile_config config_of(std::initializer_list<std::array<int, 3>> tiles) {  // {tile, rows, colsb}
  amx_tile_config c;
  c.palette_id = 1;
  for (const auto& t : tiles) {
    c.rows[t[0]] = static_cast<uint8_t>(t[1]);
    c.colsb[t[0]] = static_cast<uint16_t>(t[2]);
  }
  return c;
}

int32_t dword_at(const amx_tile_emulator& e, int t, int row, int n) {
  int32_t v;
  std::memcpy(&v, e.tile_bytes(t) + row * 64 + 4 * n, 4);
  return v;
}

float float_at(const amx_tile_emulator& e, int t, int row, int n) {
  float v;
  std::memcpy(&v, e.tile_bytes(t) + row * 64 + 4 * n, 4);
  return v;
}

TEST(amx_tiles_test, ldtilecfg_stores_back_and_palette_0_is_the_init_state) {
  amx_tile_emulator e;
  EXPECT_FALSE(e.configured());
  amx_tile_config c = config_of({{0, 16, 64}, {3, 5, 12}});
  c.start_row = 2;
  e.ldtilecfg(&c);
  EXPECT_TRUE(e.configured());
  amx_tile_config back;
  e.sttilecfg(&back);
  EXPECT_EQ(0, std::memcmp(&back, &c, 64));
  const amx_tile_config init;
  e.ldtilecfg(&init);
  EXPECT_FALSE(e.configured());
  std::memset(static_cast<void*>(&back), 0xff, 64);
  e.sttilecfg(&back);
  EXPECT_EQ(0, std::memcmp(&back, &init, 64));
}

TEST(amx_tiles_death_test, ldtilecfg_faults_on_a_bad_operand) {
  amx_tile_emulator e;
  amx_tile_config c = config_of({{0, 16, 64}});
  c.palette_id = 2;
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: palette_id 2 is not supported");
  c = config_of({{0, 16, 64}});
  c.reserved[5] = 1;
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: bytes 2..15 \\(reserved\\)");
  c = config_of({{1, 16, 68}});
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: tile 1: colsb 68 > bytes_per_row 64");
  c = config_of({{2, 17, 64}});
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: tile 2: rows 17 > max_rows 16");
  c = config_of({{4, 0, 16}});
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: tile 4: one of rows and colsb is zero");
  c = config_of({{0, 16, 64}});
  c.rows[9] = 1;
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: rows of tiles 8..15");
  c = config_of({{0, 16, 64}});
  c.colsb[12] = 4;
  EXPECT_DEATH(e.ldtilecfg(&c), "#GP in LDTILECFG: colsb of tiles 8..15");
}

// TILELOADD reads rows x colsb bytes at base + r * stride and nothing else:
// every byte of the tile past that shape is zero; TILESTORED writes back
// exactly that shape.
TEST(amx_tiles_test, load_and_store_touch_exactly_the_configured_shape) {
  amx_tile_emulator e;
  const amx_tile_config c = config_of({{2, 3, 12}});
  e.ldtilecfg(&c);
  std::vector<uint8_t> mem(16 * 100);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<uint8_t>(i % 251 + 1);
  e.tileloadd(2, mem.data(), 100);
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 64; ++k) {
      const uint8_t expect = r < 3 && k < 12 ? mem[static_cast<size_t>(r * 100 + k)] : 0;
      ASSERT_EQ(e.tile_bytes(2)[r * 64 + k], expect) << r << " " << k;
    }
  }
  std::vector<uint8_t> out(16 * 100, 0xcd);
  e.tilestored(2, out.data() + 15 * 100, -100);  // a negative stride walks backwards
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 100; ++k) {
      const bool written = r >= 13 && k < 12;
      const uint8_t expect = written ? mem[static_cast<size_t>((15 - r) * 100 + k)] : 0xcd;
      ASSERT_EQ(out[static_cast<size_t>(r * 100 + k)], expect) << r << " " << k;
    }
  }
}

// start_row: a load resumes there (rows above it keep their bytes) and every
// instruction leaves start_row at 0.
TEST(amx_tiles_test, start_row_is_where_a_load_resumes_and_is_reset_after) {
  amx_tile_emulator e;
  amx_tile_config c = config_of({{0, 4, 8}});
  c.start_row = 2;
  e.ldtilecfg(&c);
  std::vector<uint8_t> mem(64, 7);
  e.tileloadd(0, mem.data(), 8);
  EXPECT_EQ(e.tile_bytes(0)[0], 0);
  EXPECT_EQ(e.tile_bytes(0)[1 * 64], 0);
  EXPECT_EQ(e.tile_bytes(0)[2 * 64], 7);
  EXPECT_EQ(e.tile_bytes(0)[3 * 64 + 7], 7);
  EXPECT_EQ(e.config().start_row, 0);
  e.tileloadd(0, mem.data(), 8);
  EXPECT_EQ(e.tile_bytes(0)[0], 7);
}

TEST(amx_tiles_test, tilezero_and_ldtilecfg_zero_the_tiles) {
  amx_tile_emulator e;
  const amx_tile_config c = config_of({{0, 16, 64}, {1, 16, 64}});
  e.ldtilecfg(&c);
  std::vector<uint8_t> mem(1024, 9);
  e.tileloadd(0, mem.data(), 64);
  e.tileloadd(1, mem.data(), 64);
  e.tilezero(0);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(e.tile_bytes(0)[i], 0);
  EXPECT_EQ(e.tile_bytes(1)[1023], 9);
  e.ldtilecfg(&c);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(e.tile_bytes(1)[i], 0);
}

// C (M x N dwords) += A (M x 4K bytes) . B (K x 4N bytes) for every
// signedness pair, against products written out from the definition (int64,
// then wrapped to 32 bits), on random bytes and odd shapes.
TEST(amx_tiles_test, byte_dot_products_follow_the_definition_for_each_signedness) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  struct variant {
    void (amx_tile_emulator::*op)(int, int, int);
    bool sa, sb;
  };
  const variant variants[] = {{&amx_tile_emulator::tdpbssd, true, true},
                              {&amx_tile_emulator::tdpbsud, true, false},
                              {&amx_tile_emulator::tdpbusd, false, true},
                              {&amx_tile_emulator::tdpbuud, false, false}};
  for (const variant& v : variants) {
    for (auto [m, k, n] : {std::array<int, 3>{16, 16, 16}, {5, 8, 16}, {1, 1, 1}, {7, 3, 11}}) {
      amx_tile_emulator e;
      const amx_tile_config c = config_of({{0, m, 4 * n}, {4, m, 4 * k}, {6, k, 4 * n}});
      e.ldtilecfg(&c);
      std::vector<uint8_t> a(static_cast<size_t>(m * 4 * k)), b(static_cast<size_t>(k * 4 * n));
      std::vector<int32_t> c0(static_cast<size_t>(m * n));
      for (auto& x : a) x = static_cast<uint8_t>(byte(rng));
      for (auto& x : b) x = static_cast<uint8_t>(byte(rng));
      for (auto& x : c0) x = static_cast<int32_t>(rng());
      e.tileloadd(4, a.data(), 4 * k);
      e.tileloadd(6, b.data(), 4 * n);
      e.tileloadd(0, c0.data(), 4 * n);
      (e.*v.op)(0, 4, 6);
      auto val = [](uint8_t x, bool s) { return s ? int64_t{static_cast<int8_t>(x)} : int64_t{x}; };
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          int64_t sum = c0[static_cast<size_t>(i * n + j)];
          for (int kk = 0; kk < 4 * k; ++kk) {
            sum += val(a[static_cast<size_t>(i * 4 * k + kk)], v.sa) *
                   val(b[static_cast<size_t>((kk / 4) * 4 * n + 4 * j + kk % 4)], v.sb);
          }
          ASSERT_EQ(dword_at(e, 0, i, j), static_cast<int32_t>(static_cast<uint32_t>(sum)))
              << v.sa << v.sb << " " << m << "x" << k << "x" << n << " at " << i << "," << j;
        }
      }
      for (int i = 0; i < 16; ++i) {
        for (int j = 0; j < 16; ++j) {
          if (i >= m || j >= n) {
            ASSERT_EQ(dword_at(e, 0, i, j), 0) << "past the shape at " << i << "," << j;
          }
        }
      }
    }
  }
}

TEST(amx_tiles_test, byte_dot_products_wrap_around_at_32_bits) {
  amx_tile_emulator e;
  const amx_tile_config c = config_of({{0, 1, 4}, {1, 1, 64}, {2, 16, 4}});
  e.ldtilecfg(&c);
  const int32_t start = 0x7fffffff;
  std::vector<uint8_t> ones(64, 0xff);  // 255 unsigned, -1 signed
  e.tileloadd(0, &start, 4);
  e.tileloadd(1, ones.data(), 64);
  e.tileloadd(2, ones.data(), 4);
  e.tdpbuud(0, 1, 2);  // + 64 * 255 * 255
  EXPECT_EQ(dword_at(e, 0, 0, 0), static_cast<int32_t>(0x7fffffffu + 64u * 255u * 255u));
  EXPECT_LT(dword_at(e, 0, 0, 0), 0);
  e.tdpbssd(0, 1, 2);  // + 64 * (-1) * (-1)
  EXPECT_EQ(dword_at(e, 0, 0, 0), static_cast<int32_t>(0x7fffffffu + 64u * 255u * 255u + 64u));
}

TEST(amx_tiles_death_test, tmul_shape_rules_are_undefined_opcode_faults) {
  amx_tile_emulator e;
  EXPECT_DEATH(e.tdpbssd(0, 1, 2), "#UD in TDPBSSD: tiles are not configured");
  const amx_tile_config c = config_of({{0, 16, 64}, {1, 16, 32}, {2, 8, 64}, {3, 8, 64}, {4, 4, 64}, {5, 16, 60}});
  e.ldtilecfg(&c);
  e.tdpbsud(0, 1, 2);  // M 16, K 8, N 16: fine
  EXPECT_DEATH(e.tdpbsud(0, 1, 4),
               "#UD in TDPBSUD: K: colsb / 4 of the first source \\(8\\) != rows of the second source \\(4\\)");
  EXPECT_DEATH(e.tdpbusd(5, 1, 2),
               "#UD in TDPBUSD: N: colsb of the destination \\(60\\) != colsb of the second source \\(64\\)");
  EXPECT_DEATH(e.tdpbuud(3, 1, 2),
               "#UD in TDPBUUD: M: rows of the destination \\(8\\) != rows of the first source \\(16\\)");
  EXPECT_DEATH(e.tdpbssd(2, 1, 2), "#UD in TDPBSSD: the three tiles must differ");
  EXPECT_DEATH(e.tdpbf16ps(0, 1, 7), "#UD in TDPBF16PS: tmm7 is not a valid tile");
  EXPECT_DEATH(e.tileloadd(6, nullptr, 0), "#UD in TILELOADD: tmm6 is not a valid tile");
  EXPECT_DEATH(e.tilezero(8), "#UD in TILEZERO: tmm8 does not exist");
}

uint16_t bf16_of(float v) {
  const uint32_t bits = fp32_to_bits(v);
  EXPECT_EQ(bits & 0xffffu, 0u) << v << " is not a bf16 value";
  return static_cast<uint16_t>(bits >> 16);
}

// One row: C[0][0] (f32 c0) += A pairs . B pairs, K = a.size() / 2 pairs.
float bf16_dot(const std::vector<float>& a, const std::vector<float>& b, float c0) {
  amx_tile_emulator e;
  const int k = static_cast<int>(a.size() / 2);
  const amx_tile_config c = config_of({{0, 1, 4}, {1, 1, 4 * k}, {2, k, 4}});
  e.ldtilecfg(&c);
  std::vector<uint16_t> ha, hb;
  for (float v : a) ha.push_back(bf16_of(v));
  for (float v : b) hb.push_back(bf16_of(v));
  e.tileloadd(0, &c0, 4);
  e.tileloadd(1, ha.data(), 4 * k);
  e.tileloadd(2, hb.data(), 4);
  e.tdpbf16ps(0, 1, 2);
  return float_at(e, 0, 0, 0);
}

TEST(amx_tiles_test, bf16_dot_accumulates_even_and_odd_pairs_then_rounds_to_nearest_even) {
  EXPECT_EQ(bf16_dot({1.f, 2.f, 3.f, 4.f}, {5.f, 6.f, 7.f, 8.f}, 0.5f), 0.5f + (5 + 21) + (12 + 32));
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: the even one, 1.
  EXPECT_EQ(bf16_dot({0x1p-12f, 0.f}, {0x1p-12f, 0.f}, 1.f), 1.f);
  // (1 + 2^-23) + 2^-24: a tie between 1 + 2^-23 (odd) and 1 + 2^-22 (even).
  EXPECT_EQ(bf16_dot({0x1p-12f, 0.f}, {0x1p-12f, 0.f}, 1.f + 0x1p-23f), 1.f + 0x1p-22f);
  // Even lanes sum to 2^-24 and odd to 2^-24 first: together 2^-23, which
  // the accumulator then keeps (added one at a time to 1, each would vanish).
  EXPECT_EQ(bf16_dot({0x1p-12f, 0x1p-12f}, {0x1p-12f, 0x1p-12f}, 1.f), 1.f + 0x1p-23f);
}

TEST(amx_tiles_test, bf16_dot_reads_denormals_as_zero_and_flushes_denormal_results) {
  const float denormal_bf16 = fp32_from_bits(0x00010000u);  // a bf16 denormal, 2^-133 * ...
  ASSERT_EQ(std::fpclassify(denormal_bf16), FP_SUBNORMAL);
  EXPECT_EQ(bf16_dot({denormal_bf16, 0.f}, {0x1p100f, 0.f}, 0.f), 0.f);  // DAZ: not 2^-33-ish
  EXPECT_EQ(bf16_dot({0x1p-100f, 0.f}, {0x1p-30f, 0.f}, 0.f), 0.f);      // FTZ: 2^-130
  // FTZ of the stored sum: 1.5 * 2^-126 - 2^-126 = 2^-127, a denormal.
  EXPECT_EQ(bf16_dot({-0x1p-63f, 0.f}, {0x1p-63f, 0.f}, 0x1.8p-126f), 0.f);
  EXPECT_EQ(bf16_dot({0.f, 0.f}, {0.f, 0.f}, 0x1p-140f), 0.f);            // DAZ on the accumulator too
  EXPECT_EQ(bf16_dot({0x1p-63f, 0.f}, {0x1p-63f, 0.f}, 0.f), 0x1p-126f);  // the smallest normal stays
}

// x86 detects tininess after rounding: 2^-126 - 2^-150 rounds to 2^-126 on
// the denormal grid (a tie, to even), but at 24 bits with an unbounded
// exponent it is itself representable and below 2^-126: flushed.
TEST(amx_tiles_test, ftz_detects_tininess_after_rounding) {
  const float just_below_one = fp32_from_bits(0x3f7fffffu);  // 1 - 2^-24
  EXPECT_EQ(std::fma(just_below_one, 0x1p-126f, 0.f), 0x1p-126f);
  EXPECT_EQ(amx_fma_daz_ftz(just_below_one, 0x1p-126f, 0.f), 0.f);
  EXPECT_EQ(amx_fma_daz_ftz(1.f, 0x1p-126f, 0.f), 0x1p-126f);
  EXPECT_EQ(amx_fma_daz_ftz(-1.f, 0x1p-125f, 0x1p-126f), -0x1p-126f);
}

// The static interface the kernels are written against drives the calling
// thread's emulator.
TEST(amx_tiles_test, the_emulated_tile_class_uses_the_thread_emulator) {
  amx_tiles_emu::configure(config_of({{0, 2, 8}, {4, 2, 4}, {6, 1, 8}}));
  const int8_t a[2][4] = {{1, -2, 3, -4}, {-1, 2, -3, 4}};
  const uint8_t b[8] = {1, 1, 1, 1, 200, 0, 0, 1};
  amx_tiles_emu::zero<0>();
  amx_tiles_emu::load<4>(a, 4);
  amx_tiles_emu::load<6>(b, 8);
  amx_tiles_emu::dpbsud<0, 4, 6>();
  int32_t c[2][2];
  amx_tiles_emu::store<0>(c, 8);
  EXPECT_EQ(c[0][0], -2);
  EXPECT_EQ(c[0][1], 200 - 4);
  EXPECT_EQ(c[1][0], 2);
  EXPECT_EQ(c[1][1], -200 + 4);
  amx_tiles_emu::release();
  EXPECT_FALSE(amx_thread_emulator().configured());
}

}  // namespace
}  // namespace cortex::kernels
