// llama-quantize's per-tensor type rules (llama.cpp src/llama-quant.cpp,
// 2026-09-28), checked on named tensors of a few model shapes. The expected
// types are the rules as llama.cpp states them, worked out by hand here, not
// read back from the code under test.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gguf/gguf_writer.hpp"
#include "model/quantize_plan.hpp"

namespace cortex::quantize {
namespace {

using t = ggml_type;

tensor_desc tensor(const std::string& name, std::vector<int64_t> ne) {
  tensor_desc d;
  d.name = name;
  for (size_t i = 0; i < ne.size(); ++i) d.ne[i] = ne[i];
  return d;
}

// A llama-shaped model: n_layer layers of width e, kv rows of attn_k/v,
// ffn width ff, vocab 1024; no output.weight if tied.
std::vector<tensor_desc> llama_tensors(int n_layer, int64_t e, int64_t kv, int64_t ff, bool tied = false) {
  std::vector<tensor_desc> v = {tensor("token_embd.weight", {e, 1024}), tensor("output_norm.weight", {e})};
  if (!tied) v.push_back(tensor("output.weight", {e, 1024}));
  for (int il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (auto& d : {tensor(p + "attn_norm.weight", {e}), tensor(p + "attn_q.weight", {e, e}), tensor(p + "attn_k.weight", {e, kv}),
                    tensor(p + "attn_v.weight", {e, kv}), tensor(p + "attn_output.weight", {e, e}),
                    tensor(p + "ffn_norm.weight", {e}), tensor(p + "ffn_gate.weight", {e, ff}), tensor(p + "ffn_up.weight", {e, ff}),
                    tensor(p + "ffn_down.weight", {ff, e})}) {
      v.push_back(d);
    }
  }
  return v;
}

model_facts llama_facts(int n_layer, int n_head = 8, int n_head_kv = 2, int n_expert = 0) {
  model_facts f;
  f.arch = "llama";
  f.n_layer = n_layer;
  f.n_head = n_head;
  f.n_head_kv = n_head_kv;
  f.n_expert = n_expert;
  return f;
}

// name -> planned type.
std::map<std::string, ggml_type> types_of(const std::vector<tensor_desc>& ts, const model_facts& f, file_type ft,
                                          const options& opt = {}) {
  auto p = make_plan(ts, f, ft, opt);
  EXPECT_TRUE(p) << p.error().message;
  std::map<std::string, ggml_type> m;
  if (p) {
    for (auto& tp : p->tensors) m[tp.name] = tp.to;
  }
  return m;
}

std::string layer(int il, const char* what) { return "blk." + std::to_string(il) + "." + what + ".weight"; }

TEST(quantize_plan, q4_k_m_gives_attn_v_and_ffn_down_more_bits_in_the_use_more_bits_layers) {
  // 4 layers: use_more_bits(i, 4) is i >= 3 (7*4/8) or (i - 0) % 3 == 2.
  auto m = types_of(llama_tensors(4, 256, 64, 768), llama_facts(4), file_type::q4_k_m);
  for (int il = 0; il < 4; ++il) {
    const ggml_type more = il >= 2 ? t::q6_k : t::q4_k;
    EXPECT_EQ(m[layer(il, "attn_v")], more) << il;
    EXPECT_EQ(m[layer(il, "ffn_down")], more) << il;
    for (const char* w : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) EXPECT_EQ(m[layer(il, w)], t::q4_k) << w << il;
    EXPECT_EQ(m[layer(il, "attn_norm")], t::f32);
  }
  EXPECT_EQ(m["output.weight"], t::q6_k);
  EXPECT_EQ(m["token_embd.weight"], t::q4_k) << "untied token_embd keeps the base type";
  EXPECT_EQ(m["output_norm.weight"], t::f32);

  // 32 layers: the first and last four, and layers 6, 9, ..., 27 between.
  auto m32 = types_of(llama_tensors(32, 256, 64, 768), llama_facts(32), file_type::q4_k_m);
  for (int il : {0, 3, 6, 9, 27, 28, 31}) EXPECT_EQ(m32[layer(il, "ffn_down")], t::q6_k) << il;
  for (int il : {4, 5, 7, 8, 25, 26}) EXPECT_EQ(m32[layer(il, "ffn_down")], t::q4_k) << il;
  for (int il : {0, 6, 28}) EXPECT_EQ(m32[layer(il, "attn_v")], t::q6_k) << il;
  for (int il : {4, 26}) EXPECT_EQ(m32[layer(il, "attn_v")], t::q4_k) << il;
}

TEST(quantize_plan, output_order_is_llama_quantizes_non_layer_tensors_then_layers_by_number) {
  auto p = make_plan(llama_tensors(11, 256, 64, 768), llama_facts(11), file_type::q8_0);
  ASSERT_TRUE(p);
  std::vector<std::string> names;
  for (auto& tp : p->tensors) names.push_back(tp.name);
  EXPECT_EQ(names[0], "output.weight");
  EXPECT_EQ(names[1], "output_norm.weight");
  EXPECT_EQ(names[2], "token_embd.weight");
  EXPECT_EQ(names[3], "blk.0.attn_k.weight") << "names sorted within a layer";
  EXPECT_EQ(names[3 + 9 * 9], "blk.9.attn_k.weight");
  EXPECT_EQ(names[3 + 9 * 10], "blk.10.attn_k.weight") << "layers by number: blk.10 after blk.9";
  EXPECT_EQ(p->tensors[0].source, 2u) << "source indexes the input order";
}

TEST(quantize_plan, tied_embeddings_quantize_token_embd_by_the_output_rule) {
  auto tied = llama_tensors(2, 256, 64, 768, /*tied=*/true);
  EXPECT_EQ(types_of(tied, llama_facts(2), file_type::q4_k_m)["token_embd.weight"], t::q6_k);
  EXPECT_EQ(types_of(tied, llama_facts(2), file_type::q4_0)["token_embd.weight"], t::q6_k);
  EXPECT_EQ(types_of(tied, llama_facts(2), file_type::q8_0)["token_embd.weight"], t::q8_0);
  EXPECT_EQ(types_of(tied, llama_facts(2), file_type::mxfp4_moe)["token_embd.weight"], t::q8_0);
  // A row that is no whole number of the base type's blocks: Q8_0.
  auto narrow = llama_tensors(2, 64 + 32, 64, 768, true);
  EXPECT_EQ(types_of(narrow, llama_facts(2), file_type::q4_k_m)["token_embd.weight"], t::q8_0);
}

TEST(quantize_plan, q3_k_mixes) {
  auto ts = llama_tensors(16, 256, 64, 768);
  auto s = types_of(ts, llama_facts(16), file_type::q3_k_s);
  EXPECT_EQ(s[layer(0, "attn_v")], t::q3_k);
  EXPECT_EQ(s[layer(0, "ffn_down")], t::q3_k);
  EXPECT_EQ(s["output.weight"], t::q6_k);

  auto m = types_of(ts, llama_facts(16), file_type::q3_k_m);
  EXPECT_EQ(m[layer(0, "attn_v")], t::q5_k) << "the first two attn_v";
  EXPECT_EQ(m[layer(1, "attn_v")], t::q5_k);
  EXPECT_EQ(m[layer(2, "attn_v")], t::q4_k);
  EXPECT_EQ(m[layer(0, "ffn_down")], t::q5_k) << "layers below n_layer/16";
  EXPECT_EQ(m[layer(1, "ffn_down")], t::q4_k) << "not falcon: Q4_K";
  EXPECT_EQ(m[layer(5, "attn_output")], t::q4_k);
  EXPECT_EQ(m[layer(5, "attn_q")], t::q3_k);
  EXPECT_EQ(m[layer(5, "ffn_up")], t::q3_k);

  auto l = types_of(ts, llama_facts(16), file_type::q3_k_l);
  EXPECT_EQ(l[layer(9, "attn_v")], t::q5_k);
  EXPECT_EQ(l[layer(9, "ffn_down")], t::q5_k);
  EXPECT_EQ(l[layer(9, "attn_output")], t::q5_k);
  EXPECT_EQ(l[layer(9, "ffn_gate")], t::q3_k);
}

TEST(quantize_plan, q4_k_s_q5_k_and_q6_k_mixes) {
  auto ts = llama_tensors(16, 256, 64, 768);
  auto s = types_of(ts, llama_facts(16), file_type::q4_k_s);
  for (int il = 0; il < 4; ++il) EXPECT_EQ(s[layer(il, "attn_v")], t::q5_k) << "the first four attn_v";
  EXPECT_EQ(s[layer(4, "attn_v")], t::q4_k);
  EXPECT_EQ(s[layer(1, "ffn_down")], t::q5_k) << "layers below n_layer/8";
  EXPECT_EQ(s[layer(2, "ffn_down")], t::q4_k);

  auto q5s = types_of(ts, llama_facts(16), file_type::q5_k_s);
  EXPECT_EQ(q5s[layer(0, "attn_v")], t::q5_k);
  EXPECT_EQ(q5s[layer(0, "ffn_down")], t::q5_k);
  EXPECT_EQ(q5s["output.weight"], t::q6_k);

  // use_more_bits(i, 16): i < 2, i >= 14, (i - 2) % 3 == 2 (4, 7, 10, 13).
  auto q5m = types_of(ts, llama_facts(16), file_type::q5_k_m);
  for (int il : {0, 1, 4, 7, 13, 14, 15}) EXPECT_EQ(q5m[layer(il, "ffn_down")], t::q6_k) << il;
  for (int il : {2, 3, 5, 6}) EXPECT_EQ(q5m[layer(il, "ffn_down")], t::q5_k) << il;
  EXPECT_EQ(q5m[layer(4, "attn_v")], t::q6_k);
  EXPECT_EQ(q5m[layer(3, "attn_v")], t::q5_k);

  auto q6 = types_of(ts, llama_facts(16), file_type::q6_k);
  for (auto& [name, type] : q6) EXPECT_TRUE(type == t::q6_k || type == t::f32) << name;
}

TEST(quantize_plan, q2_k_by_gqa_and_q2_k_s_needs_an_importance_matrix) {
  auto ts = llama_tensors(8, 256, 64, 768);
  auto gqa4 = types_of(ts, llama_facts(8, 8, 2), file_type::q2_k);
  EXPECT_EQ(gqa4[layer(0, "attn_v")], t::q4_k) << "n_gqa >= 4";
  EXPECT_EQ(gqa4[layer(0, "ffn_down")], t::q3_k);
  EXPECT_EQ(gqa4[layer(0, "attn_output")], t::q3_k);
  EXPECT_EQ(gqa4[layer(0, "attn_q")], t::q2_k);
  EXPECT_EQ(gqa4["token_embd.weight"], t::q2_k);
  EXPECT_EQ(gqa4["output.weight"], t::q6_k);
  auto gqa2 = types_of(ts, llama_facts(8, 4, 2), file_type::q2_k);
  EXPECT_EQ(gqa2[layer(0, "attn_v")], t::q3_k);

  auto p = make_plan(ts, llama_facts(8, 4, 2), file_type::q2_k_s);
  ASSERT_TRUE(p);
  for (auto& tp : p->tensors) {
    const bool expect = tp.to == t::q2_k && tp.name != "token_embd.weight";
    EXPECT_EQ(tp.requires_imatrix, expect) << tp.name;
  }
  auto m = types_of(ts, llama_facts(8, 4, 2), file_type::q2_k_s);
  EXPECT_EQ(m[layer(0, "ffn_down")], t::q4_k) << "layers below n_layer/8";
  EXPECT_EQ(m[layer(1, "ffn_down")], t::q2_k);
  EXPECT_EQ(m[layer(1, "attn_v")], t::q2_k) << "n_gqa 2";
  // Q2_K (not _S) never needs one.
  auto q2 = make_plan(ts, llama_facts(8), file_type::q2_k);
  for (auto& tp : q2->tensors) EXPECT_FALSE(tp.requires_imatrix) << tp.name;
}

TEST(quantize_plan, legacy_types_keep_every_matrix_in_the_base_type_and_output_in_q6_k) {
  auto ts = llama_tensors(4, 256, 64, 768);
  for (file_type ft : {file_type::q4_0, file_type::q4_1, file_type::q5_0, file_type::q5_1}) {
    auto m = types_of(ts, llama_facts(4), ft);
    EXPECT_EQ(m["output.weight"], t::q6_k);
    EXPECT_EQ(m["token_embd.weight"], default_type(ft));
    EXPECT_EQ(m[layer(3, "ffn_down")], default_type(ft)) << "no ffn_down rule without an importance matrix";
    EXPECT_EQ(m[layer(3, "attn_v")], default_type(ft));
  }
  auto q8 = types_of(ts, llama_facts(4), file_type::q8_0);
  EXPECT_EQ(q8["output.weight"], t::q8_0);
  EXPECT_EQ(q8[layer(0, "attn_v")], t::q8_0);
}

TEST(quantize_plan, rows_that_are_no_whole_number_of_blocks_fall_back) {
  auto ts = llama_tensors(2, 64, 32, 128);  // rows of 64, 128: not multiples of 256
  auto q4km = make_plan(ts, llama_facts(2), file_type::q4_k_m);
  ASSERT_TRUE(q4km);
  for (auto& tp : q4km->tensors) {
    if (tp.name == layer(0, "attn_q")) {
      EXPECT_EQ(tp.to, t::q5_0);
      EXPECT_TRUE(tp.fell_back);
    }
  }
  auto m = types_of(ts, llama_facts(2), file_type::q4_k_m);
  // use_more_bits(i, 2) is i >= 1.
  EXPECT_EQ(m[layer(1, "ffn_down")], t::q8_0) << "Q6_K (use_more_bits) falls back to Q8_0";
  EXPECT_EQ(m[layer(0, "ffn_down")], t::q5_0);
  EXPECT_EQ(m["output.weight"], t::q8_0) << "64 % 256: the output rule picks Q8_0 itself";
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::q5_k_s)[layer(0, "attn_q")], t::q5_1);
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::q6_k)[layer(0, "attn_q")], t::q8_0);
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::q2_k)[layer(0, "attn_q")], t::q4_0);
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::q3_k_s)[layer(0, "attn_q")], t::q4_0);
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::iq4_xs)[layer(0, "attn_q")], types::iq4_nl);
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::iq2_xxs)[layer(0, "attn_q")], types::iq4_nl);
  // The output rule then the fallback: Q4_0's output is Q6_K, 64 wide -> Q8_0.
  EXPECT_EQ(types_of(ts, llama_facts(2), file_type::q4_0)["output.weight"], t::q8_0);

  // Rows of 48 are no whole number of 32 either: F16.
  auto odd = llama_tensors(2, 48, 48, 96);
  EXPECT_EQ(types_of(odd, llama_facts(2), file_type::q4_k_m)[layer(0, "attn_q")], t::f16);
  EXPECT_EQ(types_of(odd, llama_facts(2), file_type::q8_0)[layer(0, "attn_q")], t::f16);
  EXPECT_EQ(types_of(odd, llama_facts(2), file_type::q4_0)[layer(0, "attn_q")], t::f16);
  EXPECT_EQ(types_of(odd, llama_facts(2), file_type::f16)[layer(0, "attn_q")], t::f16) << "F16 is no block type";
  // ffn_down's rows are 96 wide: Q5_0 divides them.
  EXPECT_EQ(types_of(odd, llama_facts(2), file_type::q4_k_s)[layer(1, "ffn_down")], t::q5_0);
}

