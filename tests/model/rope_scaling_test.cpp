// RoPE scaling as GGUF files carry it: Llama 3.1's rope_freqs.weight
// divisors, linear rope.scaling.factor, and the types we refuse (YaRN,
// LongRoPE) rather than run with wrong logits. Files are the tiny synthetic
// shape, rewritten with the metadata or tensor under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unistd.h>

#include "kernels/thread_pool.hpp"
#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "model/synthetic.hpp"
#include "tests/support/all_logits.hpp"

namespace cortex {
namespace {

std::string temp_path(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "cortex_" +
         std::to_string(::getpid()) + "_rope_" + name;
}

// The tiny shape (head_dim 32) written f32 with a fixed seed, optionally
// with Llama 3.1's rope_freqs.weight.
std::string write_tiny(const std::string& name, bool llama3_rope) {
  synthetic_shape s = *find_synthetic_shape("tiny");
  s.rope_freq_base = 500000.0f;  // Llama 3's base: long wavelengths, so the factors differ from 1
  s.llama3_rope = llama3_rope;
  const std::string path = temp_path(name);
  const auto st = write_synthetic_model(s, "f32", 11, path, 2);
  EXPECT_TRUE(st) << st.message;
  return path;
}

// Copies `src` to `dst` with extra metadata set by `edit` and rope_freqs
// (when given) replacing or adding that tensor.
void rewrite(const std::string& src, const std::string& dst, const std::function<void(gguf::writer&)>& edit,
             const std::vector<float>* rope_freqs = nullptr) {
  auto f = gguf::file::open(src);
  ASSERT_TRUE(f) << f.error().message;
  gguf::writer w;
  for (const auto& [key, v] : (*f)->metadata()) w.set_value(key, v);
  edit(w);
  for (const auto& t : (*f)->tensors()) {
    if (t.name == "rope_freqs.weight" && rope_freqs) continue;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  if (rope_freqs) {
    std::vector<uint8_t> bytes(rope_freqs->size() * sizeof(float));
    std::memcpy(bytes.data(), rope_freqs->data(), bytes.size());
    w.add_tensor("rope_freqs.weight", ggml_type::f32, {static_cast<int64_t>(rope_freqs->size())}, std::move(bytes));
  }
  const auto st = w.write(dst);
  ASSERT_TRUE(st) << st.message;
}

// All logits rows of `tokens` fed from position 0.
TEST(rope_scaling, llama3_factors_follow_the_published_rule) {
  // head_dim 128, base 500000 (Llama 3.1 8B). Pair i has wavelength
  // 2*pi*base^(2i/128): below 8192/4 tokens it keeps 1, above 8192 it gets
  // the factor 8, and in between a blend that grows with the wavelength.
  const auto f = llama3_rope_factors(128, 500000.0f);
  ASSERT_EQ(f.size(), 64u);
  const double pi = 3.14159265358979323846;
  for (size_t i = 0; i < f.size(); ++i) {
    const double wavelen = 2 * pi * std::pow(500000.0, 2.0 * static_cast<double>(i) / 128.0);
    if (wavelen < 2048) {
      EXPECT_EQ(f[i], 1.0f) << i;
    } else if (wavelen > 8192) {
      EXPECT_EQ(f[i], 8.0f) << i;
    } else {
      EXPECT_GE(f[i], 1.0f) << i;
      EXPECT_LE(f[i], 8.0f) << i;
    }
    if (i > 0) {
      EXPECT_GE(f[i], f[i - 1]) << "factors grow with the wavelength, at " << i;
    }
  }
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_EQ(f.back(), 8.0f);
}

TEST(rope_scaling, rope_freqs_is_loaded_and_changes_every_position_but_the_first) {
  const std::string plain = write_tiny("plain.gguf", false);
  const std::string scaled = write_tiny("llama3.gguf", true);
  auto a = model::load(plain);
  auto b = model::load(scaled);
  std::remove(plain.c_str());
  std::remove(scaled.c_str());
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_TRUE((*a)->weights().rope_freqs.empty());
  const int n_pairs = (*b)->hparams().n_rot / 2;
  EXPECT_EQ((*b)->weights().rope_freqs, llama3_rope_factors((*b)->hparams().n_rot, 500000.0f));
  ASSERT_EQ(static_cast<int>((*b)->weights().rope_freqs.size()), n_pairs);

  // Same weights (same seed): at position 0 RoPE rotates by 0 whatever the
  // factors, so the first row is equal bit for bit; later rows must differ.
  const std::vector<int32_t> tokens = {1, 17, 300, 42, 999, 5};
  const auto la = testing::all_logits(**a, tokens);
  const auto lb = testing::all_logits(**b, tokens);
  ASSERT_EQ(la.size(), tokens.size());
  ASSERT_EQ(lb.size(), tokens.size());
  EXPECT_EQ(la[0], lb[0]);
  for (size_t r = 1; r < tokens.size(); ++r) EXPECT_NE(la[r], lb[r]) << "row " << r << " ignores rope_freqs";
}

TEST(rope_scaling, rope_freqs_of_ones_changes_nothing) {
  const std::string plain = write_tiny("plain1.gguf", false);
  const std::string ones = temp_path("ones.gguf");
  auto a = model::load(plain);
  ASSERT_TRUE(a) << a.error().message;
  const std::vector<float> f((*a)->hparams().n_rot / 2, 1.0f);
  rewrite(plain, ones, [](gguf::writer&) {}, &f);
  auto b = model::load(ones);
  std::remove(plain.c_str());
  std::remove(ones.c_str());
  ASSERT_TRUE(b) << b.error().message;
  const std::vector<int32_t> tokens = {1, 17, 300, 42};
  EXPECT_EQ(testing::all_logits(**a, tokens), testing::all_logits(**b, tokens));
}

TEST(rope_scaling, linear_factor_is_read_from_either_key) {
  const std::string plain = write_tiny("plain2.gguf", false);
  const std::string lin = temp_path("linear.gguf");
  rewrite(plain, lin, [](gguf::writer& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  });
  auto m = model::load(lin);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->hparams().rope_freq_scale, 0.25f);
  rewrite(plain, lin, [](gguf::writer& w) { w.set_f32("llama.rope.scale_linear", 2.0f); });
  m = model::load(lin);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->hparams().rope_freq_scale, 0.5f);
  auto p = model::load(plain);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->hparams().rope_freq_scale, 1.0f);
  std::remove(plain.c_str());
  std::remove(lin.c_str());
}

