// LongRoPE (phi3: Phi-3.5-mini, Phi-4-mini): the file's rope_factors_short
// divide theta while a sequence's context stays within
// rope.scaling.original_context_length, rope_factors_long beyond it, as
// llama.cpp picks them. Checked against the same weights carrying the chosen
// factors as a plain rope_freqs tensor: the logits must be equal, bit for bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "kernels/thread_pool.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

// golden/arch/phi3-f32.gguf plus `extra` f32 vectors (n_rot/2 each) and
// rope.scaling.original_context_length = n_ctx_orig when > 0.
std::string phi3_with(const std::vector<std::pair<std::string, std::vector<float>>>& extra, uint32_t n_ctx_orig,
                      const std::string& tag) {
  auto f = gguf::file::open(testing::shared_dir() + "/golden/arch/phi3-f32.gguf");
  EXPECT_TRUE(f);
  gguf::writer w;
  for (const auto& [key, v] : (*f)->metadata()) w.set_value(key, v);
  if (n_ctx_orig > 0) w.set_u32("phi3.rope.scaling.original_context_length", n_ctx_orig);
  for (const auto& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  for (const auto& [name, v] : extra) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(name, ggml_type::f32, {static_cast<int64_t>(v.size())}, std::move(bytes));
  }
  const std::string path = ::testing::TempDir() + "longrope_" + tag + ".gguf";
  EXPECT_TRUE(w.write(path));
  return path;
}

std::vector<float> logits_of(const std::string& path, int n_ctx) {
  auto m = model::load(path);
  EXPECT_TRUE(m) << m.error().message;
  kernels::thread_pool pool(2);
  single_sequence seq(**m, pool, n_ctx, kernels::kv_type::f32);
  std::vector<int32_t> toks;
  for (int i = 0; i < 40; ++i) toks.push_back(1 + (i * 37) % 500);
  seq.feed(toks, logits_mode::all);
  const int n_vocab = (*m)->hparams().n_vocab;
  std::vector<float> out;
  for (int r = 0; r < 40; r += 13) out.insert(out.end(), seq.logits(r), seq.logits(r) + n_vocab);
  return out;
}

TEST(longrope, short_factors_within_the_original_context_long_beyond) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const int n_pairs = 8;  // phi3-f32: rope.dimension_count 16
  std::vector<float> lng(n_pairs), shrt(n_pairs);
  for (int i = 0; i < n_pairs; ++i) {
    shrt[static_cast<size_t>(i)] = 1.0f + 0.25f * static_cast<float>(i);
    lng[static_cast<size_t>(i)] = 1.0f + 3.0f * static_cast<float>(i);
  }
  const uint32_t orig = 64;
  const std::string both = phi3_with({{"rope_factors_long.weight", lng}, {"rope_factors_short.weight", shrt}}, orig, "both");
  const std::string as_short = phi3_with({{"rope_freqs.weight", shrt}}, 0, "short");
  const std::string as_long = phi3_with({{"rope_freqs.weight", lng}}, 0, "long");
  const std::string none = phi3_with({}, 0, "none");
  const auto within = logits_of(both, static_cast<int>(orig));
  const auto beyond = logits_of(both, static_cast<int>(orig) + 1);
  EXPECT_EQ(within, logits_of(as_short, static_cast<int>(orig)));
  EXPECT_EQ(beyond, logits_of(as_long, static_cast<int>(orig) + 1));
  EXPECT_NE(within, beyond) << "the factors must matter in this test";
  EXPECT_NE(within, logits_of(none, static_cast<int>(orig)));
  for (const auto& p : {both, as_short, as_long, none}) std::remove(p.c_str());
}

// A factor of 0 would divide theta by zero: the file is refused at load,
// naming the tensor, never run.
TEST(longrope, a_factor_that_is_not_positive_is_refused_naming_the_tensor) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::vector<float> bad(8, 1.0f);
  bad[3] = 0.0f;
  const std::string path = phi3_with({{"rope_factors_long.weight", bad}}, 64, "bad");
  auto m = model::load(path);
  std::remove(path.c_str());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, errc::malformed);
  EXPECT_NE(m.error().message.find("rope_factors_long.weight"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace cortex