TEST(quantize_plan, what_is_never_quantized) {
  std::vector<tensor_desc> ts = {
      tensor("token_embd.weight", {256, 1024}), tensor("output.weight", {256, 1024}),
      tensor("blk.0.attn_norm.weight", {256}), tensor("blk.0.attn_q.bias", {256, 2}),
      tensor("blk.0.attn_q.weight", {256, 256, 1, 1}), tensor("blk.0.ffn_gate_inp.weight", {256, 8}),
      tensor("blk.0.ssm_conv1d.weight", {4, 256}), tensor("position_embd.weight", {256, 512}),
      tensor("blk.0.attn_sinks.weight", {4}), tensor("blk.0.attn_k.weight", {256, 1}),
      tensor("blk.0.attn_q_norm.weight", {32, 4}), tensor("rope_freqs.weight", {64}),
  };
  auto p = make_plan(ts, llama_facts(1), file_type::q4_k_m);
  ASSERT_TRUE(p);
  for (auto& tp : p->tensors) {
    const bool quantized = tp.name == "token_embd.weight" || tp.name == "output.weight" || tp.name == "blk.0.attn_q.weight";
    EXPECT_EQ(tp.to != t::f32, quantized) << tp.name;
    if (tp.name == "blk.0.attn_k.weight") {
      EXPECT_EQ(tp.n_dims, 1) << "a trailing dimension of 1 is dropped, as ggml_n_dims";
    }
    if (tp.name == "blk.0.attn_q.weight") {
      EXPECT_EQ(tp.n_dims, 2);
    }
  }
  // --leave-output-tensor
  options keep;
  keep.quantize_output = false;
  EXPECT_EQ(types_of(ts, llama_facts(1), file_type::q4_k_m, keep)["output.weight"], t::f32);
}

