// modern-bert's keys as llama.cpp reads them, on the tiny golden file
// (tests/data/encoder/tiny-modern-bert-f32.gguf) with a key changed: which
// layers attend a symmetric window (attention.sliding_window_pattern as a
// period, 0, or one bool per layer; no window at all), the windowed layers'
// rope base (rope.freq_base_swa, 10000 when absent) and the FFN's activation
// (hidden_activation); a ReLU FFN is refused naming the key. The arithmetic
// is encoder_golden_test.cpp's.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/model.hpp"

namespace cortex {
namespace {

const std::string k_file = std::string(CORTEX_SOURCE_DIR) + "/tests/data/encoder/tiny-modern-bert-f32.gguf";

// The golden file without the key `drop` and with what `edit` sets, loaded.
expected<std::unique_ptr<model>> load_with(const std::string& drop, const std::function<void(gguf::writer&)>& edit) {
  auto f = gguf::file::open(k_file);
  EXPECT_TRUE(f) << f.error().message;
  gguf::writer w;
  for (const auto& [key, v] : (*f)->metadata()) {
    if (key != drop) w.set_value(key, v);
  }
  edit(w);
  for (const auto& t : (*f)->tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  const std::string path = ::testing::TempDir() + "cortex_modern_bert_" + std::to_string(::getpid()) + ".gguf";
  const auto st = w.write(path);
  EXPECT_TRUE(st) << st.message;
  auto m = model::load(path);
  std::remove(path.c_str());
  return m;
}

const auto unchanged = [](gguf::writer&) {};

std::vector<int> windows_of(const model& m) {
  std::vector<int> out;
  for (const auto& a : m.hparams().attn) out.push_back(a.window_symmetric);
  return out;
}

std::vector<float> rope_bases_of(const model& m) {
  std::vector<float> out;
  for (const auto& a : m.hparams().attn) out.push_back(a.rope_freq_base);
  return out;
}

TEST(modern_bert, reads_the_file_as_llama_cpp) {
  auto m = load_with("", unchanged);
  ASSERT_TRUE(m) << m.error().message;
  const model_hparams& hp = (*m)->hparams();
  EXPECT_EQ(hp.arch, "modern-bert");
  EXPECT_TRUE(hp.encoder.enabled);
  EXPECT_EQ(hp.encoder.pooling, pooling_kind::mean);
  EXPECT_EQ(hp.encoder.gated_act, ffn_activation::gelu_fp16);
  EXPECT_TRUE(hp.encoder.rank_reads_mean && hp.encoder.rank_gelu);
  // Period 3 from layer 0: layers 0 and 3 global, 1 and 2 windowed, with
  // their own rope base and no rope scaling.
  EXPECT_EQ(windows_of(**m), (std::vector<int>{0, 15, 15, 0}));
  EXPECT_EQ(rope_bases_of(**m), (std::vector<float>{160000.0f, 10000.0f, 10000.0f, 160000.0f}));
  for (const auto& a : hp.attn) {
    EXPECT_EQ(a.window, 0) << "an encoder's window is no memory kind";
    EXPECT_EQ(a.rope, rope_kind::neox);
    EXPECT_EQ(a.rope_freq_scale, 1.0f);
  }
  const model_weights& w = (*m)->weights();
  EXPECT_TRUE(w.layers[0].attn_norm.empty()) << "layer 0 reads the normed embeddings";
  EXPECT_FALSE(w.layers[1].attn_norm.empty());
  EXPECT_FALSE(w.output_norm.empty());
  EXPECT_TRUE(w.type_embd.empty() && w.pos_embd.empty() && w.embd_norm_b.empty());
  EXPECT_FALSE(w.cls_norm.empty());
  EXPECT_NE(w.cls_out.data, nullptr);
}

TEST(modern_bert, windowed_layers_follow_the_pattern) {
  const std::string key = "modern-bert.attention.sliding_window_pattern";
  auto absent = load_with(key, unchanged);  // llama.cpp's default period, 3
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_EQ(windows_of(**absent), (std::vector<int>{0, 15, 15, 0}));
  auto two = load_with("", [&](gguf::writer& w) { w.set_u32(key, 2); });
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(windows_of(**two), (std::vector<int>{0, 15, 0, 15}));
  auto zero = load_with("", [&](gguf::writer& w) { w.set_u32(key, 0); });  // every layer
  ASSERT_TRUE(zero) << zero.error().message;
  EXPECT_EQ(windows_of(**zero), (std::vector<int>{15, 15, 15, 15}));
  EXPECT_EQ(rope_bases_of(**zero), (std::vector<float>{10000.0f, 10000.0f, 10000.0f, 10000.0f}));
  // One bool per layer, as the converter writes a list.
  const uint8_t flags[4] = {1, 0, 0, 1};
  gguf::value per_layer;
  per_layer.type = gguf::value_type::array;
  per_layer.elem_type = gguf::value_type::boolean;
  per_layer.count = 4;
  per_layer.raw = flags;
  auto listed = load_with("", [&](gguf::writer& w) { w.set_value(key, per_layer); });
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(windows_of(**listed), (std::vector<int>{15, 0, 0, 15}));
  auto short_list = load_with("", [&](gguf::writer& w) { w.set_i32_array(key, {1, 0, 0}); });
  ASSERT_FALSE(short_list);
  EXPECT_NE(short_list.error().message.find(key), std::string::npos) << short_list.error().message;
}

TEST(modern_bert, without_a_window_every_layer_is_global) {
  for (const bool absent : {true, false}) {
    auto m = absent ? load_with("modern-bert.attention.sliding_window", unchanged)
                    : load_with("", [](gguf::writer& w) { w.set_u32("modern-bert.attention.sliding_window", 0); });
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(windows_of(**m), (std::vector<int>{0, 0, 0, 0})) << "absent " << absent;
    EXPECT_EQ(rope_bases_of(**m), (std::vector<float>{160000.0f, 160000.0f, 160000.0f, 160000.0f})) << "absent " << absent;
  }
}

TEST(modern_bert, windowed_layers_rope_base) {
  auto absent = load_with("modern-bert.rope.freq_base_swa", unchanged);  // llama.cpp's default, not the global base
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_EQ(rope_bases_of(**absent), (std::vector<float>{160000.0f, 10000.0f, 10000.0f, 160000.0f}));
  auto other = load_with("", [](gguf::writer& w) { w.set_f32("modern-bert.rope.freq_base_swa", 20000.0f); });
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(rope_bases_of(**other), (std::vector<float>{160000.0f, 20000.0f, 20000.0f, 160000.0f}));
}

TEST(modern_bert, hidden_activation_picks_the_glu) {
  const std::string key = "modern-bert.hidden_activation";
  struct expect_act { const char* name; ffn_activation act; };
  for (const expect_act& e : {expect_act{"gelu", ffn_activation::gelu_fp16}, expect_act{"geglu", ffn_activation::gelu_fp16},
                              expect_act{"silu", ffn_activation::silu}, expect_act{"swish", ffn_activation::silu},
                              expect_act{"swiglu", ffn_activation::silu},
                              expect_act{"gelu_pytorch_tanh", ffn_activation::gelu_fp16}}) {  // unknown: GeGLU, as llama.cpp
    auto m = load_with("", [&](gguf::writer& w) { w.set_string(key, e.name); });
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ((*m)->hparams().encoder.gated_act, e.act) << e.name;
  }
  auto absent = load_with(key, unchanged);
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_EQ((*absent)->hparams().encoder.gated_act, ffn_activation::gelu_fp16);
  for (const char* relu : {"relu", "reglu"}) {
    auto m = load_with("", [&](gguf::writer& w) { w.set_string(key, relu); });
    ASSERT_FALSE(m) << relu;
    EXPECT_NE(m.error().message.find(key), std::string::npos) << m.error().message;
  }
}

}  // namespace
}  // namespace cortex
