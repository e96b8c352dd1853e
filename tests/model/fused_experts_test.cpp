// Mixture-of-experts files whose experts' gate and up come fused in one
// tensor (blk.N.ffn_gate_up_exps, ne = [n_embd, 2 n_ff_exp, n_expert]: each
// expert's gate rows, then its up rows), as newer Qwen3.5-MoE conversions
// write them. The same weights written split (the form the synthetic writer
// makes, whose logits the perplexity test holds to llama.cpp's) and fused
// must give the same logits, bit for bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

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
         std::to_string(::getpid()) + "_fused_" + name;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Copies src to dst with every layer's ffn_gate_exps and ffn_up_exps
// replaced by one ffn_gate_up_exps at the gate's place. With
// `swap_halves`, each expert's up rows come first (a wrong file, for the
// test that shows the order matters).
void fuse_experts(const std::string& src, const std::string& dst, bool swap_halves = false) {
  auto f = gguf::file::open(src);
  ASSERT_TRUE(f) << f.error().message;
  gguf::writer w;
  for (const auto& [key, v] : (*f)->metadata()) w.set_value(key, v);
  int n_fused = 0;
  for (const auto& t : (*f)->tensors()) {
    if (ends_with(t.name, ".ffn_up_exps.weight")) continue;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (!ends_with(t.name, ".ffn_gate_exps.weight")) {
      w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      continue;
    }
    const std::string layer = t.name.substr(0, t.name.size() - std::string("ffn_gate_exps.weight").size());
    const gguf::tensor_info* up = (*f)->find_tensor(layer + "ffn_up_exps.weight");
    ASSERT_NE(up, nullptr) << layer;
    ASSERT_EQ(up->type, t.type);
    const size_t slab = t.n_bytes / static_cast<size_t>(ne[2]);  // one expert's gate (or up) rows
    std::vector<uint8_t> bytes;
    for (int64_t e = 0; e < ne[2]; ++e) {
      const uint8_t* g = t.data + static_cast<size_t>(e) * slab;
      const uint8_t* u = up->data + static_cast<size_t>(e) * slab;
      const uint8_t* first = swap_halves ? u : g;
      const uint8_t* second = swap_halves ? g : u;
      bytes.insert(bytes.end(), first, first + slab);
      bytes.insert(bytes.end(), second, second + slab);
    }
    w.add_tensor(layer + "ffn_gate_up_exps.weight", t.type, {ne[0], 2 * ne[1], ne[2]}, std::move(bytes));
    ++n_fused;
  }
  ASSERT_GT(n_fused, 0) << "no expert tensors in " << src;
  const auto st = w.write(dst);
  ASSERT_TRUE(st) << st.message;
}

class fused_gate_up_experts : public ::testing::TestWithParam<const char*> {};

TEST_P(fused_gate_up_experts, give_the_split_files_logits_bit_for_bit) {
  const std::string split = temp_path(std::string("split_") + GetParam() + ".gguf");
  const std::string fused = temp_path(std::string("fused_") + GetParam() + ".gguf");
  ASSERT_TRUE(write_synthetic_model(*find_synthetic_shape("tiny-qwen35moe"), GetParam(), 7, split, 2));
  fuse_experts(split, fused);
  auto a = model::load(split);
  auto b = model::load(fused);
  {
    auto ff = gguf::file::open(fused);
    ASSERT_TRUE(ff);
    EXPECT_EQ((*ff)->find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
    EXPECT_NE((*ff)->find_tensor("blk.0.ffn_gate_up_exps.weight"), nullptr);
  }
  std::remove(split.c_str());
  std::remove(fused.c_str());
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_GT((*b)->hparams().moe.n_expert, 1);
  const std::vector<int32_t> tokens = {1, 17, 300, 42, 999, 5, 77, 123, 256, 8, 64, 3};
  const auto la = testing::all_logits(**a, tokens);
  const auto lb = testing::all_logits(**b, tokens);
  ASSERT_EQ(la.size(), tokens.size());
  ASSERT_EQ(lb.size(), tokens.size());
  for (size_t r = 0; r < la.size(); ++r) {
    ASSERT_EQ(0, std::memcmp(la[r].data(), lb[r].data(), la[r].size() * sizeof(float))) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(types, fused_gate_up_experts, ::testing::Values("f32", "q8_0"));

TEST(fused_gate_up_experts, gate_rows_come_first) {
  // The same bytes with each expert's halves swapped load (the shape is the
  // same) but must change the logits: the loader really reads the fused
  // tensor, gate rows first, as llama.cpp splits it.
  const std::string split = temp_path("order_split.gguf");
  const std::string swapped = temp_path("order_swapped.gguf");
  ASSERT_TRUE(write_synthetic_model(*find_synthetic_shape("tiny-qwen35moe"), "f32", 7, split, 2));
  fuse_experts(split, swapped, /*swap_halves=*/true);
  auto a = model::load(split);
  auto b = model::load(swapped);
  std::remove(split.c_str());
  std::remove(swapped.c_str());
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  const std::vector<int32_t> tokens = {1, 17, 300, 42};
  EXPECT_NE(testing::all_logits(**a, tokens), testing::all_logits(**b, tokens));
}

TEST(fused_gate_up_experts, a_wrong_shape_or_neither_form_is_refused_by_name) {
  const std::string split = temp_path("bad_split.gguf");
  const std::string bad = temp_path("bad_fused.gguf");
  ASSERT_TRUE(write_synthetic_model(*find_synthetic_shape("tiny-qwen35moe"), "f32", 7, split, 2));
  {
    // A fused tensor of one expert's gate rows only (half the rows).
    auto f = gguf::file::open(split);
    ASSERT_TRUE(f);
    gguf::writer w;
    for (const auto& [key, v] : (*f)->metadata()) w.set_value(key, v);
    for (const auto& t : (*f)->tensors()) {
      std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
      if (t.name == "blk.0.ffn_up_exps.weight") continue;
      const std::string name = t.name == "blk.0.ffn_gate_exps.weight" ? "blk.0.ffn_gate_up_exps.weight" : t.name;
      w.add_tensor(name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    ASSERT_TRUE(w.write(bad));
  }
  auto m = model::load(bad);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("blk.0.ffn_gate_up_exps.weight"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("shape"), std::string::npos) << m.error().message;
  {
    // Neither form: the split one is asked for.
    auto f = gguf::file::open(split);
    ASSERT_TRUE(f);
    gguf::writer w;
    for (const auto& [key, v] : (*f)->metadata()) w.set_value(key, v);
    for (const auto& t : (*f)->tensors()) {
      if (t.name == "blk.0.ffn_up_exps.weight") continue;
      std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
      w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    ASSERT_TRUE(w.write(bad));
  }
  auto n = model::load(bad);
  std::remove(split.c_str());
  std::remove(bad.c_str());
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("missing tensor 'blk.0.ffn_up_exps.weight'"), std::string::npos) << n.error().message;
}

}  // namespace
}  // namespace cortex
