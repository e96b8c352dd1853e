// A model's hyper-parameters as the forward pass uses them: sizes, and one
// attention spec per layer. Each architecture file (model/arch/<name>.cpp)
// fills them from its own GGUF keys; nothing here names an architecture.
#pragma once

#include <string>
#include <vector>

namespace cortex {

// How a layer rotates q and k.
//   normal: pairs (2i, 2i+1)          (GGUF llama, granite, smollm3)
//   neox:   pairs (i, i + n_rot/2)    (qwen2/3, gemma, phi3)
//   none:   no rotation at all (NoPE layers of smollm3)
enum class rope_kind : unsigned char { normal, neox, none };

// What one layer's attention does; the blocks read only this, so an
// architecture's quirks (softcaps, windows, local rope bases, NoPE, query
// scales) are data, not branches.
struct layer_attention {
  float scale = 1.0f;           // scores = (q . k) * scale
  float softcap = 0.0f;         // 0: none; else scores = c * tanh(scores / c)
  int window = 0;               // 0: full causal; else keys p' with p - p' < window
  rope_kind rope = rope_kind::normal;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f; // linear scaling: positions * rope_freq_scale
  bool rope_factors = true;     // apply the model's rope factors (rope_freqs or LongRoPE's), when it has them
  float rope_attn_factor = 1.0f;  // cos and sin * this (LongRoPE's rope.scaling.attn_factor)
  // YaRN (rope.scaling.type yarn; kernels/ops.hpp): the blend of
  // interpolated and extrapolated angles between the pairs that make
  // yarn_beta_fast and yarn_beta_slow turns over model_hparams::n_ctx_orig
  // positions; yarn_ext_factor 0: none. rope_attn_factor then holds
  // llama.cpp's yarn_attn_factor.
  float yarn_ext_factor = 0.0f;
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;
  // The query projection gives [q; gate] per head and the attention output
  // is multiplied by sigmoid(gate) before the output projection (Qwen3.5's
  // full-attention layers).
  bool q_gate = false;
  // The layer mixes tokens with a gated delta net (model_hparams::delta_net)
  // and a recurrent state, not attention (Qwen3.5's linear-attention layers).
  bool recurrent = false;
  // The layer's own sizes where they differ between layers (Gemma 4's
  // sliding and full layers); 0: the model's (model_hparams::head_dim_of
  // and friends resolve them, so every reader sees one value per layer).
  int head_dim = 0;   // key and value length of one head
  int n_head_kv = 0;
  int n_rot = 0;      // rotated dims of a head
  // KV sharing: -1, the layer computes and stores its own K and V; else the
  // earlier layer whose cache it reads, computing no K/V and holding no K/V
  // memory of its own (the two layers' windows are equal).
  int kv_source = -1;
  bool v_norm = false;  // V rows RMS-normalised per head, without a weight, before they are stored
  // An encoder layer's sliding window (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC:
  // ModernBERT's local layers): 0, every position of the input; else the
  // query at p attends the positions p' with |p - p'| <= window_symmetric / 2.
  // An encoder keeps no K/V, so unlike `window` it is no memory kind
  // (model/kv_groups.hpp).
  int window_symmetric = 0;
};

// The activation of a gated FFN, down(act(gate x) * up x), as the blocks
// run it (model/blocks.hpp):
//   silu: SwiGLU; gelu_tanh: GeGLU; swiglu_oai: gpt-oss's clamped SwiGLU,
//   min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1);
//   gelu_fp16: GeGLU with the GELU of llama.cpp's CPU backend
//   (kernels::gelu_fp16_table), as its encoders' ggml_geglu computes it.
enum class ffn_activation : unsigned char { silu, gelu_tanh, swiglu_oai, gelu_fp16 };

// A gated delta net's sizes (Qwen3.5, llama.cpp's ssm.* keys): a causal
// depthwise conv1d of conv_kernel taps over the fused [q; k; v] projection,
// n_k_heads query/key heads of head_k_dim, n_v_heads value heads of
// head_v_dim (value head h reads key head h % n_k_heads), and per sequence
// and recurrent layer a state of conv_kernel - 1 past inputs and one
// (head_k_dim x head_v_dim) matrix per value head.
struct delta_net_spec {
  int conv_kernel = 0;   // ssm.conv_kernel; 0: no recurrent layers
  int head_k_dim = 0;    // ssm.state_size
  int n_k_heads = 0;     // ssm.group_count
  int n_v_heads = 0;     // ssm.time_step_rank
  int head_v_dim = 0;    // ssm.inner_size / n_v_heads
  int conv_channels() const { return 2 * n_k_heads * head_k_dim + n_v_heads * head_v_dim; }
  int value_dim() const { return n_v_heads * head_v_dim; }
  size_t conv_state_floats() const { return static_cast<size_t>(conv_kernel - 1) * conv_channels(); }
  size_t matrix_state_floats() const { return static_cast<size_t>(n_v_heads) * head_k_dim * head_v_dim; }
  size_t layer_state_floats() const { return conv_state_floats() + matrix_state_floats(); }
};

// How a mixture-of-experts layer picks and weighs its experts (llama.cpp's
// build_moe_ffn with the file's gating function).
//   softmax:        probabilities = softmax(router logits); the top n_used
//                   by probability, weighed by their probabilities (qwen3moe)
//   softmax_weight: the top n_used by logit, weighed by the softmax of just
//                   their logits (gpt-oss)
enum class moe_gating : unsigned char { softmax, softmax_weight };

struct moe_spec {
  int n_expert = 0;        // experts per layer; 0: a dense FFN
  int n_used = 0;          // experts each token runs
  int n_ff_exp = 0;        // an expert's hidden width
  moe_gating gating = moe_gating::softmax;
  bool norm_weights = false;  // the chosen weights / their sum (at least 2^-14, as llama.cpp clamps it)
  float weights_scale = 1.0f; // then * this
  bool enabled() const { return n_expert > 0; }
};

// What an encoder's final hidden rows become (<arch>.pooling_type, with
// llama.cpp's numbers):
//   none (0): one row per token; mean (1): their mean; cls (2): the first
//   token's row; last (3): the last token's row; rank (4): the first token's
//   row through the classifier head, n_cls_out scores (rerankers).
enum class pooling_kind : unsigned char { none = 0, mean = 1, cls = 2, last = 3, rank = 4 };

// Encoders (BERT family): attention sees the whole input at once, so an
// input is computed in one step and leaves no K/V behind; the model embeds
// (or scores) and does not generate.
struct encoder_spec {
  bool enabled = false;
  pooling_kind pooling = pooling_kind::none;  // the file's; a caller may ask for another
  int n_token_types = 0;   // rows of token_types.weight (tokenizer.ggml.token_type_count)
  int n_cls_out = 1;       // rank: scores per input (classifier.output_labels, else 1)
  float norm_eps = 1e-12f; // attention.layer_norm_epsilon of every LayerNorm
  // > 0: ALiBi instead of position embeddings (jina-bert-v2): head h's
  // scores get -slope_h * |query position - key position|, the slopes
  // ggml's for this maximum bias (kernels::alibi_slopes).
  float alibi_max_bias = 0.0f;
  // The gated FFN's activation where the file chooses it (modern-bert's
  // hidden_activation: GeGLU, or SwiGLU for granite-embedding R2).
  ffn_activation gated_act = ffn_activation::gelu_fp16;
  // Rank pooling's classifier head (model_weights::cls...) reads the first
  // row through tanh (the bert family); with these, the mean of the rows
  // (rank_reads_mean) and GELU (rank_gelu, ggml's half-precision table), as
  // llama.cpp's head for modern-bert.
  bool rank_reads_mean = false;
  bool rank_gelu = false;
};

struct model_hparams {
  std::string arch;     // general.architecture, as the registry names it
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;       // d_model
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;     // key_length, else n_embd / n_head
  int n_ff = 0;
  int n_rot = 0;        // rotated dims per head (partial rotary when < head_dim)
  float rms_eps = 1e-5f;
  // The global rope settings as the file states them (what `cortex inspect`
  // prints); layers may differ (layer_attention).
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  bool rope_neox = false;
  // rope.scaling.original_context_length. LongRoPE (phi3): the factors are
  // the long ones when the context per sequence exceeds this, as llama.cpp
  // picks them; 0 when the file has none. YaRN: the trained context
  // (n_ctx_train when the key is absent).
  int n_ctx_orig = 0;
  // Scales that some families put around the layers (1 / 0: none).
  float embd_scale = 1.0f;       // token embeddings * embd_scale
  float residual_scale = 1.0f;   // x += residual_scale * block output
  float logit_scale = 1.0f;      // logits * logit_scale
  float final_softcap = 0.0f;    // logits = c * tanh(logits / c)
  std::vector<layer_attention> attn;  // (n_layer,)
  moe_spec moe;                       // every layer's FFN is a mixture of experts when enabled
  delta_net_spec delta_net;           // the recurrent layers' sizes (attn[l].recurrent)
  encoder_spec encoder;               // enabled: an embedding/reranking model (bert family)
  // What the loader's caller should log about this file (parts not run...).
  std::vector<std::string> notes;