TEST(quantize_plan, float_file_types_convert_every_quantizable_matrix) {
  auto ts = llama_tensors(2, 48, 48, 96);
  auto f16 = types_of(ts, llama_facts(2), file_type::f16);
  EXPECT_EQ(f16["output.weight"], t::f16);
  EXPECT_EQ(f16[layer(0, "attn_v")], t::f16);
  EXPECT_EQ(f16[layer(0, "attn_norm")], t::f32);
  auto bf16 = types_of(ts, llama_facts(2), file_type::bf16);
  EXPECT_EQ(bf16["token_embd.weight"], t::bf16);
  auto f32 = types_of(ts, llama_facts(2), file_type::all_f32);
  EXPECT_EQ(f32["token_embd.weight"], t::f32);
}

TEST(quantize_plan, pure_keeps_the_base_type_everywhere) {
  options pure;
  pure.pure = true;
  auto m = types_of(llama_tensors(4, 256, 64, 768), llama_facts(4), file_type::q4_k_m, pure);
  EXPECT_EQ(m["output.weight"], t::q4_k);
  EXPECT_EQ(m[layer(3, "attn_v")], t::q4_k);
  auto narrow = types_of(llama_tensors(2, 64, 32, 128), llama_facts(2), file_type::q4_k_m, pure);
  EXPECT_EQ(narrow[layer(0, "attn_q")], t::q5_0) << "--pure still falls back";
}

