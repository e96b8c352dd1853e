// A loaded model's weights: views into the memory-mapped GGUF file for the
// matrices, f32 copies of the small vectors (norms, biases). Which of them a
// model has is decided by its architecture's tensor table
// (model/tensor_table.hpp); a vector left empty or a view left without data
// is a tensor the architecture does not use, and the blocks skip it.
#pragma once

#include <vector>

#include "kernels/matmul.hpp"

namespace cortex {

struct layer_weights {
  std::vector<float> attn_norm;          // (n_embd,)
  std::vector<float> attn_q_norm;        // (head_dim,) per-head RMS norm of q before rope (qwen3, gemma3)
  std::vector<float> attn_k_norm;        // (head_dim,)
  kernels::weight_view wq, wk, wv, wo;   // wq (n_head*hd, n_embd), wk/wv (n_head_kv*hd, n_embd), wo (n_embd, n_head*hd)
  std::vector<float> bq, bk, bv, bo;     // (n_head*hd,), (n_head_kv*hd,) x2, (n_embd,)
  std::vector<float> attn_sinks;         // (n_head,) gpt-oss: one extra softmax logit per head, no value
  std::vector<float> post_attn_norm;     // (n_embd,) on the attention output before the residual add (gemma)
  std::vector<float> ffn_norm;           // (n_embd,)
  kernels::weight_view w_gate, w_up;     // (n_ff, n_embd)
  kernels::weight_view w_down;           // (n_embd, n_ff)
  std::vector<float> post_ffn_norm;      // (n_embd,) on the FFN output before the residual add (gemma)
  // Mixture of experts (hp.moe): the router and one 2-D view per expert of
  // the 3-D ffn_{gate,up,down}_exps tensors; biases where the file has them.
  kernels::weight_view ffn_gate_inp;                 // (n_expert, n_embd)
  std::vector<float> ffn_gate_inp_b;                 // (n_expert,)
  std::vector<kernels::weight_view> gate_exps, up_exps;  // n_expert x (n_ff_exp, n_embd)
  std::vector<kernels::weight_view> down_exps;       // n_expert x (n_embd, n_ff_exp)
  std::vector<float> gate_exps_b, up_exps_b;         // (n_expert * n_ff_exp,)
  std::vector<float> down_exps_b;                    // (n_expert * n_embd,)
  // A shared expert beside the routed ones (qwen35moe): w_gate / w_up /
  // w_down hold it, and its output is scaled by sigmoid(x . this) per token.
  std::vector<float> ffn_gate_inp_shexp;             // (n_embd,)
  // Gemma 4's experts beside its dense FFN (model/arch/gemma4.cpp): the
  // router's input scale, each expert's output scale, and the norms before
  // the experts and after the dense FFN and the experts.
  std::vector<float> ffn_gate_inp_s;                 // (n_embd,)
  std::vector<float> down_exps_s;                    // (n_expert,)
  std::vector<float> ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2;  // (n_embd,)
  // Gated delta net (hp.attn[l].recurrent, hp.delta_net): the fused [q; k; v]
  // input projection, the output gate z, beta and alpha (decay) per value
  // head, the depthwise conv, the decay's bias and -exp(A_log), the gated
  // norm and the output projection.
  kernels::weight_view ssm_qkv;            // (conv_channels, n_embd)
  kernels::weight_view ssm_gate;           // (value_dim, n_embd)
  kernels::weight_view ssm_beta, ssm_alpha;  // (n_v_heads, n_embd)
  kernels::weight_view ssm_out;            // (n_embd, value_dim)
  std::vector<float> ssm_conv1d;           // (conv_channels * conv_kernel,) channel-major
  std::vector<float> ssm_dt_b, ssm_a;      // (n_v_heads,)
  std::vector<float> ssm_norm;             // (head_v_dim,)
  // Per-layer token embeddings (Gemma 4): x += rmsnorm(per_layer_proj ·
  // (gelu(per_layer_inp_gate · x) * ple_l), per_layer_post_norm).
  kernels::weight_view per_layer_inp_gate;  // (n_embd_per_layer, n_embd)
  kernels::weight_view per_layer_proj;      // (n_embd, n_embd_per_layer)
  std::vector<float> per_layer_post_norm;   // (n_embd,)
  std::vector<float> out_scale;             // (1,) the layer's output * this (layer_output_scale)
  // Post-norm encoders (bert): the FFN's biases, and LayerNorm weight and
  // bias after the attention's residual add and after the FFN's.
  std::vector<float> b_up;                  // (n_ff,)
  std::vector<float> b_down;                // (n_embd,)
  std::vector<float> attn_out_norm, attn_out_norm_b;    // (n_embd,)
  std::vector<float> layer_out_norm, layer_out_norm_b;  // (n_embd,)
};

struct model_weights {
  kernels::weight_view token_embd;  // (n_vocab, n_embd), rows dequantized on lookup
  std::vector<float> output_norm;   // (n_embd,)
  kernels::weight_view output;      // (n_vocab, n_embd); token_embd when tied
  // (n_rot/2,) RoPE frequency divisors (rope_freqs.weight: Llama 3.1's
  // "llama3" scaling baked in by the converter); empty when the file has none.
  std::vector<float> rope_freqs;
  // (n_rot/2,) LongRoPE's divisors for contexts beyond rope.scaling.
  // original_context_length (long) and within it (short); empty without.
  std::vector<float> rope_long, rope_short;
  // Per-layer token embeddings (Gemma 4; P = n_embd_per_layer): a lookup
  // table of n_layer * P per token, and the projection of the scaled token
  // embedding to the same, normed per layer with per_layer_proj_norm (P,).
  kernels::weight_view per_layer_token_embd;   // (n_vocab, n_layer * P), rows dequantized on lookup
  kernels::weight_view per_layer_model_proj;   // (n_layer * P, n_embd)
  std::vector<float> per_layer_proj_norm;      // (P,)
  // Encoders (hp.encoder): absolute position and token-type embeddings
  // (f32 copies, row-major), the LayerNorm of the embedded input, and a
  // reranker's classifier head (rank pooling): scores = cls_out ·
  // cls_norm(tanh(cls · h + cls_b)) + cls_out_b, cls_norm a LayerNorm
  // without bias where the file has it (modern-bert; GELU for tanh there,
  // encoder_spec::rank_gelu).
  std::vector<float> pos_embd;                // (n_ctx_train, n_embd)
  std::vector<float> type_embd;               // (n_token_types, n_embd)
  std::vector<float> embd_norm, embd_norm_b;  // (n_embd,)
  kernels::weight_view cls;                   // (n_embd, n_embd)
  std::vector<float> cls_b;                   // (n_embd,)
  std::vector<float> cls_norm;                // (n_embd,)
  kernels::weight_view cls_out;               // (n_cls_out, n_embd)
  std::vector<float> cls_out_b;               // (n_cls_out,)
  std::vector<layer_weights> layers;
};

// The linear layers of a layer, grouped by the input they share; what the
// forward pass repacks and runs together. Matrices a layer lacks are left out.
struct layer_matrices {
  // qkv: a delta-net layer's ssm_qkv, ssm_gate, ssm_beta, ssm_alpha; wo: its ssm_out.
  std::vector<const kernels::weight_view*> qkv, wo, gate_up, down;
  std::vector<const kernels::weight_view*> per_layer_gate, per_layer_proj;  // per-layer embeddings' (Gemma 4)
};
layer_matrices matrices_of(const layer_weights& L);

// Every matrix a decode step streams, once each (layers in order, then the
// output), with the token embedding's single row counted apart: the one
// visitor behind bytes-per-token, the predominant type and the roofline.
// fn(view, share): share is the fraction of the matrix one token reads on
// average: 1, or n_used / n_expert for an expert's matrices (a token runs
// n_used of them; the router is read whole).
template <class Fn>
void for_each_matrix(const model_weights& w, int n_expert_used, Fn&& fn) {
  for (const auto& L : w.layers) {
    const layer_matrices m = matrices_of(L);
    for (const auto* group : {&m.qkv, &m.wo, &m.gate_up, &m.down, &m.per_layer_gate, &m.per_layer_proj}) {
      for (const auto* v : *group) fn(*v, 1.0);
    }
    if (L.ffn_gate_inp.data != nullptr) fn(L.ffn_gate_inp, 1.0);
    const double share = L.gate_exps.empty() ? 0.0 : static_cast<double>(n_expert_used) / L.gate_exps.size();
    for (const auto* experts : {&L.gate_exps, &L.up_exps, &L.down_exps}) {
      for (const auto& v : *experts) fn(v, share);
    }
  }
  if (w.per_layer_model_proj.data != nullptr) fn(w.per_layer_model_proj, 1.0);
  fn(w.output, 1.0);
}

}  // namespace cortex