  // Floats of one sequence's recurrent state: every recurrent layer's conv
  // window and delta-rule matrices (0 without recurrent layers).
  size_t state_floats() const {
    size_t n = 0;
    for (const auto& a : attn) n += a.recurrent ? delta_net.layer_state_floats() : 0;
    return n;
  }

  // Per-layer FFN widths where the file gives an array (feed_forward_length
  // as an array, llama.cpp's get_key_or_arr); empty: every layer n_ff.
  std::vector<int> n_ff_layer;
  // Per-layer token embeddings (Gemma 4): each layer's input width P; 0: none.
  int n_embd_per_layer = 0;

  int n_embd_q() const { return n_head * head_dim; }
  int n_embd_kv() const { return n_head_kv * head_dim; }

  // Layer il's sizes: its layer_attention's where set, else the model's.
  int head_dim_of(int il) const { return pick(il, &layer_attention::head_dim, head_dim); }
  int n_head_kv_of(int il) const { return pick(il, &layer_attention::n_head_kv, n_head_kv); }
  int n_rot_of(int il) const { return pick(il, &layer_attention::n_rot, n_rot); }
  int n_embd_q(int il) const { return n_head * head_dim_of(il); }
  int n_embd_kv(int il) const { return n_head_kv_of(il) * head_dim_of(il); }
  int n_ff_of(int il) const {
    return static_cast<size_t>(il) < n_ff_layer.size() && n_ff_layer[static_cast<size_t>(il)] > 0
               ? n_ff_layer[static_cast<size_t>(il)] : n_ff;
  }
  // The layer whose K/V cache layer il reads: itself unless it shares.
  int kv_layer_of(int il) const {
    return static_cast<size_t>(il) < attn.size() && attn[static_cast<size_t>(il)].kv_source >= 0
               ? attn[static_cast<size_t>(il)].kv_source : il;
  }
  bool has_own_kv(int il) const { return kv_layer_of(il) == il; }
  // Whether layer il needs K/V memory: it attends (not a recurrent layer)
  // and does not read another layer's cache.
  bool holds_kv(int il) const {
    return has_own_kv(il) && !(static_cast<size_t>(il) < attn.size() && attn[static_cast<size_t>(il)].recurrent);
  }
  // The largest of the layers' widths (per-step buffers).
  int max_n_embd_q() const { return max_over([&](int il) { return n_embd_q(il); }); }
  int max_n_embd_kv() const { return max_over([&](int il) { return n_embd_kv(il); }); }
  int max_n_ff() const { return max_over([&](int il) { return n_ff_of(il); }); }

 private:
  int pick(int il, int layer_attention::*f, int model_value) const {
    if (static_cast<size_t>(il) >= attn.size()) return model_value;
    const int v = attn[static_cast<size_t>(il)].*f;
    return v > 0 ? v : model_value;
  }
  template <class F>
  int max_over(F f) const {
    int m = 0;
    for (int il = 0; il < n_layer; ++il) m = f(il) > m ? f(il) : m;
    return m;
  }
};

}  // namespace cortex