TEST(rope_scaling, unsupported_or_broken_scaling_is_a_clear_error) {
  const std::string plain = write_tiny("plain3.gguf", false);
  const std::string bad = temp_path("bad.gguf");
  const auto load_error = [&]() {
    auto m = model::load(bad);
    return m ? std::string() : m.error().message;
  };
  // LongRoPE is phi3's (its arch file allows it); a llama file asking for it is refused.
  rewrite(plain, bad, [](gguf::writer& w) {
    w.set_string("llama.rope.scaling.type", "longrope");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  });
  std::string e = load_error();
  EXPECT_NE(e.find("rope scaling type 'longrope'"), std::string::npos) << e;
  EXPECT_NE(e.find("llama.rope.scaling.type"), std::string::npos) << e;

  // YaRN runs (gpt-oss's golden checks its logits), but not with nonsense betas.
  rewrite(plain, bad, [](gguf::writer& w) {
    w.set_string("llama.rope.scaling.type", "yarn");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
    w.set_f32("llama.rope.scaling.yarn_beta_fast", -32.0f);
  });
  e = load_error();
  EXPECT_NE(e.find("invalid YaRN settings"), std::string::npos) << e;
  rewrite(plain, bad, [](gguf::writer& w) {
    w.set_string("llama.rope.scaling.type", "yarn");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  });
  EXPECT_EQ(load_error(), "");

  rewrite(plain, bad, [](gguf::writer& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", -1.0f);
  });
  e = load_error();
  EXPECT_NE(e.find("invalid rope scaling factor"), std::string::npos) << e;

  const std::vector<float> short_freqs(3, 1.0f);
  rewrite(plain, bad, [](gguf::writer&) {}, &short_freqs);
  e = load_error();
  EXPECT_NE(e.find("rope_freqs.weight"), std::string::npos) << e;

  auto p = model::load(plain);
  ASSERT_TRUE(p) << p.error().message;
  std::vector<float> zero((*p)->hparams().n_rot / 2, 1.0f);
  zero[2] = 0.0f;
  rewrite(plain, bad, [](gguf::writer&) {}, &zero);
  e = load_error();
  EXPECT_NE(e.find("rope_freqs.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("positive"), std::string::npos) << e;
  std::remove(plain.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace cortex
