// The blocks every architecture's layer is written with (model/arch/): norm,
// linear, rope, attention driven by the layer's layer_attention, a gated FFN
// with its activation, and the residual add. A blocks object owns the step's
// activations and the layers' (repacked) linear groups; the forward pass
// (model/forward.hpp) runs the embedding, then each layer's arch function on
// it, then the logits.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/float_panels.hpp"
#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/thread_pool.hpp"
#include "model/kv_arena.hpp"
#include "model/model.hpp"

namespace cortex {

enum class logits_mode : uint8_t { none, last, all };

// One sequence's share of a step: the model's borrowed view of the
// executor's step_entry (messages/engine.hpp; same names for tokens, pos0,
// block_table). Pointers are borrowed for the call.
struct batch_seq {
  const int32_t* tokens = nullptr;      // (n_tokens,) ids < n_vocab
  int32_t n_tokens = 0;                 // tokens to compute this step (>= 1)
  int32_t pos0 = 0;                     // position of tokens[0]; K/V of [0, pos0) already in the arena
  const int32_t* block_table = nullptr; // block ids covering positions [0, pos0 + n_tokens)
  int32_t n_blocks = 0;                 // entries in block_table
  logits_mode logits = logits_mode::last;  // rows run() writes; the executor asks for `last` exactly when the entry samples
  // Optional (n_embd,) accumulator, borrowed: when set, run() adds the sum of
  // this step's tokens' final hidden rows (after the output norm, llama.cpp's
  // result_norm) into it, so a caller can mean-pool a sequence whose prompt
  // spans several steps (model/embedding.hpp). Null (the generation path)
  // costs nothing.
  float* hidden_sum = nullptr;
  // (n_groups,) each K/V group's table, of n_blocks entries like block_table, when the arena
  // has several groups (model/kv_groups.hpp; a windowed group's entries
  // before its window may be kv_block_released); null: block_table serves
  // every layer.
  const int32_t* const* group_tables = nullptr;
  // (hp.state_floats(),) the sequence's recurrent state (model/delta_net.cpp),
  // borrowed; run() zeroes it when pos0 == 0 and carries it from step to
  // step. REQUIRED when the model has recurrent layers; else unused.
  float* state = nullptr;
  // Encoders (hp.encoder.enabled), which compute no logits: (n,) borrowed,
  // where run() writes what `pooling` makes of the sequence's final hidden
  // rows, not normalised (n = pooled_size(hp, pooling, n_tokens)): every row
  // (n_tokens, n_embd) for none, (n_embd,) for mean / cls / last, and
  // (n_cls_out,) scores for rank. REQUIRED for an encoder, whose attention
  // sees the whole input: the sequence's whole input is in this step
  // (pos0 == 0), and it keeps no K/V.
  float* embd = nullptr;
  pooling_kind pooling = pooling_kind::mean;
  const int32_t* table(int group) const { return group_tables ? group_tables[group] : block_table; }
};

// Floats batch_seq::embd receives for `pooling` of n_tokens tokens.
inline int pooled_size(const model_hparams& hp, pooling_kind pooling, int n_tokens) {
  switch (pooling) {
    case pooling_kind::none: return n_tokens * hp.n_embd;
    case pooling_kind::rank: return hp.encoder.n_cls_out;
    default: return hp.n_embd;
  }
}

// Linear layers sharing one input (q/k/v, gate/up, or a single matrix):
// units run in order; a packed unit covers parts [first, first + n).
struct linear_unit {
  kernels::packed_matrix packed;           // empty: run `panels`, else `view` with matmul
  kernels::float_panels panels;            // an encoder's float weights (n == 1)
  const kernels::weight_view* view = nullptr;
  int first = 0, n = 1;
};
struct linear_group {
  std::vector<linear_unit> units;
};

// Where the CPU has packed kernels (kernels/matmul_packed.hpp), runs of
// parts whose type has a packed layout are repacked into a copy the group
// owns, and the mapped originals leave the resident set. With all_prefill
// (an encoder: no step of it is a decode step whose outputs must agree with
// a prefill's), float parts (f32, f16, bf16) become float panels
// (kernels/float_panels.hpp) where the CPU has their kernel.
linear_group make_linear_group(const std::vector<const kernels::weight_view*>& parts, kernels::thread_pool& pool,
                               const gguf::file& f, bool all_prefill = false);

class blocks {
 public:
  // n_ctx_seq: the context one sequence may reach (picks LongRoPE's long or
  // short factors as llama.cpp does); 0: the model's training context.
  blocks(const model& m, kernels::thread_pool& pool, int n_ctx_seq = 0);

