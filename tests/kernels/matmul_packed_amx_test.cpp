// The AMX tile kernels (x86/matmul_packed_amx_body.hpp) on the emulated
// tiles, on every machine that runs the AVX-512 kernels: each gives the
// AVX-512 VNNI kernel's bits, called directly for 1 to 64 tokens, and
// through matmul_packed under isa amx, where the steps of amx_min_tokens and
// more take them (the emulator's instruction count says they ran) and agree
// with matmul_reference within the packed tests' tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/amx_choice.hpp"
#include "kernels/amx_tiles.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/quant.hpp"
#include "kernels/quant_traits.hpp"
#include "tests/kernels/isa_paths.hpp"
#include "tests/kernels/random_weights.hpp"

namespace cortex::kernels {
namespace {

const ggml_type amx_types[] = {ggml_type::q4_0,  ggml_type::q5_0, ggml_type::q8_0, ggml_type::iq4_nl,
                               ggml_type::mxfp4, ggml_type::q4_k, ggml_type::q5_k};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

class matmul_packed_amx_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!use_isa_for_testing(isa::amx)) GTEST_SKIP() << "this CPU runs no AVX-512 kernels, so no tile kernels";
  }
  void TearDown() override { restore_default_isa(); }
};

// One packed matrix and its activations, for calling kernels directly.
struct direct_call {
  packed_matrix m;
  packed_x_layout xl;
  std::vector<uint8_t> qx_bytes;
  std::vector<float> y;
  packed_segment seg;

  direct_call(const weight_view& w, const std::vector<float>& x, int n_tokens, thread_pool& pool)
      : m(pack_matrix(&w, 1, pool)), xl(packed_x_layout_of(w.type, w.cols)) {
    qx_bytes.resize(xl.stride * static_cast<size_t>(n_tokens) + 64);
    for (int t = 0; t < n_tokens; ++t) {
      quantize_packed_token(w.type, w.cols, x.data() + t * w.cols, aligned() + t * xl.stride, quantize_block_q8_32);
    }
    y.assign(static_cast<size_t>(n_tokens * w.rows), -7.f);
    seg = {0, w.rows, y.data(), w.rows};
  }
  uint8_t* aligned() {
    const auto p = reinterpret_cast<uintptr_t>(qx_bytes.data());
    return qx_bytes.data() + (64 - p % 64) % 64;
  }
  // y of kernel k on panels [p0, p1).
  std::vector<float> run(packed_rows_fn k, int n_tokens, int64_t p0, int64_t p1) {
    std::fill(y.begin(), y.end(), -7.f);
    const packed_view view{m.type(), m.cols(), m.n_panels(), m.data(), m.panel_bytes(), &seg, 1};
    k(view, {aligned(), xl.stride, xl.d_offset, xl.aux_offset}, n_tokens, p0, p1);
    return y;
  }
};

TEST_F(matmul_packed_amx_test, tile_kernels_give_the_vnni_bits_for_1_to_64_tokens) {
  std::mt19937 rng(31);
  thread_pool pool(2);
  for (ggml_type t : amx_types) {
    SCOPED_TRACE(type_traits(t).name);
    const packed_layout& l = *quant_traits_of(t).packed;
    ASSERT_NE(l.amx_emulated, nullptr);
    // 37 rows: a panel pair and a partial panel; an odd block count.
    const int64_t rows = 37, cols = l.x == packed_x_format::q8_p ? 5 * 32 : 256;
    const std::vector<uint8_t> bytes = random_weights(t, rows, cols, rng);
    const weight_view w{t, rows, cols, bytes.data(), matmul_row_bytes(t, cols)};
    for (int n = 1; n <= 64; ++n) {
      const std::vector<float> x = random_x(n, cols, rng);
      direct_call call(w, x, n, pool);
      const uint64_t tmuls = amx_emulated_tmul_count();
      const std::vector<float> amx = call.run(l.amx_emulated, n, 0, call.m.n_panels());
      ASSERT_GT(amx_emulated_tmul_count(), tmuls);
      const std::vector<float> vnni = call.run(l.kernels[static_cast<int>(isa::avx512)], n, 0, call.m.n_panels());
      ASSERT_TRUE(same_bits(amx, vnni)) << n << " tokens";
      // A call may start at any panel (a task's share): the lone last panel.
      const std::vector<float> tail = call.run(l.amx_emulated, n, 2, 3);
      for (int tok = 0; tok < n; ++tok) {
        ASSERT_EQ(0, std::memcmp(&tail[static_cast<size_t>(tok * rows + 32)],
                                 &vnni[static_cast<size_t>(tok * rows + 32)], 5 * 4))
            << n << " tokens, token " << tok;
        ASSERT_EQ(tail[static_cast<size_t>(tok * rows)], -7.f) << "a panel outside the call was written";
      }
    }
  }
}

