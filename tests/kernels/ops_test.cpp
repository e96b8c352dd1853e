// Element-wise kernels against independently written double-precision
// formulas, on every ISA path this CPU can run.
#include "kernels/ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/x86/vec_entries.hpp"
#include "tests/kernels/isa_paths.hpp"

namespace cortex::kernels {
namespace {

std::vector<float> random_vector(int n, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(rmsnorm, matches_double_reference_and_allows_aliasing) {
  for (int n : {1, 7, 64, 4096}) {
    auto x = random_vector(n, 11 + n);
    auto w = random_vector(n, 23 + n, 0.5f, 1.5f);
    const float eps = 1e-5f;
    double ss = 0.0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    std::vector<float> out(n);
    rmsnorm(x.data(), w.data(), out.data(), n, eps);
    for (int i = 0; i < n; ++i) {
      const double ref = x[i] * inv * w[i];
      ASSERT_NEAR(out[i], ref, 2e-6 * std::fabs(ref) + 1e-7) << "n=" << n << " i=" << i;
    }
    rmsnorm(x.data(), w.data(), x.data(), n, eps);
    for (int i = 0; i < n; ++i) ASSERT_EQ(x[i], out[i]);
  }
}

TEST(rmsnorm, eps_dominates_a_tiny_input) {
  std::vector<float> x(16, 1e-4f), w(16, 1.0f), out(16);
  rmsnorm(x.data(), w.data(), out.data(), 16, 1e-2f);
  // mean(x^2) = 1e-8 << eps: out = x / sqrt(1e-2 + 1e-8) ~= 1e-3.
  for (float v : out) EXPECT_NEAR(v, 1e-4 / std::sqrt(1e-2 + 1e-8), 1e-9);
}

// Independent RoPE: theta_i = pos * base^(-2i/n_rot) in double.
void rope_reference(std::vector<double>& x, int n_heads, int head_dim, int n_rot, int pos,
                    double base, bool neox) {
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < n_rot / 2; ++i) {
      const double theta = pos * std::pow(base, -2.0 * i / n_rot);
      const int a = h * head_dim + (neox ? i : 2 * i);
      const int b = a + (neox ? n_rot / 2 : 1);
      const double x0 = x[a], x1 = x[b];
      x[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      x[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  }
}

TEST(layernorm, by_hand_with_and_without_bias) {
  // x = 1, 2, 3, 4: mean 2.5, variance 1.25, so the normed values are
  // (x - 2.5) / sqrt(1.25 + eps); then * w, + b where there is a bias
  // (modern-bert's LayerNorms have none), in place too.
  const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f}, w[4] = {1.0f, 2.0f, 1.0f, 0.5f}, b[4] = {0.5f, 0.0f, 0.0f, -1.0f};
  const float eps = 1e-5f;
  float with_bias[4], without[4];
  layernorm(x, w, b, with_bias, 4, eps);
  std::copy(x, x + 4, without);
  layernorm(without, w, nullptr, without, 4, eps);
  for (int i = 0; i < 4; ++i) {
    const double normed = (x[i] - 2.5) / std::sqrt(1.25 + eps);
    EXPECT_NEAR(without[i], normed * w[i], 1e-6) << i;
    EXPECT_NEAR(with_bias[i], normed * w[i] + b[i], 1e-6) << i;
  }
}

TEST(rope, matches_double_formula_in_both_layouts) {
  const int n_heads = 3;
  for (bool neox : {false, true}) {
    for (int head_dim : {8, 64, 128}) {
      for (int pos : {0, 1, 37, 500}) {
        for (float base : {10000.0f, 1e6f}) {
          auto x = random_vector(n_heads * head_dim, 7 + pos + head_dim);
          std::vector<double> ref(x.begin(), x.end());
          rope_reference(ref, n_heads, head_dim, head_dim, pos, base, neox);
          rope(x.data(), n_heads, head_dim, head_dim, pos, base, neox);
          // float theta built by repeated multiplication drifts by about
          // pos * i ulps; |x| <= 2 so the output error is bounded by that.
          const double tol = 1e-6 + 2.0 * pos * (head_dim / 2) * 1.2e-7;
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_NEAR(x[i], ref[i], tol) << "neox=" << neox << " hd=" << head_dim
                                           << " pos=" << pos << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(rope, pairs_adjacent_dims_normally_and_half_apart_in_neox) {
  const int head_dim = 8;
  const float base = 10000.0f;
  auto unit = [&](int k) {
    std::vector<float> x(head_dim, 0.0f);
    x[k] = 1.0f;
    return x;
  };
  // e_0 at pos 1: pair 0 has theta = 1 rad in both layouts.
  auto a = unit(0);
  rope(a.data(), 1, head_dim, head_dim, 1, base, false);
  auto b = unit(0);
  rope(b.data(), 1, head_dim, head_dim, 1, base, true);
  for (int i = 0; i < head_dim; ++i) {
    EXPECT_NEAR(a[i], i == 0 ? std::cos(1.0) : i == 1 ? std::sin(1.0) : 0.0, 1e-6) << i;
    EXPECT_NEAR(b[i], i == 0 ? std::cos(1.0) : i == 4 ? std::sin(1.0) : 0.0, 1e-6) << i;
  }
  // e_2 at pos 3: normal rotates pair (2,3) = pair 1; neox rotates (2,6) = pair 2.
  const double t1 = 3 * std::pow(base, -2.0 / head_dim);
  const double t2 = 3 * std::pow(base, -4.0 / head_dim);
  auto c = unit(2);
  rope(c.data(), 1, head_dim, head_dim, 3, base, false);
  auto d = unit(2);
  rope(d.data(), 1, head_dim, head_dim, 3, base, true);
  for (int i = 0; i < head_dim; ++i) {
    EXPECT_NEAR(c[i], i == 2 ? std::cos(t1) : i == 3 ? std::sin(t1) : 0.0, 1e-6) << i;
    EXPECT_NEAR(d[i], i == 2 ? std::cos(t2) : i == 6 ? std::sin(t2) : 0.0, 1e-6) << i;
  }
}

// Scaling divides theta: a factor of 2 (rope_freqs divisor or linear
// freq_scale 0.5) at position 2p rotates exactly as no scaling at p. Halving
// is exact in float, so the results are equal bit for bit.
TEST(rope, scaling_by_two_at_twice_the_position_equals_no_scaling) {
  const int n_heads = 2, head_dim = 64;
  const std::vector<float> twos(head_dim / 2, 2.0f);
  for (bool neox : {false, true}) {
    for (int p : {1, 7, 300}) {
      const auto orig = random_vector(n_heads * head_dim, 5 + p);
      auto plain = orig, by_factor = orig, by_scale = orig;
      rope(plain.data(), n_heads, head_dim, head_dim, p, 500000.0f, neox);
      rope(by_factor.data(), n_heads, head_dim, head_dim, 2 * p, 500000.0f, neox, 1.0f, twos.data());
      rope(by_scale.data(), n_heads, head_dim, head_dim, 2 * p, 500000.0f, neox, 0.5f, nullptr);
      EXPECT_EQ(by_factor, plain) << "neox=" << neox << " p=" << p;
      EXPECT_EQ(by_scale, plain) << "neox=" << neox << " p=" << p;
    }
  }
}

TEST(rope, per_pair_factors_match_the_double_formula) {
  const int n_heads = 2, head_dim = 32, pos = 123;
  std::vector<float> factors(head_dim / 2);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.5f * static_cast<float>(i % 5);
  for (bool neox : {false, true}) {
    auto x = random_vector(n_heads * head_dim, 77);
    const auto orig = x;
    rope(x.data(), n_heads, head_dim, head_dim, pos, 10000.0f, neox, 0.25f, factors.data());
    const int offset = neox ? head_dim / 2 : 1, step = neox ? 1 : 2;
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < head_dim / 2; ++i) {
        const double theta = 0.25 * pos * std::pow(10000.0, -2.0 * i / head_dim) / factors[static_cast<size_t>(i)];
        const int a = h * head_dim + i * step, b = a + offset;
        const double x0 = orig[static_cast<size_t>(a)], x1 = orig[static_cast<size_t>(b)];
        ASSERT_NEAR(x[static_cast<size_t>(a)], x0 * std::cos(theta) - x1 * std::sin(theta), 2e-5) << h << " " << i;
        ASSERT_NEAR(x[static_cast<size_t>(b)], x0 * std::sin(theta) + x1 * std::cos(theta), 2e-5) << h << " " << i;
      }
    }
  }
}

TEST(rope, partial_rotation_leaves_the_rest_untouched) {
  const int n_heads = 4, head_dim = 16, n_rot = 8, pos = 21;
  for (bool neox : {false, true}) {
    const auto orig = random_vector(n_heads * head_dim, 99);
    auto x = orig;
    rope(x.data(), n_heads, head_dim, n_rot, pos, 10000.0f, neox);
    std::vector<double> ref(orig.begin(), orig.end());
    // Reference rotates only the first n_rot dims: theta uses n_rot, not head_dim.
    for (int h = 0; h < n_heads; ++h) {
      std::vector<double> head(ref.begin() + h * head_dim, ref.begin() + h * head_dim + n_rot);
      rope_reference(head, 1, n_rot, n_rot, pos, 10000.0, neox);
      for (int i = 0; i < n_rot; ++i) ref[h * head_dim + i] = head[i];
    }
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < head_dim; ++i) {
        const int at = h * head_dim + i;
        if (i >= n_rot) {
          ASSERT_EQ(x[at], orig[at]) << "h=" << h << " i=" << i;
        } else {
          ASSERT_NEAR(x[at], ref[at], 1e-5) << "h=" << h << " i=" << i;
          ASSERT_NE(x[at], orig[at]) << "h=" << h << " i=" << i;
        }
      }
    }
  }
}

class vec_ops : public ::testing::TestWithParam<isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { restore_default_isa(); }
};

TEST_P(vec_ops, softmax_sums_to_one_and_matches_reference) {
  for (int n : {1, 3, 17, 100, 1000, 32000}) {
    auto x = random_vector(n, 5 + n, -20.0f, 20.0f);
    if (n > 3) x[2] = -INFINITY;  // a banned entry
    if (n > 5) x[4] = 1000.0f;    // a huge entry must not overflow
    double m = -INFINITY;
    for (float v : x) m = v > m ? v : m;
    double sum = 0.0;
    for (float v : x) sum += std::exp(static_cast<double>(v) - m);
    std::vector<float> y = x;
    softmax(y.data(), n);
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      const double ref = std::exp(static_cast<double>(x[i]) - m) / sum;
      ASSERT_NEAR(y[i], ref, 1e-6 * ref + 1e-30) << "n=" << n << " i=" << i;
      total += y[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << "n=" << n;
    if (n > 3) {
      EXPECT_EQ(y[2], 0.0f);
    }
    EXPECT_NEAR(log_sum_exp(x.data(), n), m + std::log(sum), 1e-5 * std::fabs(m + std::log(sum)));
  }
}

TEST_P(vec_ops, exp_is_accurate_over_the_softmax_range) {
  const auto& v = detail::active_vec_entries();
  std::vector<float> x(2001), out(2001);
  for (int i = 0; i < 2001; ++i) x[i] = -87.0f + 87.0f * i / 2000.0f + (i % 7) * 1e-3f;
  const double sum = v.exp_shift_sum(x.data(), out.data(), 2001, 0.0f);
  double ref_sum = 0.0;
  for (int i = 0; i < 2001; ++i) {
    const double ref = std::exp(static_cast<double>(x[i]));
    ref_sum += ref;
    ASSERT_NEAR(out[i], ref, 3e-7 * ref) << "x=" << x[i];
  }
  EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum);
  const float lows[3] = {-88.0f, -1000.0f, -INFINITY};
  float low_out[3];
  v.exp_shift_sum(lows, low_out, 3, 0.0f);
  for (float e : low_out) EXPECT_EQ(e, 0.0f);
}

TEST_P(vec_ops, silu_mul_matches_reference) {
  for (int n : {1, 5, 33, 1000}) {
    auto g = random_vector(n, 77 + n, -12.0f, 12.0f);
    auto u = random_vector(n, 78 + n);
    if (n > 2) g[1] = -100.0f;
    if (n > 2) g[2] = 100.0f;
    std::vector<float> out(n);
    silu_mul(g.data(), u.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      const double gd = g[i];
      const double ref = gd / (1.0 + std::exp(-gd)) * u[i];
      ASSERT_NEAR(out[i], ref, 1e-6 * std::fabs(ref) + 1e-7) << "n=" << n << " g=" << g[i];
    }
    silu_mul(g.data(), u.data(), g.data(), n);  // in place over gate
    for (int i = 0; i < n; ++i) ASSERT_EQ(g[i], out[i]);
  }
}

// gelu_tanh(x) = 0.5 x (1 + tanh(y)), y = sqrt(2/pi) (x + 0.044715 x^3), in
// double, with 0.5 (1 + tanh(y)) written as 1 / (1 + exp(-2y)) (the same
// number) so that it keeps its relative accuracy for negative x, where
// 1 + tanh(y) cancels to nothing.
double gelu_y(double x) { return std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x); }
double gelu_tanh_double(double x) { return x / (1.0 + std::exp(-2.0 * gelu_y(x))); }

TEST_P(vec_ops, gelu_mul_matches_the_tanh_formula) {
  // A dense sweep of [-12, 12] (both signs, the negative tail where the
  // value falls to ~1e-37, small |x|), huge |x| (x^3 overflows float), and
  // lengths with and without a vector tail. The kernel evaluates
  // t = 2y in float: a few ulp of t, amplified by |t| through exp, so the
  // relative tolerance grows with |y|; values under 1e-36 may flush to 0.
  for (int n : {1, 5, 33, 4001}) {
    std::vector<float> g(static_cast<size_t>(n)), u = random_vector(n, 90 + n);
    for (int i = 0; i < n; ++i) g[static_cast<size_t>(i)] = n == 1 ? -0.7f : -12.0f + 24.0f * i / (n - 1);
    const float specials[] = {100.0f, -100.0f, 1e13f, -1e13f, 1e-3f, -1e-3f, 0.0f, -3.0f, -7.5f, 9.0f};
    for (size_t i = 0; i < g.size() && i < 10; ++i) g[3 * i % g.size()] = specials[i];
    std::vector<float> out(static_cast<size_t>(n)), ref_out(static_cast<size_t>(n));
    gelu_mul(g.data(), u.data(), out.data(), n);
    gelu_mul_reference(g.data(), u.data(), ref_out.data(), n);
    for (size_t i = 0; i < g.size(); ++i) {
      const double x = g[i];
      const double ref = gelu_tanh_double(x) * u[i];
      const double tol = (4.0 + 4.0 * std::fabs(gelu_y(x))) * 0x1p-23 * std::fabs(ref) + 1e-36;
      ASSERT_NEAR(out[i], ref, tol) << "n=" << n << " x=" << x;
      // The reference uses the tanh form: near 1e-16 |x| absolute where it cancels.
      ASSERT_NEAR(ref_out[i], ref, 0x1p-24 * std::fabs(ref) + 1e-14) << "reference, x=" << x;
    }
    std::vector<float> in_gate = g, in_up = u;
    gelu_mul(in_gate.data(), u.data(), in_gate.data(), n);  // out aliases gate
    gelu_mul(g.data(), in_up.data(), in_up.data(), n);      // out aliases up
    EXPECT_EQ(in_gate, out) << "n=" << n;
    EXPECT_EQ(in_up, out) << "n=" << n;
  }
}

TEST_P(vec_ops, gelu_mul_is_identity_far_right_and_zero_far_left) {
  const float g[4] = {30.0f, 1e6f, -30.0f, -1e6f}, u[4] = {2.0f, -1.0f, 3.0f, 1.0f};
  float out[4];
  gelu_mul(g, u, out, 4);
  EXPECT_EQ(out[0], 60.0f);
  EXPECT_EQ(out[1], -1e6f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 0.0f);
}

TEST_P(vec_ops, softcap_matches_cap_tanh) {
  // cap * tanh(x / cap) to a few ulp over +-4 caps, both polynomial and
  // exp ranges of tanh, tiny x, and a vector tail; +-inf reach +-cap,
  // signed zeros keep their sign and NaN stays NaN.
  for (float cap : {1.0f, 30.0f, 50.0f}) {
    for (int n : {1, 7, 33, 4001}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = n == 1 ? 0.3f * cap : cap * (-4.0f + 8.0f * i / (n - 1));
      if (n > 4) {
        x[1] = 1e-30f;
        x[2] = -3e-5f * cap;
        x[3] = 0.62f * cap;
      }
      std::vector<float> y = x;
      softcap_inplace(y.data(), n, cap);
      for (size_t i = 0; i < x.size(); ++i) {
        const double ref = cap * std::tanh(static_cast<double>(x[i]) / cap);
        ASSERT_NEAR(y[i], ref, 5e-7 * std::fabs(ref)) << "cap=" << cap << " x=" << x[i];
      }
    }
    float edge[6] = {INFINITY, -INFINITY, 0.0f, -0.0f, 1e4f * cap, NAN};
    softcap_inplace(edge, 6, cap);
    EXPECT_EQ(edge[0], cap);
    EXPECT_EQ(edge[1], -cap);
    EXPECT_EQ(edge[2], 0.0f);
    EXPECT_TRUE(std::signbit(edge[3]));
    EXPECT_EQ(edge[4], cap);
    EXPECT_TRUE(std::isnan(edge[5])) << "a NaN logit stays visible";
  }
}

TEST_P(vec_ops, gelu_fp16_table_has_the_scalar_lookups_bits) {
  // Every finite half value, each midpoint between neighbouring halves (where
  // rounding to nearest even decides the index) and the floats either side
  // of it, and the +-10 cut-offs: the vector lookup must give the scalar
  // definition's bits. A conversion that truncates, or ties away from zero,
  // picks the other neighbour at the midpoints.
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u) continue;  // inf and NaN
    const float a = fp16_to_fp32(static_cast<uint16_t>(h));
    x.push_back(a);
    if ((h & 0x7fffu) == 0x7bffu) continue;  // the largest finite magnitude
    const float b = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float mid = 0.5f * (a + b);
    x.insert(x.end(), {mid, std::nextafter(mid, a), std::nextafter(mid, b)});
  }
  x.insert(x.end(), {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -1e30f, 1e30f});
  const int n = static_cast<int>(x.size());
  std::vector<float> want(x.size()), got(x.size());
  gelu_fp16_table_reference(x.data(), want.data(), n);
  gelu_fp16_table(x.data(), got.data(), n);
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0 && ++wrong <= 5) {
      ADD_FAILURE() << "x=" << x[i] << " want " << want[i] << " got " << got[i];
    }
  }
  EXPECT_EQ(wrong, 0);
  // The tail path, in place: odd lengths from an odd offset.
  for (int len : {1, 5, 17, 31}) {
    std::vector<float> y(x.begin() + 3, x.begin() + 3 + len);
    gelu_fp16_table(y.data(), y.data(), len);
    EXPECT_EQ(0, std::memcmp(y.data(), want.data() + 3, sizeof(float) * static_cast<size_t>(len))) << "len " << len;
  }
}