// An 8-expert MoE (Mixtral-like) and a 128-expert one (Qwen3-MoE-like).
std::vector<tensor_desc> moe_tensors(int n_layer, int64_t e, int64_t ff, int64_t n_expert) {
  std::vector<tensor_desc> v = {tensor("token_embd.weight", {e, 1024}), tensor("output.weight", {e, 1024})};
  for (int il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (auto& d : {tensor(p + "attn_q.weight", {e, e}), tensor(p + "attn_k.weight", {e, e / 4}),
                    tensor(p + "attn_v.weight", {e, e / 4}), tensor(p + "attn_output.weight", {e, e}),
                    tensor(p + "ffn_gate_inp.weight", {e, n_expert}), tensor(p + "ffn_gate_exps.weight", {e, ff, n_expert}),
                    tensor(p + "ffn_up_exps.weight", {e, ff, n_expert}), tensor(p + "ffn_down_exps.weight", {ff, e, n_expert}),
                    tensor(p + "ffn_down_shexp.weight", {ff, e})}) {
      v.push_back(d);
    }
  }
  return v;
}

TEST(quantize_plan, mxfp4_moe_puts_experts_in_mxfp4_and_the_rest_in_q8_0) {
  auto m = types_of(moe_tensors(2, 256, 512, 4), llama_facts(2, 8, 2, 4), file_type::mxfp4_moe);
  EXPECT_EQ(m[layer(0, "ffn_gate_exps")], types::mxfp4);
  EXPECT_EQ(m[layer(1, "ffn_down_exps")], types::mxfp4);
  EXPECT_EQ(m[layer(0, "ffn_down_shexp")], t::q8_0) << "2-D";
  EXPECT_EQ(m[layer(0, "attn_v")], t::q8_0);
  EXPECT_EQ(m["output.weight"], t::q8_0);
  EXPECT_EQ(m["token_embd.weight"], t::q8_0);
  EXPECT_EQ(m[layer(0, "ffn_gate_inp")], t::f32) << "the router stays";
}

