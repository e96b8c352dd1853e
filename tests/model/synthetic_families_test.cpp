// cortex make-model's shapes of the newer families (qwen3, gemma3, phi3,
// smollm3), scaled down (two layers, 64-wide heads, their real vocabulary
// where they carry one): written, loaded by the architecture file they name,
// their family's keys read back as the loader understands them, and one
// step run. 4-12B files are never generated here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "model/synthetic.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

synthetic_shape scaled_down(const synthetic_shape& full) {
  synthetic_shape s = full;
  const int group = s.n_head / s.n_head_kv;
  s.n_head_kv = 1;
  s.n_head = group;
  s.n_embd = 48 * s.n_head;  // heads of 64 then differ from n_embd / n_head, as in qwen3-4b
  if (s.head_dim == 0) s.n_embd = 64 * s.n_head;
  if (s.head_dim > 0) s.head_dim = 64;
  if (s.n_rot > 0) s.n_rot = full.n_rot * 64 / full.head_dim_or_default();
  s.n_ff = 256;
  s.n_layer = 2;
  s.n_ctx = 512;
  if (s.n_expert > 0) {
    s.n_expert = std::min(s.n_expert, 16);
    s.n_ff_exp = 128;
  }
  if (s.ssm_conv > 0) {  // one delta-net layer, one attention layer
    s.ssm_state = 32;
    s.ssm_groups = 2;
    s.ssm_v_heads = 4;
    s.full_attention_interval = 2;
  }
  return s;
}

class family_shape : public ::testing::TestWithParam<const char*> {};

TEST_P(family_shape, writes_loads_and_runs) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const synthetic_shape* full = find_synthetic_shape(GetParam());
  ASSERT_NE(full, nullptr);
  const synthetic_shape s = scaled_down(*full);
  const std::string path = ::testing::TempDir() + "cortex_family_" + std::to_string(::getpid()) + "_" + s.name + ".gguf";
  auto st = write_synthetic_model(s, "q8_0", 7, path, 2, testing::shared_dir() + "/golden/tokenizer/vocab");
  ASSERT_TRUE(st) << st.message;
  auto m = model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m) << m.error().message;
  const model_hparams& hp = (*m)->hparams();
  EXPECT_EQ(hp.arch, s.arch);
  EXPECT_EQ(hp.n_vocab, full->n_vocab);
  EXPECT_EQ(hp.head_dim, s.head_dim_or_default());
  EXPECT_EQ(hp.n_rot, s.n_rot > 0 ? s.n_rot : s.head_dim_or_default());
  ASSERT_EQ(hp.attn.size(), 2u);
  EXPECT_EQ(hp.attn[0].recurrent, s.ssm_conv > 0);
  EXPECT_FALSE(hp.attn[1].recurrent);
  EXPECT_EQ(hp.attn[1].q_gate, s.ssm_conv > 0);
  EXPECT_EQ(hp.delta_net.n_v_heads, s.ssm_v_heads);
  EXPECT_EQ(hp.delta_net.head_v_dim, s.ssm_state);
  EXPECT_EQ(hp.moe.n_expert, s.n_expert);
  EXPECT_EQ(hp.moe.n_used, s.n_expert_used);
  EXPECT_EQ(hp.moe.n_ff_exp, s.n_ff_exp);
  if (s.yarn_factor > 0) {
    EXPECT_EQ(hp.attn[1].yarn_ext_factor, 1.0f);
    EXPECT_EQ(hp.n_ctx_orig, s.yarn_orig_ctx);
    EXPECT_EQ(hp.rope_freq_scale, 1.0f / s.yarn_factor);
  }
  if (s.sliding_window > 0 && s.rope_freq_base_swa == 0.0f) {
    // gpt-oss: even layers windowed, odd ones full.
    EXPECT_EQ(hp.attn[0].window, s.sliding_window);
    EXPECT_EQ(hp.attn[1].window, 0);
  } else if (s.sliding_window > 0) {
    // gemma3: layer 0 of 2 is local (window, its own rope base, no scaling), layer 1 too (global is il % 6 == 5).
    EXPECT_EQ(hp.attn[0].window, s.sliding_window);
    EXPECT_EQ(hp.attn[0].rope_freq_base, s.rope_freq_base_swa);
    EXPECT_EQ(hp.attn[0].rope_freq_scale, 1.0f);
    EXPECT_EQ(hp.rope_freq_scale, 1.0f / s.rope_scale_linear);
  }
  kernels::thread_pool pool(2);
  single_sequence seq(**m, pool, 16, kernels::kv_type::f32);
  ASSERT_EQ(seq.feed({1, 20, 300, 4000}, logits_mode::all), 4);
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < hp.n_vocab; i += 97) ASSERT_TRUE(std::isfinite(seq.logits(r)[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(shapes, family_shape,
                         ::testing::Values("qwen3-8b", "qwen3-4b", "gemma3-4b", "gemma3-12b", "phi4-mini", "smollm3-3b", "qwen3-30b-a3b",
                                           "gpt-oss-20b", "qwen3.5-9b"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace cortex