TEST(gelu_fp16_table, is_the_tanh_gelu_to_half_precision) {
  // The definition itself, against the formula in double: within two half
  // ulps of the value at the half-rounded input (the table's two roundings),
  // or 2e-7 where the table's float 1 + tanh cancels (x near -5 and below);
  // 0 at and below -10, the identity at and above 10.
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.01f) x.push_back(v);
  std::vector<float> y(x.size());
  gelu_fp16_table_reference(x.data(), y.data(), static_cast<int>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] <= -10.0f) {
      ASSERT_EQ(y[i], 0.0f) << x[i];
    } else if (x[i] >= 10.0f) {
      ASSERT_EQ(y[i], x[i]);
    } else {
      const double xh = fp16_to_fp32(fp32_to_fp16(x[i]));
      const double g = 0.5 * xh * (1.0 + std::tanh(0.7978845608028654 * xh * (1.0 + 0.044715 * xh * xh)));
      const double half_ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(g), 6.1e-5)) - 10);
      ASSERT_NEAR(y[i], g, std::max(2.0 * half_ulp, 2e-7)) << x[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(isas, vec_ops, ::testing::ValuesIn(runnable_isas()),
                         [](const auto& info) { return isa_name(info.param); });

TEST(add_inplace, adds) {
  auto a = random_vector(37, 1);
  const auto b = random_vector(37, 2);
  const auto a0 = a;
  add_inplace(a.data(), b.data(), 37);
  for (int i = 0; i < 37; ++i) EXPECT_EQ(a[i], a0[i] + b[i]);
}

}  // namespace
}  // namespace cortex::kernels