TEST(quantize_plan, eight_experts_get_q8_0_attention_k_v_and_q5_k_attn_output) {
  auto m = types_of(moe_tensors(4, 256, 512, 8), llama_facts(4, 8, 2, 8), file_type::q4_k_m);
  EXPECT_EQ(m[layer(0, "attn_v")], t::q8_0);
  EXPECT_EQ(m[layer(0, "attn_k")], t::q8_0);
  EXPECT_EQ(m[layer(0, "attn_output")], t::q5_k);
  EXPECT_EQ(m[layer(0, "attn_q")], t::q4_k);
}

TEST(quantize_plan, moe_ffn_down_layers_come_from_the_name_not_a_counter) {
  // Two ffn_down tensors per layer: a counter would run twice as fast.
  // use_more_bits(i, 8): i < 1, i >= 7, (i - 1) % 3 == 2.
  auto m = types_of(moe_tensors(8, 256, 512, 128), llama_facts(8, 8, 2, 128), file_type::q4_k_m);
  for (int il : {0, 3, 6, 7}) {
    EXPECT_EQ(m[layer(il, "ffn_down_exps")], t::q6_k) << il;
    EXPECT_EQ(m[layer(il, "ffn_down_shexp")], t::q6_k) << il;
  }
  for (int il : {1, 2, 4, 5}) EXPECT_EQ(m[layer(il, "ffn_down_exps")], t::q4_k) << il;

  auto bad = moe_tensors(2, 256, 512, 128);
  bad.push_back(tensor("extra.ffn_down.weight", {512, 256}));
  EXPECT_FALSE(make_plan(bad, llama_facts(2, 8, 2, 128), file_type::q4_k_m)) << "an expert tensor outside blk.N is llama's error too";
}

