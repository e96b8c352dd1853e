// The published 7-8B shapes of cortex make-model: their hyper-parameters
// against the models' config.json on Hugging Face, and scaled-down variants
// (real vocabulary, GQA ratio and architecture; small widths and two
// layers) written, read back and loaded. 8B files are never generated here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "gguf/gguf.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::string temp_path(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "cortex_" +
         std::to_string(::getpid()) + "_" + name;
}

std::string vocab_dir() { return testing::shared_dir() + "/golden/tokenizer/vocab"; }

struct published {
  const char* name;
  const char* vocab;  // ../shared/golden/tokenizer/<vocab>.public.json
  std::string arch;
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff;
  float rope_freq_base, rms_eps;
};

// From config.json: meta-llama/Llama-3.1-8B, Qwen/Qwen2.5-7B,
// mistralai/Mistral-7B-v0.1 (vocab_size, hidden_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, intermediate_size, rope_theta,
// rms_norm_eps).
const published k_published[] = {
    {"llama-3.1-8b", "llama3", "llama", 128256, 4096, 32, 32, 8, 14336, 500000.0f, 1e-5f},
    {"qwen2.5-7b", "qwen3", "qwen2", 152064, 3584, 28, 28, 4, 18944, 1000000.0f, 1e-6f},
    {"mistral-7b", "llama-spm", "llama", 32000, 4096, 32, 32, 8, 14336, 10000.0f, 1e-5f},
};

TEST(synthetic_shapes, match_the_published_configs) {
  for (const auto& p : k_published) {
    const auto* s = find_synthetic_shape(p.name);
    ASSERT_NE(s, nullptr) << p.name;
    EXPECT_EQ(s->arch, p.arch) << p.name;
    EXPECT_EQ(s->n_vocab, p.n_vocab) << p.name;
    EXPECT_EQ(s->n_embd, p.n_embd) << p.name;
    EXPECT_EQ(s->n_layer, p.n_layer) << p.name;
    EXPECT_EQ(s->n_head, p.n_head) << p.name;
    EXPECT_EQ(s->n_head_kv, p.n_head_kv) << p.name;
    EXPECT_EQ(s->n_ff, p.n_ff) << p.name;
    EXPECT_EQ(s->n_embd / s->n_head, 128) << p.name << ": head_dim";
    EXPECT_EQ(s->rope_freq_base, p.rope_freq_base) << p.name;
    EXPECT_EQ(s->rms_eps, p.rms_eps) << p.name;
    EXPECT_FALSE(s->tied_embeddings) << p.name;
    EXPECT_FALSE(s->vocab.empty()) << p.name << " must carry a real vocabulary";
  }
}

// The shape with widths divided down (head_dim 64, n_ff 256) and 2 layers:
// the same arch, vocabulary, GQA ratio, rope base and epsilon.
synthetic_shape scaled_down(const std::string& name) {
  synthetic_shape s = *find_synthetic_shape(name);
  const int group = s.n_head / s.n_head_kv;
  s.n_head_kv = 1;
  s.n_head = group;
  s.n_embd = 64 * s.n_head;
  s.n_ff = 256;
  s.n_layer = 2;
  s.n_ctx = 512;
  return s;
}

class scaled_shape : public ::testing::TestWithParam<const char*> {};

