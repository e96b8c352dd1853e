// cortex make-model's encoder shapes: bge-small and bge-base have the
// published sizes (BAAI/bge-{small,base}-en-v1.5 config.json), and a bge-small
// with two layers is written in f16 and q8_0, loads as bert with its
// WordPiece vocabulary and CLS pooling, and embeds text to unit vectors. The
// loader's refusals of bad encoder files name what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "kernels/thread_pool.hpp"
#include "model/embedding.hpp"
#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/kv_arena.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

TEST(encoder_shapes, match_the_published_configs) {
  struct published { const char* name; int n_embd, n_layer, n_head, n_ff; };
  for (const published& p : {published{"bge-small", 384, 12, 12, 1536}, published{"bge-base", 768, 12, 12, 3072}}) {
    const synthetic_shape* s = find_synthetic_shape(p.name);
    ASSERT_NE(s, nullptr) << p.name;
    EXPECT_EQ(s->arch, "bert");
    EXPECT_EQ(s->n_vocab, 30522);
    EXPECT_EQ(s->n_ctx, 512);
    EXPECT_EQ(s->n_embd, p.n_embd);
    EXPECT_EQ(s->n_layer, p.n_layer);
    EXPECT_EQ(s->n_head, p.n_head);
    EXPECT_EQ(s->n_head_kv, p.n_head);
    EXPECT_EQ(s->n_ff, p.n_ff);
    EXPECT_EQ(s->pooling_type, 2) << "bge pools the [CLS] row";
    EXPECT_EQ(s->vocab, "bert-bge");
  }
}

class encoder_shape_type : public ::testing::TestWithParam<const char*> {};

TEST_P(encoder_shape_type, writes_loads_and_embeds) {
  CORTEX_NEEDS_REFERENCE_DATA();
  synthetic_shape s = *find_synthetic_shape("bge-small");
  s.n_layer = 2;
  const std::string path = ::testing::TempDir() + "cortex_encoder_" + std::to_string(::getpid()) + "_" + GetParam() + ".gguf";
  auto st = write_synthetic_model(s, GetParam(), 5, path, 2, testing::shared_dir() + "/golden/tokenizer/vocab");
  ASSERT_TRUE(st) << st.message;
  auto m = model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m) << m.error().message;
  const model_hparams& hp = (*m)->hparams();
  EXPECT_EQ(hp.arch, "bert");
  EXPECT_TRUE(hp.encoder.enabled);
  EXPECT_EQ(hp.encoder.pooling, pooling_kind::cls);
  EXPECT_EQ(hp.n_vocab, 30522);
  const auto ids = (*m)->tokenizer().encode("Embeddings for retrieval, please.", true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);
  EXPECT_EQ(ids.back(), 102);
  kernels::thread_pool pool(2);
  forward_pass fwd(**m, pool);
  kv_arena kv(hp, 1, 16, kernels::kv_type::f32);
  auto e = encode_inputs(fwd, kv, **m, {ids, {101, 102}}, hp.encoder.pooling, true);
  ASSERT_TRUE(e) << e.error().message;
  for (const auto& v : *e) {
    ASSERT_EQ(v.size(), 384u);
    double sq = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x));
      sq += static_cast<double>(x) * x;
    }
    EXPECT_NEAR(sq, 1.0, 1e-5);
  }
  EXPECT_NE((*e)[0], (*e)[1]);
}

INSTANTIATE_TEST_SUITE_P(types, encoder_shape_type, ::testing::Values("f16", "q8_0"));

// A bert file with one key changed: the loader refuses it and says which key.
class bad_encoder_file : public ::testing::Test {
 protected:
  std::string rewrite(const std::string& key, const gguf::value* replacement) {
    auto f = gguf::file::open(std::string(CORTEX_SOURCE_DIR) + "/tests/data/encoder/tiny-bert-f32.gguf");
    EXPECT_TRUE(f);
    gguf::writer w;
    for (const auto& [k, v] : (*f)->metadata()) {
      if (k == key && replacement == nullptr) continue;
      w.set_value(k, k == key ? *replacement : v);
    }
    for (const auto& t : (*f)->tensors()) w.declare_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims));
    const std::string path = ::testing::TempDir() + "cortex_bad_encoder_" + std::to_string(::getpid()) + ".gguf";
    const auto& tensors = (*f)->tensors();
    auto st = w.write(path, [&](size_t i, std::vector<uint8_t>& data) {
      const auto* src = static_cast<const uint8_t*>(tensors[i].data);
      std::copy(src, src + data.size(), data.begin());
      return status::ok();
    });
    EXPECT_TRUE(st) << st.message;
    return path;
  }
  std::string load_error(const std::string& key, const gguf::value* replacement) {
    const std::string path = rewrite(key, replacement);
    auto m = model::load(path);
    std::remove(path.c_str());
    return m ? std::string() : m.error().message;
  }
};

TEST_F(bad_encoder_file, names_the_key) {
  EXPECT_NE(load_error("bert.attention.causal", nullptr).find("bert.attention.causal"), std::string::npos);
  EXPECT_NE(load_error("bert.attention.layer_norm_epsilon", nullptr).find("layer_norm_epsilon"), std::string::npos);
  EXPECT_NE(load_error("tokenizer.ggml.token_type_count", nullptr).find("token_type_count"), std::string::npos);
  gguf::value yes;
  yes.type = gguf::value_type::boolean;
  yes.u = 1;
  EXPECT_NE(load_error("bert.attention.causal", &yes).find("is true"), std::string::npos);
  gguf::value nine;
  nine.type = gguf::value_type::u32;
  nine.u = 9;
  nine.i = 9;
  nine.f = 9;
  EXPECT_NE(load_error("bert.pooling_type", &nine).find("bert.pooling_type"), std::string::npos);
  EXPECT_EQ(load_error("general.name", nullptr), "") << "the unchanged rest loads";
}

}  // namespace
}  // namespace cortex
