// Packed weights: packing is lossless (unpack_row gives the original bytes
// back), and matmul_packed on every isa path agrees with matmul_reference on
// each original part, on odd shapes (rows not a multiple of the panel, odd
// block counts, several parts stacked).
#include "kernels/matmul_packed.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "kernels/fp16.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/isa_paths.hpp"

namespace cortex::kernels {
namespace {

// Random blocks: every code byte pattern, f16 scales in +-0.02.
std::vector<uint8_t> random_blocks(ggml_type t, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> out(matmul_row_bytes(t, cols) * static_cast<size_t>(rows));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
  size_t block = 0, d_at = 0;
  if (t == ggml_type::mxfp4) {  // E8M0 scales around 2^-7 (the extremes are the dequant tests' business)
    std::uniform_int_distribution<int> e(110, 130);
    for (size_t off = 0; off < out.size(); off += sizeof(block_mxfp4)) out[off] = static_cast<uint8_t>(e(rng));
    return out;
  }
  switch (t) {
    case ggml_type::q4_0: block = sizeof(block_q4_0); break;
    case ggml_type::iq4_nl: block = sizeof(block_iq4_nl); break;
    case ggml_type::q5_0: block = sizeof(block_q5_0); break;
    case ggml_type::q8_0: block = sizeof(block_q8_0); break;
    case ggml_type::q4_k: block = sizeof(block_q4_k); break;
    case ggml_type::q5_k: block = sizeof(block_q5_k); break;
    default: block = sizeof(block_q6_k); d_at = offsetof(block_q6_k, d); break;
  }
  for (size_t off = 0; off < out.size(); off += block) {
    const uint16_t h = fp32_to_fp16(scale(rng));
    std::memcpy(out.data() + off + d_at, &h, 2);
    if (t == ggml_type::q4_k || t == ggml_type::q5_k) {  // dmin >= 0
      const uint16_t m = fp32_to_fp16(std::fabs(scale(rng)));
      std::memcpy(out.data() + off + 2, &m, 2);
    }
  }
  return out;
}

struct stacked {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<weight_view> views;
};

stacked random_parts(ggml_type t, const std::vector<int64_t>& rows, int64_t cols, std::mt19937& rng) {
  stacked s;
  for (int64_t r : rows) s.bytes.push_back(random_blocks(t, r, cols, rng));
  for (size_t i = 0; i < rows.size(); ++i) {
    s.views.push_back({t, rows[i], cols, s.bytes[i].data(), matmul_row_bytes(t, cols)});
  }
  return s;
}

const ggml_type packed_types[] = {ggml_type::q4_0, ggml_type::q5_0, ggml_type::q8_0, ggml_type::iq4_nl,
                                  ggml_type::mxfp4, ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k};

int64_t block_of(ggml_type t) { return type_traits(t).block_size; }

TEST(matmul_packed_test, unpack_row_restores_every_original_row) {
  std::mt19937 rng(7);
  thread_pool pool(2);
  for (ggml_type t : packed_types) {
    for (int64_t n_blocks : {1, 3, 5, 7, 8}) {
      const int64_t cols = block_of(t) * n_blocks;
      const stacked s = random_parts(t, {1, 17, 37, 16}, cols, rng);
      const packed_matrix m = pack_matrix(s.views.data(), static_cast<int>(s.views.size()), pool);
      ASSERT_EQ(m.n_parts(), 4);
      EXPECT_EQ(m.n_panels(), 1 + 2 + 3 + 1);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 64, 0u);
      EXPECT_EQ(m.panel_bytes() % 64, 0u);
      std::vector<uint8_t> row(s.views[0].row_bytes);
      for (int p = 0; p < 4; ++p) {
        for (int64_t r = 0; r < s.views[static_cast<size_t>(p)].rows; ++r) {
          unpack_row(m, p, r, row.data());
          ASSERT_EQ(0, std::memcmp(row.data(), s.bytes[static_cast<size_t>(p)].data() + r * row.size(), row.size()))
              << "type " << static_cast<int>(t) << " cols " << cols << " part " << p << " row " << r;
        }
      }
    }
  }
}

// The model packs a type only where that is faster: where the active isa
// has a SIMD packed kernel. q5_0, q5_k and the table types iq4_nl and mxfp4
// have one for AVX-512 only.
TEST(matmul_packed_test, packed_is_faster_only_with_a_simd_kernel) {
  for (isa i : runnable_isas()) {
    SCOPED_TRACE(isa_name(i));
    set_isa_for_testing(i);
    for (ggml_type t : packed_types) {
      const bool avx512_only = t == ggml_type::q5_0 || t == ggml_type::q5_k || t == ggml_type::iq4_nl ||
                               t == ggml_type::mxfp4;
      const bool simd = i == isa::avx512 || (i == isa::avx2 && !avx512_only);
      EXPECT_EQ(packed_is_faster(t), simd) << type_traits(t).name;
    }
    EXPECT_FALSE(packed_is_faster(ggml_type::q3_k));
  }
  restore_default_isa();
}

class matmul_packed_isa_test : public ::testing::TestWithParam<isa> {
 protected:
  void SetUp() override {
    if (!use_isa_for_testing(GetParam())) GTEST_SKIP() << "isa not on this CPU";
  }
  void TearDown() override { restore_default_isa(); }
};

TEST_P(matmul_packed_isa_test, matches_reference_per_part_on_odd_shapes) {
  std::mt19937 rng(4321);
  thread_pool pools[] = {thread_pool(1), thread_pool(2), thread_pool(3)};
  matmul_scratch scratch;
  // Half panels (8 rows) full, partial and empty: 8 and 24 leave a panel's
  // second half empty, 9 fills one row of it.
  const std::vector<std::vector<int64_t>> row_sets = {{1}, {13}, {37, 5}, {64, 16, 16}, {33, 1, 70}, {8, 24, 9}};
  const int odd_blocks[] = {1, 3, 5, 7, 8};
  int iter = 0;
  for (ggml_type t : packed_types) {
    for (const auto& rows : row_sets) {
      for (int n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 20, 33, 41}) {
        ++iter;
        const int64_t cols = block_of(t) * odd_blocks[iter % 5];
        thread_pool& pool = pools[iter % 3];
        SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(t) << " parts " << rows.size() << " rows0 "
                                          << rows[0] << " cols " << cols << " tokens " << n_tokens);
        const stacked s = random_parts(t, rows, cols, rng);
        const packed_matrix m = pack_matrix(s.views.data(), static_cast<int>(s.views.size()), pool);
        std::normal_distribution<float> normal(0.f, 1.f);
        std::vector<float> x(static_cast<size_t>(n_tokens * cols));
        for (auto& v : x) v = normal(rng);
        x[x.size() / 2] = 0.f;
        std::vector<std::vector<float>> ys;
        std::vector<float*> y_ptrs;
        for (int64_t r : rows) ys.emplace_back(static_cast<size_t>(r * n_tokens), -7.f);
        for (auto& y : ys) y_ptrs.push_back(y.data());
        matmul_packed(m, x.data(), n_tokens, y_ptrs.data(), pool, scratch);
        for (size_t p = 0; p < rows.size(); ++p) {
          const weight_view& w = s.views[p];
          std::vector<float> y_ref(ys[p].size());
          matmul_reference(w, x.data(), n_tokens, y_ref.data());
          std::vector<float> wf(static_cast<size_t>(cols));
          for (int64_t r = 0; r < w.rows; ++r) {
            dequantize_row(t, static_cast<const uint8_t*>(w.data) + r * w.row_bytes, wf.data(), cols);
            for (int tok = 0; tok < n_tokens; ++tok) {
              double mag = 0;
              for (int64_t k = 0; k < cols; ++k) mag += std::fabs(double(wf[k]) * x[tok * cols + k]);
              const size_t i = static_cast<size_t>(tok * w.rows + r);
              ASSERT_NEAR(ys[p][i], y_ref[i], 2e-5 * mag + 1e-6) << "part " << p << " row " << r << " token " << tok;
            }
          }
        }
      }
    }
  }
}

