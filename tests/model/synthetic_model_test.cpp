// cortex make-model's files: valid GGUF in the named shape, quantized as
// llama-quantize would lay the types out, with a tokenizer that round-trips
// English, and a forward pass that produces finite logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "model/synthetic.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::string temp_path(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "cortex_" +
         std::to_string(::getpid()) + "_" + name;
}

class synthetic_model : public ::testing::TestWithParam<std::string> {};

TEST_P(synthetic_model, loads_tokenizes_and_runs) {
  const auto* shape = find_synthetic_shape("tiny");
  ASSERT_NE(shape, nullptr);
  const std::string path = temp_path("tiny-" + GetParam() + ".gguf");
  auto st = write_synthetic_model(*shape, GetParam(), 42, path, 2);
  ASSERT_TRUE(st) << st.message;
  auto m = model::load(path);
  std::remove(path.c_str());  // the mapping stays valid after unlink
  ASSERT_TRUE(m) << m.error().message;
  const auto& hp = (*m)->hparams();
  EXPECT_EQ(hp.n_embd, shape->n_embd);
  EXPECT_EQ(hp.n_layer, shape->n_layer);
  EXPECT_EQ(hp.n_head_kv, shape->n_head_kv);
  EXPECT_EQ(hp.n_vocab, shape->n_vocab);

  const auto& tok = (*m)->tokenizer();
  const std::string text = "Once upon a time, the little cat saw a big red ball.";
  auto ids = tok.encode(text, true);
  ASSERT_GT(ids.size(), 2u);
  EXPECT_EQ(ids[0], tok.bos_id());
  EXPECT_LT(ids.size(), text.size()) << "common words must be single tokens, not bytes";
  EXPECT_EQ(tok.decode(std::vector<int32_t>(ids.begin() + 1, ids.end())), text);

  kernels::thread_pool pool(2);
  single_sequence seq(**m, pool, 64, kernels::kv_type::f32);
  ASSERT_EQ(seq.feed(ids, logits_mode::last), 1);
  for (int v = 0; v < hp.n_vocab; ++v) ASSERT_TRUE(std::isfinite(seq.logits(0)[v])) << "token " << v;
}

INSTANTIATE_TEST_SUITE_P(types, synthetic_model, ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_k_m"));

// The "tiny" shape is the golden tiny-llama shape: every tensor must have the
// name, shape and type llama-quantize gave it in ../shared/golden/models.
class synthetic_layout : public ::testing::TestWithParam<std::string> {};

TEST_P(synthetic_layout, matches_llama_quantize_tensor_types) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const std::string path = temp_path("tiny-layout-" + GetParam() + ".gguf");
  ASSERT_TRUE(write_synthetic_model(*find_synthetic_shape("tiny"), GetParam(), 1, path, 2));
  auto ours = gguf::file::open(path);
  std::remove(path.c_str());
  ASSERT_TRUE(ours) << ours.error().message;
  auto ref = gguf::file::open(testing::model_path("tiny-llama-" + GetParam() + ".gguf"));
  ASSERT_TRUE(ref) << ref.error().message;
  EXPECT_EQ((*ours)->tensors().size(), (*ref)->tensors().size());
  for (const auto& t : (*ref)->tensors()) {
    const auto* o = (*ours)->find_tensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    EXPECT_EQ(type_traits(o->type).name, std::string(type_traits(t.type).name)) << t.name;
    for (int d = 0; d < 4; ++d) EXPECT_EQ(o->ne[d], t.ne[d]) << t.name << " dim " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(types, synthetic_layout, ::testing::Values("f16", "q8_0", "q4_0", "q4_k_m"));

TEST(synthetic_model_types, unknown_type_is_a_clear_error) {
  auto st = write_synthetic_model(*find_synthetic_shape("tiny"), "q3_x", 1, temp_path("bad.gguf"), 1);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("q3_x"), std::string::npos);
}

}  // namespace
}  // namespace cortex