  // Sets up a step of n_tokens tokens over `batch` (the activations grow to
  // the largest step seen, then never allocate).
  void begin_step(const std::vector<batch_seq>& batch, kv_arena& kv, int n_tokens);

  const model_hparams& hp() const { return m_.hparams(); }
  const layer_weights& weights(int il) const { return m_.weights().layers[static_cast<size_t>(il)]; }
  const model_weights& model_weights_of() const { return m_.weights(); }
  int n_tokens() const { return n_tokens_; }
  float* x() { return x_.data(); }      // (T, n_embd) the residual stream
  float* xn() { return xn_.data(); }    // (T, n_embd) a normed copy, the blocks' input
  float* out() { return tmp_.data(); }  // (T, n_embd) a block's output
  // (T, n_embd) each: rows a layer keeps aside while it runs other blocks
  // (Gemma 4: its dense FFN's output and its router's input). Sized with the
  // step when the model has experts; else empty.
  float* side() { return side_.data(); }
  float* router_input() { return router_in_.data(); }

  // out (T, n_embd) = rmsnorm(in) * w per token; in may alias out.
  void norm(const float* in, const std::vector<float>& w, float* out);
  // out = rmsnorm(in) * factor * w per token; in may alias out.
  void norm_scaled(const float* in, const std::vector<float>& w, float factor, float* out);
  // out() += in (T, n_embd).
  void add_to_out(const float* in);
  // y (T, b.size()) += b per token (nothing when b is empty).
  void add_bias(float* y, const std::vector<float>& b);
  // Self-attention of layer il on xn(), into out(): q/k/v projections (with
  // biases where the layer has them), per-head q/k norms where it has them,
  // rope as hp().attn[il] says, this step's K/V into the arena, attention
  // with the layer's scale, softcap and window, then the output projection.
  void attention(int il);
  // The gated FFN of layer il on xn(), into out(): down(act(gate x) * up x);
  // for a mixture-of-experts model (hp().moe), the same for each token's
  // chosen experts, weighed (model/moe_ffn.cpp).
  void ffn(int il, ffn_activation act);
  // The dense gated FFN of layer il on xn(), into out(), also in a model
  // with experts (Gemma 4 runs it beside them).
  void ffn_dense(int il, ffn_activation act);
  // The experts of layer il on xn(), into out(), routed on router_in (T,
  // n_embd) instead of xn() (Gemma 4 routes on its own norm of the residual
  // stream); each expert's output times its down_exps_s where the layer has
  // them, then times its weight.
  void experts(int il, ffn_activation act, const float* router_in);
  // The gated delta net of recurrent layer il on xn(), into out(): conv1d
  // + SiLU over the fused q/k/v projection, L2-normed q and k, per value
  // head the decayed delta-rule update of the sequence's state and its
  // read-out, the gated RMS norm, the output projection
  // (model/delta_net.cpp).
  void delta_net(int il);
  // x += residual_scale * out().
  void residual();
  // Per-layer token embeddings (model_weights::per_layer_*; Gemma 4), once a
  // step on the scaled token embeddings in x(): for each token,
  // ple = (rmsnorm_P(per_layer_model_proj · x / sqrt(n_embd), per_layer_proj_norm)
  //        + per_layer_token_embd[token] · sqrt(P)) / sqrt(2), viewed as (n_layer, P).
  void per_layer_inputs();
  // Layer il's share of them: x += rmsnorm(per_layer_proj · (gelu(per_layer_inp_gate · x) * ple[il]),
  // per_layer_post_norm).
  void per_layer_input(int il);
  // x *= the layer's out_scale, where it has one.
  void scale_output(int il);