// Every code and scale at its extreme against activations all at +-127 (x
// constant, or its sign flipped every 16 columns): the SIMD kernels' int16
// partial sums reach their proven bounds and must not saturate.
TEST_P(matmul_packed_isa_test, k_quants_at_code_extremes_match_reference) {
  thread_pool pool(2);
  matmul_scratch scratch;
  const int64_t rows = 24, cols = 512;
  const uint16_t d = fp32_to_fp16(0.01f);
  for (ggml_type t : {ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k}) {
    for (uint8_t code : {uint8_t{0x00}, uint8_t{0xff}}) {
      std::vector<uint8_t> bytes(matmul_row_bytes(t, cols) * rows, code);
      const auto set_k4 = [&](auto* blocks) {
        for (size_t i = 0; i < bytes.size() / sizeof *blocks; ++i) {
          std::memcpy(&blocks[i].d, &d, 2);
          std::memcpy(&blocks[i].dmin, &d, 2);
          std::memset(blocks[i].scales, 0xff, sizeof blocks[i].scales);  // every scale and min 63
        }
      };
      if (t == ggml_type::q4_k) {
        set_k4(reinterpret_cast<block_q4_k*>(bytes.data()));
      } else if (t == ggml_type::q5_k) {
        set_k4(reinterpret_cast<block_q5_k*>(bytes.data()));
      } else {
        for (size_t off = 0; off < bytes.size(); off += sizeof(block_q6_k)) {
          auto* b = reinterpret_cast<block_q6_k*>(bytes.data() + off);
          std::memcpy(&b->d, &d, 2);
          for (int j = 0; j < 16; ++j) b->scales[j] = static_cast<int8_t>(j % 3 == 0 ? 127 : -128);
        }
      }
      const weight_view w{t, rows, cols, bytes.data(), matmul_row_bytes(t, cols)};
      const packed_matrix m = pack_matrix(&w, 1, pool);
      std::vector<float> wf(static_cast<size_t>(cols));
      for (int pattern = 0; pattern < 4; ++pattern) {
        const int n_tokens = pattern < 2 ? 1 : 5;  // decode and batch tiles
        std::vector<float> x(static_cast<size_t>(n_tokens * cols));
        for (size_t k = 0; k < x.size(); ++k) {
          const float sign = pattern % 2 == 0 ? 1.f : ((k / 16) % 2 == 0 ? 1.f : -1.f);
          x[k] = (k / static_cast<size_t>(cols)) % 2 == 0 ? sign : -sign;
        }
        std::vector<float> y(static_cast<size_t>(rows * n_tokens)), y_ref(y.size());
        float* y_ptr = y.data();
        matmul_packed(m, x.data(), n_tokens, &y_ptr, pool, scratch);
        matmul_reference(w, x.data(), n_tokens, y_ref.data());
        for (int64_t r = 0; r < rows; ++r) {
          dequantize_row(t, bytes.data() + r * w.row_bytes, wf.data(), cols);
          for (int tok = 0; tok < n_tokens; ++tok) {
            double mag = 0;
            for (int64_t k = 0; k < cols; ++k) mag += std::fabs(double(wf[k]) * x[tok * cols + k]);
            const size_t i = static_cast<size_t>(tok * rows + r);
            ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag + 1e-6)
                << "type " << static_cast<int>(t) << " code " << int(code) << " pattern " << pattern << " row " << r
                << " token " << tok;
          }
        }
      }
    }
  }
}