TEST(quantize_plan, fused_qkv_counts_as_attn_v) {
  // phi3: attn_qkv; 3 layers: use_more_bits(i, 3) is i >= 2.
  std::vector<tensor_desc> ts = {tensor("token_embd.weight", {256, 1024}), tensor("output.weight", {256, 1024})};
  for (int il = 0; il < 3; ++il) {
    ts.push_back(tensor(layer(il, "attn_qkv"), {256, 768}));
    ts.push_back(tensor(layer(il, "ffn_up"), {256, 1024}));
    ts.push_back(tensor(layer(il, "ffn_down"), {512, 256}));
  }
  model_facts f = llama_facts(3, 4, 4);
  f.arch = "phi3";
  auto m = types_of(ts, f, file_type::q4_k_m);
  EXPECT_EQ(m[layer(0, "attn_qkv")], t::q4_k);
  EXPECT_EQ(m[layer(2, "attn_qkv")], t::q6_k);
  EXPECT_EQ(types_of(ts, f, file_type::q3_k_m)[layer(0, "attn_qkv")], t::q5_k);
}

TEST(quantize_plan, iq_file_types_plan_as_llama_does) {
  auto ts = llama_tensors(8, 256, 64, 768);
  auto m = types_of(ts, llama_facts(8, 8, 2), file_type::iq2_xxs);
  EXPECT_EQ(m["output.weight"], t::q5_k);
  EXPECT_EQ(m["token_embd.weight"], t::q2_k);
  EXPECT_EQ(m[layer(0, "attn_v")], t::q4_k) << "n_gqa >= 4";
  EXPECT_EQ(m[layer(0, "ffn_down")], t::q2_k) << "the first n_layer/8";
  EXPECT_EQ(m[layer(1, "ffn_down")], types::iq2_xxs);
  EXPECT_EQ(m[layer(1, "attn_q")], types::iq2_xxs);

  auto nl = types_of(ts, llama_facts(8, 8, 2), file_type::iq4_nl);
  EXPECT_EQ(nl[layer(3, "attn_v")], t::q5_k) << "n_gqa >= 4";
  EXPECT_EQ(nl[layer(0, "ffn_down")], t::q5_k) << "the first n_layer/8, without an importance matrix";
  EXPECT_EQ(nl[layer(1, "ffn_down")], types::iq4_nl);
  EXPECT_EQ(nl["output.weight"], t::q6_k);
  EXPECT_EQ(nl["token_embd.weight"], types::iq4_nl);
  auto xs = types_of(ts, llama_facts(8, 4, 2), file_type::iq4_xs);
  EXPECT_EQ(xs[layer(3, "attn_v")], types::iq4_xs) << "n_gqa 2";
}