  // Encoders (model/encoder_blocks.cpp). x += row (n_embd,) for every token.
  void add_to_every_token(const float* row);
  // x += table's row of each token's position (its sequence's pos0 + i):
  // absolute position embeddings, table (n_positions, n_embd).
  // REQUIRES: every position < n_positions.
  void add_position_rows(const std::vector<float>& table);
  // out (T, n_embd) = LayerNorm(in) * w + b per token, with
  // hp().encoder.norm_eps; b empty: no bias. in may alias out.
  void layer_norm(const float* in, const std::vector<float>& w, const std::vector<float>& b, float* out);
  // xn = x: a post-norm layer's blocks read the residual stream itself.
  void copy_to_input();
  // A post-norm layer's residual, a token at a time while its rows are in
  // L1: out += out_bias (empty: none), x += residual_scale * out,
  // x = LayerNorm(x) * w + b, xn = x. The same operations, in the same
  // order, as add_bias, residual, layer_norm and copy_to_input one after
  // the other over all tokens.
  void residual_layer_norm(const std::vector<float>& out_bias, const std::vector<float>& w, const std::vector<float>& b);
  // The sequential FFN of an encoder layer on xn(), into out():
  // down(gelu(up xn + b_up)), GELU as ggml computes it
  // (kernels::gelu_fp16_table), b_up where the layer has it; b_down is the
  // caller's (residual_layer_norm adds it).
  void ffn_sequential(int il);

  void run_group(const linear_group& g, const float* x, int n_tokens, float* const* ys);

 private:
  struct layer_linears {
    linear_group qkv, wo, gate_up, down;
    linear_group per_layer_gate, per_layer_proj;       // per-layer embeddings
    linear_group router;                               // MoE: ffn_gate_inp
    std::vector<linear_group> exp_gate_up, exp_down;   // MoE: per expert
  };
  void moe_ffn(int il, ffn_activation act, const float* router_in);
  // out() += sigmoid(x . ffn_gate_inp_shexp) * down(act(gate x) * up x), the dense FFN weights being the shared expert.
  void shared_expert(int il, ffn_activation act);
  // One sequence's tokens of a delta-net layer: conv and recurrence over its state.
  void delta_net_conv(int il, const batch_seq& s, int first);
  void delta_net_head(int il, const batch_seq& s, int first, int v_head);
  // The router: each token's chosen experts (moe_sel_) and weights (moe_w_).
  void moe_route(int il, const float* router_in);
  void activate(float* gate, const float* up, int n, ffn_activation act);
  void ensure_capacity(int n_tokens);
  void rope_qk(int il);
  // qg_ -> q_ and q_gate_ (layer_attention::q_gate), heads of hd.
  void split_query_gate(int hd);
  void head_norm(float* x, int n_heads, int hd, const std::vector<float>& w);
  void head_norm_unweighted(float* x, int n_heads, int hd);
  void attend(int il);
  // Encoders: every query of a sequence attends all of that sequence's keys
  // (batch_seq::embd), read from this step's K/V rows, not from the arena.
  void attend_bidirectional(int il);
  // Splits the step's attention into pool tasks (attn_tasks_): per
  // sequence, KV head and 32-query tile, and over key parts
  // (kernels::attention_part_keys, n_key_parts_) when sequences x KV heads
  // are fewer than the threads in a small step.
  void plan_attention(int il, int window);
  // f(t0, t1) over the step's tokens [0, n_tokens()): one range per thread
  // when the step is large enough to pay for the pool's wake-up, else one
  // range. For per-token work only (norms, biases, activations, residuals),
  // whose results do not depend on the split.
  template <class F>
  void for_token_ranges(F&& f) {
    const int n = pool_.size();
    if (n == 1 || n_tokens_ < 64) {
      f(0, n_tokens_);
      return;
    }
    pool_.parallel_for(n, [&](int task, int) { f(n_tokens_ * task / n, n_tokens_ * (task + 1) / n); });
  }
  // attn_ (and lse_ when with_lse) = the fold of the key parts' outputs.
  void merge_key_parts(int il, bool with_lse);
  // Attention sinks (gpt-oss): attn_ rows rescaled for one more logit per
  // head in the softmax's denominator.
  void apply_sinks(int il, const std::vector<float>& sink_logits);

