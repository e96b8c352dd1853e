// Batch invariance (protocol.md: the same seed, params and prompt give the
// same output in any batch): a token's matmul output must be bit-identical
// whether it is computed alone, among other tokens, or in a step split over
// any number of threads. Every weight type, plain and packed, on every ISA
// path this CPU runs. Under amx the packed steps of 32 tokens and more run
// on tiles (emulated where the CPU has no AMX) while a token alone runs the
// VNNI kernel: the bits must still agree.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/quant_traits.hpp"
#include "tests/kernels/isa_paths.hpp"
#include "tests/kernels/random_weights.hpp"

namespace cortex::kernels {
namespace {

const ggml_type all_types[] = {
    ggml_type::f32,     ggml_type::f16,    ggml_type::bf16,    ggml_type::q4_0,    ggml_type::q8_0,  ggml_type::q5_0,
    ggml_type::q4_1,    ggml_type::q5_1,   ggml_type::q2_k,    ggml_type::q3_k,    ggml_type::q4_k,  ggml_type::q5_k,
    ggml_type::q6_k,    ggml_type::iq4_nl, ggml_type::iq4_xs,  ggml_type::mxfp4,   ggml_type::iq2_xxs, ggml_type::iq2_xs,
    ggml_type::iq2_s,   ggml_type::iq3_xxs, ggml_type::iq3_s,  ggml_type::iq1_s,   ggml_type::iq1_m,
};

// Token counts a step may have: decode batches, odd prefill chunks, tiles.
const int token_counts[] = {2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 64};

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

class batch_invariance : public ::testing::TestWithParam<isa> {
 protected:
  void SetUp() override {
    if (!use_isa_for_testing(GetParam())) GTEST_SKIP() << "isa not on this CPU";
  }
  void TearDown() override { restore_default_isa(); }
};

// y (n, rows) = x (n, cols) times some weights, on pool.
using matmul_fn = std::function<void(const float* x, int n, float* y, thread_pool& pool)>;

// Each of n_max tokens alone on one thread gives the reference bits; every
// token of every batch size in token_counts, on 1 to 3 threads, must match.
void expect_batch_invariant(const matmul_fn& mm, int64_t rows, int64_t cols, std::mt19937& rng) {
  thread_pool pools[] = {thread_pool(1), thread_pool(2), thread_pool(3)};
  const int n_max = 64;
  const std::vector<float> x = random_x(n_max, cols, rng);
  std::vector<float> alone(static_cast<size_t>(n_max * rows));
  for (int tok = 0; tok < n_max; ++tok) mm(x.data() + tok * cols, 1, alone.data() + tok * rows, pools[0]);
  for (thread_pool& pool : pools) {
    for (int n : token_counts) {
      std::vector<float> y(static_cast<size_t>(n * rows));
      mm(x.data(), n, y.data(), pool);
      for (int tok = 0; tok < n; ++tok) {
        ASSERT_TRUE(same_bits(y.data() + tok * rows, alone.data() + tok * rows, rows))
            << "token " << tok << " of " << n << " on " << pool.size() << " threads differs from it alone";
      }
    }
  }
}

TEST_P(batch_invariance, matmul_rows_do_not_depend_on_the_batch_or_the_threads) {
  std::mt19937 rng(2026);
  matmul_scratch scratch;
  const int64_t rows = 72, cols = 512;
  for (ggml_type t : all_types) {
    SCOPED_TRACE(type_traits(t).name);
    const std::vector<uint8_t> wbytes = random_weights(t, rows, cols, rng);
    const weight_view w{t, rows, cols, wbytes.data(), matmul_row_bytes(t, cols)};
    expect_batch_invariant([&](const float* x, int n, float* y, thread_pool& pool) { matmul(w, x, n, y, pool, scratch); },
                           rows, cols, rng);
  }
}

TEST_P(batch_invariance, packed_matmul_rows_do_not_depend_on_the_batch_or_the_threads) {
  std::mt19937 rng(2027);
  thread_pool pack_pool(2);
  matmul_scratch scratch;
  const int64_t rows = 40, cols = 512;
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q5_0, ggml_type::q8_0, ggml_type::iq4_nl, ggml_type::mxfp4,
                      ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k}) {
    if (!packed_supported(t)) continue;
    SCOPED_TRACE(type_traits(t).name);
    const std::vector<uint8_t> wbytes = random_weights(t, rows, cols, rng);
    const weight_view w{t, rows, cols, wbytes.data(), matmul_row_bytes(t, cols)};
    const packed_matrix m = pack_matrix(&w, 1, pack_pool);
    expect_batch_invariant(
        [&](const float* x, int n, float* y, thread_pool& pool) { matmul_packed(m, x, n, &y, pool, scratch); }, rows,
        cols, rng);
  }
}

INSTANTIATE_TEST_SUITE_P(isas, batch_invariance, ::testing::Values(isa::scalar, isa::avx2, isa::avx512, isa::amx),
                         [](const ::testing::TestParamInfo<isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace cortex::kernels