// Activations whose block dots reach int32 extremes: every weight code at
// its largest and activations all at +-127, so the tile sums and the
// zero-point corrections are as large as they get.
TEST_F(matmul_packed_amx_test, tile_kernels_give_the_vnni_bits_at_code_extremes) {
  thread_pool pool(1);
  for (ggml_type t : amx_types) {
    SCOPED_TRACE(type_traits(t).name);
    const packed_layout& l = *quant_traits_of(t).packed;
    const int64_t rows = 16, cols = 512;
    for (uint8_t code : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}}) {
      std::mt19937 rng(code);
      std::vector<uint8_t> bytes = random_weights(t, rows, cols, rng);
      const std::vector<uint8_t> scales = bytes;
      std::fill(bytes.begin(), bytes.end(), code);
      // Keep the scales (the leading bytes of every block) finite.
      const size_t block = quant_traits_of(t).type_size, scale_bytes = t == ggml_type::mxfp4 ? 1 : 4;
      for (size_t off = 0; off < bytes.size(); off += block) std::memcpy(&bytes[off], &scales[off], scale_bytes);
      const weight_view w{t, rows, cols, bytes.data(), matmul_row_bytes(t, cols)};
      const int n = 33;
      std::vector<float> x(static_cast<size_t>(n * cols));
      for (size_t k = 0; k < x.size(); ++k) x[k] = (k / 16) % 3 == 0 ? -1.f : 1.f;
      direct_call call(w, x, n, pool);
      ASSERT_TRUE(
          same_bits(call.run(l.amx_emulated, n, 0, 1), call.run(l.kernels[static_cast<int>(isa::avx512)], n, 0, 1)))
          << "code " << int(code);
    }
  }
}

// Through matmul_packed: under amx the steps of amx_min_tokens and more run
// the tile kernels (and only those), stacked parts and partial panels
// included; the outputs are avx512's bits and near matmul_reference.
TEST_F(matmul_packed_amx_test, matmul_packed_under_amx_runs_tiles_from_min_tokens_with_avx512_bits) {
  std::mt19937 rng(32);
  thread_pool pools[] = {thread_pool(1), thread_pool(3)};
  matmul_scratch scratch;
  const std::vector<int64_t> rows = {37, 5, 16};
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q8_0, ggml_type::q5_0, ggml_type::iq4_nl, ggml_type::mxfp4,
                      ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k}) {
    SCOPED_TRACE(type_traits(t).name);
    const int64_t cols = type_traits(t).block_size * 3;
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<weight_view> parts;
    for (int64_t r : rows) bytes.push_back(random_weights(t, r, cols, rng));
    for (size_t i = 0; i < rows.size(); ++i) {
      parts.push_back({t, rows[i], cols, bytes[i].data(), matmul_row_bytes(t, cols)});
    }
    const packed_matrix m = pack_matrix(parts.data(), 3, pools[0]);
    for (int n : {1, 31, 32, 33, 64, 70}) {
      const std::vector<float> x = random_x(n, cols, rng);
      auto run = [&](isa i, thread_pool& pool) {
        EXPECT_TRUE(use_isa_for_testing(i));
        std::vector<std::vector<float>> ys;
        std::vector<float*> ptrs;
        for (int64_t r : rows) ys.emplace_back(static_cast<size_t>(r * n), -7.f);
        for (auto& y : ys) ptrs.push_back(y.data());
        matmul_packed(m, x.data(), n, ptrs.data(), pool, scratch);
        return ys;
      };
      for (thread_pool& pool : pools) {
        const uint64_t tmuls = amx_emulated_tmul_count();
        const auto amx = run(isa::amx, pool);
        const bool tiles = n >= amx_min_tokens && t != ggml_type::q6_k;  // q6_k has no tile kernel
        EXPECT_EQ(amx_emulated_tmul_count() > tmuls, tiles) << n << " tokens";
        const auto vnni = run(isa::avx512, pool);
        for (size_t p = 0; p < rows.size(); ++p) ASSERT_TRUE(same_bits(amx[p], vnni[p])) << n << " tokens, part " << p;
        for (size_t p = 0; p < rows.size(); ++p) {
          std::vector<float> y_ref(amx[p].size()), wf(static_cast<size_t>(cols));
          matmul_reference(parts[p], x.data(), n, y_ref.data());
          for (int64_t r = 0; r < rows[p]; ++r) {
            dequantize_row(t, bytes[p].data() + r * parts[p].row_bytes, wf.data(), cols);
            for (int tok = 0; tok < n; ++tok) {
              double mag = 0;
              for (int64_t k = 0; k < cols; ++k) mag += std::fabs(double(wf[k]) * x[tok * cols + k]);
              const size_t i = static_cast<size_t>(tok * rows[p] + r);
              ASSERT_NEAR(amx[p][i], y_ref[i], 2e-5 * mag + 1e-6) << "part " << p << " row " << r << " token " << tok;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cortex::kernels