// With an importance matrix: Q4_0 / Q5_0 guard the first n_layer/8 ffn_down
// with a min (Q4_1 / Q5_1), IQ4_NL / IQ4_XS keep their ffn_down, IQ3_XXS
// keeps IQ3_XXS for attn_v (n_gqa < 4) and ffn_down.
TEST(quantize_plan, an_importance_matrix_changes_the_mixes) {
  auto ts = llama_tensors(8, 256, 128, 768);
  const auto facts = llama_facts(8, 4, 2);  // n_gqa 2
  options with;
  with.has_imatrix = true;
  for (auto [ft, guarded, base] : {std::tuple{file_type::q4_0, t::q4_1, t::q4_0}, std::tuple{file_type::q5_0, t::q5_1, t::q5_0}}) {
    auto m = types_of(ts, facts, ft, with);
    EXPECT_EQ(m[layer(0, "ffn_down")], guarded) << file_type_name(ft);
    EXPECT_EQ(m[layer(1, "ffn_down")], base) << file_type_name(ft);
    EXPECT_EQ(m[layer(0, "ffn_up")], base) << file_type_name(ft);
    EXPECT_EQ(types_of(ts, facts, ft)[layer(0, "ffn_down")], base) << file_type_name(ft) << " without";
  }
  for (file_type ft : {file_type::iq4_nl, file_type::iq4_xs}) {
    EXPECT_EQ(types_of(ts, facts, ft, with)[layer(0, "ffn_down")], default_type(ft)) << file_type_name(ft);
    EXPECT_EQ(types_of(ts, facts, ft)[layer(0, "ffn_down")], t::q5_k) << file_type_name(ft) << " without";
  }
  auto xxs = types_of(ts, facts, file_type::iq3_xxs, with);
  EXPECT_EQ(xxs[layer(2, "attn_v")], types::iq3_xxs);
  EXPECT_EQ(xxs[layer(0, "ffn_down")], types::iq3_xxs);
  auto xxs_without = types_of(ts, facts, file_type::iq3_xxs);
  EXPECT_EQ(xxs_without[layer(2, "attn_v")], types::iq3_s);
  EXPECT_EQ(xxs_without[layer(0, "ffn_down")], t::q4_k);
  EXPECT_EQ(xxs_without[layer(1, "ffn_down")], t::q3_k);
  auto p = make_plan(ts, facts, file_type::q4_0, with);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->has_imatrix);
}