  const model& m_;
  kernels::thread_pool& pool_;
  const float* rope_factors_ = nullptr;  // (n_rot/2,) or null
  kernels::matmul_scratch mm_scratch_;
  std::vector<layer_linears> linears_;  // (n_layer,)
  linear_group per_layer_model_proj_;   // per-layer embeddings' projection of the token embedding
  const std::vector<batch_seq>* batch_ = nullptr;
  kv_arena* kv_ = nullptr;
  int n_tokens_ = 0;
  int capacity_tokens_ = 0;
  // Per-step activations; T = tokens in the step. Widths are the widest
  // layer's (layers may differ: model_hparams::n_embd_q(il)); a layer's rows
  // are packed at its own width.
  std::vector<float> x_;      // (T, n_embd) residual stream
  std::vector<float> xn_;     // (T, n_embd) normed input
  std::vector<float> q_;      // (T, n_head*hd)
  std::vector<float> k_;      // (T, n_kv*hd)
  std::vector<float> v_;      // (T, n_kv*hd)
  std::vector<float> attn_;   // (T, n_head*hd)
  std::vector<float> gate_;   // (T, n_ff)
  std::vector<float> up_;     // (T, n_ff)
  std::vector<float> tmp_;    // (T, n_embd)
  std::vector<float> side_, router_in_;  // (T, n_embd) when hp().moe
  std::vector<float> ple_;       // (T, n_layer, P) per-layer inputs of the step's tokens
  std::vector<float> ple_gate_;  // (T, P)
  std::vector<float> ones_;      // (head_dim,) the weight of an unweighted RMS norm
  // MoE (hp().moe), K = n_used: router logits (T, n_expert), each token's
  // chosen experts and weights (T, K), the tokens of each expert as (t*K + k)
  // slots, the gathered inputs (T, n_embd), and each slot's expert output
  // (T*K, n_embd) summed per token in slot order as llama.cpp does.
  // Attention with a query gate (layer_attention::q_gate): the [q; gate]
  // projection (T, 2 * n_head * hd) and the gates (T, n_head * hd).
  std::vector<float> qg_, q_gate_;
  // Delta net (hp().delta_net), V = value_dim, H = n_v_heads: the projected
  // [q; k; v] before and after the conv (T, conv_channels), z (T, V), beta
  // and alpha (T, H), the heads' outputs (T, V); each layer's offset in a
  // sequence's state.
  std::vector<float> dn_mixed_, dn_conv_, dn_z_, dn_beta_, dn_alpha_, dn_out_;
  std::vector<size_t> state_offset_;
  std::vector<float> moe_logits_;
  std::vector<int32_t> moe_sel_;
  std::vector<int32_t> moe_order_;  // (n_expert,) the router's ranking scratch
  std::vector<float> moe_w_;
  std::vector<std::vector<int32_t>> moe_slots_;
  std::vector<float> moe_x_;
  std::vector<float> moe_out_;
  std::vector<int32_t> seq_first_;  // (n_seqs,) index of each sequence's first token in the step
  struct attn_task {
    int seq, kv_head;
    int q_begin, q_end;  // the sequence's queries [q_begin, q_end) of this step
    int part;            // -1: all keys, written to attn_; else key part `part` alone, to its buffers
  };
  // Steps of at most this many tokens may split keys across tasks (their
  // part buffers stay small), into at most this many parts.
  static constexpr int k_split_max_tokens = 64;
  static constexpr int k_split_max_parts = 64;
  std::vector<attn_task> attn_tasks_;
  int n_key_parts_ = 1;
  std::vector<float> part_out_;  // (n_key_parts, T, n_head*hd) outputs of the key parts
  std::vector<float> part_lse_;  // (n_key_parts, T, n_head) their log-sum-exp (-inf: no key)
  std::vector<const float*> part_outs_, part_lses_;  // merge_key_parts' part pointers
  std::vector<float> lse_;       // (capacity T, n_head) the whole rows' log-sum-exp, for sinks
  std::vector<int32_t> identity_table_;  // 0, 1, 2, ...: a step's own K/V rows as an arena of contiguous blocks
  std::vector<float> alibi_slopes_;      // (n_head,) for hp().encoder.alibi_max_bias > 0, else empty
};

// y (n_tokens, b.size()) += b per row; nothing when b is empty (a bias the
// layer does not have).
void add_bias_rows(float* y, const std::vector<float>& b, int n_tokens);

// The two layer shapes of today's dense families, for their arch files:
// pre-norm (llama): x += attn(norm(x)); x += ffn(norm(x)).
void pre_norm_layer(blocks& b, int il, ffn_activation act);
// Sandwich (gemma): x += post_norm(attn(norm(x))); x += post_norm(ffn(norm(x))).
void sandwich_norm_layer(blocks& b, int il, ffn_activation act);
// Its first half: x += post_attn_norm(attention(attn_norm(x))).
void sandwich_attention(blocks& b, int il);

}  // namespace cortex