TEST_P(scaled_shape, header_tensors_and_vocabulary_read_back) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const published* p = nullptr;
  for (const auto& q : k_published) {
    if (std::string(q.name) == GetParam()) p = &q;
  }
  ASSERT_NE(p, nullptr);
  const synthetic_shape s = scaled_down(p->name);
  const std::string path = temp_path(std::string(p->name) + "-scaled.gguf");
  auto st = write_synthetic_model(s, "q4_0", 7, path, 2, vocab_dir());
  ASSERT_TRUE(st) << st.message;
  auto f = gguf::file::open(path);
  ASSERT_TRUE(f) << f.error().message;
  const auto& g = **f;
  const std::string a = p->arch;
  EXPECT_EQ(g.get_string("general.architecture").value_or(""), a);
  EXPECT_EQ(g.get_uint("general.file_type").value_or(0), 2u) << "llama.cpp's MOSTLY_Q4_0";
  EXPECT_EQ(g.get_uint(a + ".attention.head_count").value_or(0), static_cast<uint64_t>(s.n_head));
  EXPECT_EQ(g.get_uint(a + ".attention.head_count_kv").value_or(0), 1u);
  EXPECT_EQ(g.get_uint(a + ".rope.dimension_count").value_or(0), 64u);
  EXPECT_EQ(g.get_float(a + ".rope.freq_base").value_or(0), p->rope_freq_base);
  EXPECT_FLOAT_EQ(static_cast<float>(g.get_float(a + ".attention.layer_norm_rms_epsilon").value_or(0)), p->rms_eps);
  EXPECT_EQ(g.get_uint(a + ".vocab_size").value_or(0), static_cast<uint64_t>(p->n_vocab));

  // GQA: K and V project to one 64-wide head, Q to n_head of them.
  const auto* wq = g.find_tensor("blk.1.attn_q.weight");
  const auto* wk = g.find_tensor("blk.1.attn_k.weight");
  const auto* wv = g.find_tensor("blk.1.attn_v.weight");
  ASSERT_TRUE(wq && wk && wv);
  EXPECT_EQ(wq->ne[0], s.n_embd);
  EXPECT_EQ(wq->ne[1], s.n_embd);
  EXPECT_EQ(wk->ne[1], 64);
  EXPECT_EQ(wv->ne[1], 64);
  const auto* embd = g.find_tensor("token_embd.weight");
  const auto* out = g.find_tensor("output.weight");
  ASSERT_TRUE(embd && out) << "untied embeddings need output.weight";
  EXPECT_EQ(embd->ne[1], p->n_vocab);
  EXPECT_EQ(out->ne[1], p->n_vocab);
  EXPECT_EQ(g.find_tensor("blk.0.attn_q.bias") != nullptr, p->arch == std::string("qwen2")) << "QKV bias is qwen2's";
  // Llama 3.1 files carry its rope scaling as rope_freqs.weight (head_dim/2 divisors).
  const auto* rf = g.find_tensor("rope_freqs.weight");
  EXPECT_EQ(rf != nullptr, std::string(p->name) == "llama-3.1-8b") << "rope_freqs.weight is Llama 3.1's";
  if (rf) {
    EXPECT_EQ(rf->ne[0], 32);
  }
  const auto* tokens = g.get_string_array("tokenizer.ggml.tokens");
  auto types = g.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens && types);
  EXPECT_EQ(tokens->size(), static_cast<size_t>(p->n_vocab));
  EXPECT_EQ(types->size(), static_cast<size_t>(p->n_vocab));
  if (p->arch == "qwen2") {
    // Qwen's 151,936 tokens padded to the 152,064 embedding rows, as
    // llama.cpp's converter pads Qwen2.5-7B: unused "[PADi]" tokens.
    EXPECT_EQ((*tokens)[151936], "[PAD151936]");
    EXPECT_EQ((*tokens)[152063], "[PAD152063]");
    EXPECT_EQ((*types)[152063], 5) << "unused";
  }

  auto m = model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ((*m)->hparams().n_vocab, p->n_vocab);
  EXPECT_EQ((*m)->hparams().n_head_kv, 1);

  // The copied vocabulary tokenizes as the real one does: the first case of
  // its golden tokenizer file (ids from llama.cpp).
  auto cases = testing::load_json(testing::shared_dir() + "/golden/tokenizer/" + p->vocab + ".public.json");
  ASSERT_FALSE(cases.is_discarded()) << p->vocab;
  const auto& c = cases["cases"][0];
  const std::string text = testing::hex_to_bytes(c["text_hex"].get<std::string>());
  EXPECT_EQ((*m)->tokenizer().encode(text, cases["add_special"].get<bool>()), c["ids"].get<std::vector<int32_t>>());
}

INSTANTIATE_TEST_SUITE_P(published, scaled_shape, ::testing::Values("llama-3.1-8b", "qwen2.5-7b", "mistral-7b"));

TEST(synthetic_shapes, a_missing_vocabulary_names_the_flag) {
  auto st = write_synthetic_model(scaled_down("mistral-7b"), "q4_0", 1, temp_path("novocab.gguf"), 1, "/nonexistent");
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("ggml-vocab-llama-spm.gguf"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("--vocab-dir"), std::string::npos) << st.message;
}

// Without --vocab-dir, where the reference vocabularies are not beside the
// working folder, the error says which flag and file to give, and names no
// folder the user does not have.
TEST(synthetic_shapes, no_vocabulary_folder_given_or_found_names_the_flag) {
  const std::string dir = temp_path("no-vocab-cwd");
  ASSERT_TRUE(std::filesystem::create_directories(dir) || std::filesystem::is_directory(dir));
  const auto old = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  auto st = write_synthetic_model(scaled_down("mistral-7b"), "q4_0", 1, dir + "/x.gguf", 1, "");
  std::filesystem::current_path(old);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("--vocab-dir"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("ggml-vocab-llama-spm.gguf"), std::string::npos) << st.message;
  EXPECT_EQ(st.message.find("shared"), std::string::npos) << st.message;
}

}  // namespace
}  // namespace cortex