TEST_P(matmul_packed_isa_test, activation_quantizer_is_bit_identical_to_scalar) {
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  const auto simd = active_activation_kernels().quantize_q8_32;
  for (int iter = 0; iter < 2000; ++iter) {
    float x[32];
    const float scale = std::ldexp(1.f, exponent(rng));
    for (float& v : x) v = normal(rng) * scale;
    if (iter % 7 == 0) x[iter % 32] = 0.f;
    if (iter % 11 == 0) std::fill(std::begin(x), std::end(x), 0.f);
    if (iter % 13 == 0) x[3] = -x[5];  // ties in |x|
    int8_t q_ref[32], q[32];
    int sum_ref = 0, sum = 0;
    const float d_ref = quantize_block_q8_32(x, q_ref, &sum_ref);
    const float d = simd(x, q, &sum);
    ASSERT_EQ(0, std::memcmp(&d, &d_ref, 4)) << iter;
    ASSERT_EQ(0, std::memcmp(q, q_ref, 32)) << iter;
    ASSERT_EQ(sum, sum_ref) << iter;
  }
}

TEST_P(matmul_packed_isa_test, f16_rounding_of_activations_is_bit_identical_to_scalar) {
  std::mt19937 rng(78);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::uniform_int_distribution<uint32_t> bits;
  const auto simd = active_activation_kernels().round_to_f16;
  std::vector<float> x(1003), y(x.size()), y_ref(x.size());
  std::vector<uint16_t> h(x.size()), h_ref(x.size());
  for (int iter = 0; iter < 200; ++iter) {
    for (float& v : x) v = normal(rng) * std::ldexp(1.f, exponent(rng));
    // Ties (13 low mantissa bits exactly half), f16 subnormals, overflow, random bit patterns.
    for (size_t i = 0; i < x.size(); i += 17) {
      uint32_t b = bits(rng);
      b = (b & 0xffffe000u) | 0x1000u;
      std::memcpy(&x[i], &b, 4);
      if (!std::isfinite(x[i])) x[i] = 1.f;
    }
    x[1] = 3.0e-6f;  x[2] = -6.0e-8f;  x[3] = 65519.f;  x[4] = 65520.f;  x[5] = -1e9f;  x[6] = INFINITY;
    round_to_f16(x.data(), y_ref.data(), static_cast<int64_t>(x.size()));
    simd(x.data(), y.data(), static_cast<int64_t>(x.size()));
    ASSERT_EQ(0, std::memcmp(y.data(), y_ref.data(), y.size() * 4)) << iter;
    to_f16(x.data(), h_ref.data(), static_cast<int64_t>(x.size()));
    active_activation_kernels().to_f16(x.data(), h.data(), static_cast<int64_t>(x.size()));
    ASSERT_EQ(h, h_ref) << iter;
  }
  const float rounded[] = {y_ref[3], y_ref[4], y_ref[6]};
  EXPECT_EQ(rounded[0], 65504.f);
  EXPECT_TRUE(std::isinf(rounded[1]));
  EXPECT_TRUE(std::isinf(rounded[2]));
}

INSTANTIATE_TEST_SUITE_P(isas, matmul_packed_isa_test, ::testing::Values(isa::scalar, isa::avx2, isa::avx512, isa::amx),
                         [](const ::testing::TestParamInfo<isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace cortex::kernels