TEST(quantize_plan, model_facts_and_the_70b_rule) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 80);
  w.set_u32("llama.attention.head_count", 64);
  w.set_u32("llama.attention.head_count_kv", 8);
  auto image = w.build();
  auto f = gguf::file::parse(image.data(), image.size(), "70b");
  ASSERT_TRUE(f);
  auto facts = read_model_facts(**f);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->n_gqa(), 8);
  EXPECT_TRUE(facts->is_70b);
  // 70B: attn_v's Q4_K / Q3_K become Q5_K.
  auto ts = llama_tensors(80, 256, 64, 768);
  EXPECT_EQ(types_of(ts, *facts, file_type::q4_k_m)[layer(10, "attn_v")], t::q5_k);
  EXPECT_EQ(types_of(ts, *facts, file_type::q3_k_s)[layer(10, "attn_v")], t::q5_k);
  EXPECT_EQ(types_of(ts, *facts, file_type::q4_k_m)[layer(10, "attn_q")], t::q4_k);

  gguf::writer mha;  // n_head == n_head_kv: llama's 65B, no rule
  mha.set_string("general.architecture", "llama");
  mha.set_u32("llama.block_count", 80);
  mha.set_i32_array("llama.attention.head_count", std::vector<int32_t>(80, 64));
  auto image2 = mha.build();
  auto f2 = gguf::file::parse(image2.data(), image2.size(), "65b");
  auto facts2 = read_model_facts(**f2);
  ASSERT_TRUE(facts2);
  EXPECT_EQ(facts2->n_head, 64) << "layer 0 of a per-layer array";
  EXPECT_EQ(facts2->n_head_kv, 64) << "head_count_kv defaults to head_count";
  EXPECT_FALSE(facts2->is_70b);

  gguf::writer none;
  none.set_string("general.architecture", "llama");
  auto image3 = none.build();
  auto f3 = gguf::file::parse(image3.data(), image3.size(), "none");
  EXPECT_FALSE(read_model_facts(**f3)) << "block_count is required";
}

TEST(quantize_plan, file_type_names_are_llama_quantizes) {
  EXPECT_EQ(parse_file_type("Q4_K_M"), file_type::q4_k_m);
  EXPECT_EQ(parse_file_type("q4_k_m"), file_type::q4_k_m);
  EXPECT_EQ(parse_file_type("Q4_K"), file_type::q4_k_m);
  EXPECT_EQ(parse_file_type("Q3_K"), file_type::q3_k_m);
  EXPECT_EQ(parse_file_type("q5_k"), file_type::q5_k_m);
  EXPECT_EQ(parse_file_type("MXFP4_MOE"), file_type::mxfp4_moe);
  EXPECT_EQ(parse_file_type("15"), file_type::q4_k_m);
  EXPECT_EQ(parse_file_type("7"), file_type::q8_0);
  EXPECT_FALSE(parse_file_type("Q4_K_X"));
  EXPECT_FALSE(parse_file_type("5")) << "a removed file type";
  EXPECT_FALSE(parse_file_type(""));
  EXPECT_STREQ(file_type_name(file_type::q4_k_m), "Q4_K_M");
  EXPECT_STREQ(file_type_name(file_type::q3_k_m), "Q3_K_M");
  EXPECT_EQ(static_cast<uint32_t>(file_type::q4_k_m), 15u) << "the general.file_type number";
  EXPECT_EQ(default_type(file_type::iq2_s), types::iq2_xs) << "IQ2_S files are mostly iq2_xs";
  EXPECT_EQ(type_name(t::q4_k), "q4_K");
  EXPECT_EQ(type_name(types::iq4_nl), "iq4_nl");
  EXPECT_EQ(type_block_size(types::mxfp4), 32);
}

}  // namespace
}  // namespace cortex::quantize