// attn_factor (LongRoPE's rope.scaling.attn_factor, ggml's mscale) scales
// the rotated pairs only: partial rotary dims past n_rot stay as they are.
namespace cortex::kernels {
namespace {
TEST(rope, attn_factor_scales_the_rotated_pairs_only) {
  const int n_heads = 2, head_dim = 32, n_rot = 24, pos = 57;
  const float a = 1.1902381f;
  for (bool neox : {false, true}) {
    const auto orig = random_vector(n_heads * head_dim, 91);
    auto plain = orig, scaled = orig;
    rope(plain.data(), n_heads, head_dim, n_rot, pos, 10000.0f, neox);
    rope(scaled.data(), n_heads, head_dim, n_rot, pos, 10000.0f, neox, 1.0f, nullptr, a);
    for (int h = 0; h < n_heads; ++h) {
      for (int d = 0; d < head_dim; ++d) {
        const size_t i = static_cast<size_t>(h * head_dim + d);
        if (d >= n_rot) {
          EXPECT_EQ(scaled[i], orig[i]) << "pass-through dim " << d;
        } else {
          EXPECT_NEAR(scaled[i], a * plain[i], 1e-5 * (1 + std::abs(plain[i]))) << "neox=" << neox << " dim " << d;
        }
      }
    }
  }
}
}  // namespace
}  // namespace cortex::kernels
