// Synthetic models: real published shapes with seeded random weights,
// quantized by our own quantizers (kernels/quant.hpp's quantize_row_fast:
// the k-quants without their scale searches, so an 8B Q4_K_M takes minutes,
// not an hour), with either a small SentencePiece-style
// vocabulary or, for the 7-8B shapes, a real one of the right size read
// from a vocabulary-only GGUF (../shared/golden/tokenizer/vocab), so
// benchmarks and demos run at real sizes with no download. Their output is
// random text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/expected.hpp"
#include "model/model.hpp"

namespace cortex {

struct synthetic_shape {
  std::string name;
  std::string arch = "llama";  // general.architecture, one of the registry's
  int n_vocab, n_ctx, n_embd, n_layer, n_head, n_head_kv, n_ff;
  float rope_freq_base, rms_eps;
  bool tied_embeddings;
  // Empty: the built-in SentencePiece vocabulary (filler tokens up to
  // n_vocab). Else the X of a vocabulary file ggml-vocab-X.gguf whose
  // tokenizer.* keys are copied, its token list padded to n_vocab with
  // unused "[PADi]" tokens as llama.cpp's converter pads Qwen2.5's.
  std::string vocab = {};
  // Llama 3.1's "llama3" RoPE scaling (factor 8, low/high frequency factors
  // 1 and 4, original context 8192), written as rope_freqs.weight the way
  // llama.cpp's converter bakes it into the file.
  bool llama3_rope = false;
  // What the newer families add (0: none / the default).
  int head_dim = 0;            // attention.key_length when n_embd / n_head is not it
  int n_rot = 0;               // rope.dimension_count for partial rotary
  int sliding_window = 0;      // attention.sliding_window
  float rope_freq_base_swa = 0.0f;  // rope.freq_base_swa (windowed layers)
  float rope_scale_linear = 0.0f;   // rope.scaling.type linear with this factor
  // Mixture of experts (qwen3moe, gpt-oss): experts per layer, used per
  // token, and an expert's hidden width (0: a dense FFN).
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // Gated delta-net layers (qwen35): ssm.conv_kernel, ssm.state_size (key
  // head dim), ssm.group_count (key heads), ssm.time_step_rank (value
  // heads, of state_size each), one full-attention layer every
  // full_attention_interval (0: none of this).
  int ssm_conv = 0, ssm_state = 0, ssm_groups = 0, ssm_v_heads = 0, full_attention_interval = 0;
  // rope.dimension_sections (Qwen3.5's multimodal rope; pairs per section,
  // summing to n_rot / 2; text positions make it plain neox). All 0: not written.
  int rope_sections[4] = {0, 0, 0, 0};
  // YaRN: rope.scaling.type yarn with this factor over this trained context.
  float yarn_factor = 0.0f;
  int yarn_orig_ctx = 0;
  // Encoders (bert family): pooling_type as the file states it (-1: not an
  // encoder; rms_eps is then the LayerNorm epsilon), the token type count,
  // and a real vocabulary cut to its first n_vocab tokens (tiny test models).
  int pooling_type = -1;
  int n_token_types = 2;
  bool truncate_vocab = false;
  int head_dim_or_default() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
};

// The (head_dim/2,) rope_freqs.weight divisors of Llama 3.1's published
// rope_scaling (Meta's formula: wavelengths shorter than 8192/4 keep 1,
// longer than 8192/1 get 8, a smooth blend between).
std::vector<float> llama3_rope_factors(int head_dim, float freq_base);

// Named shapes: tinyllama-1.1b, qwen2.5-0.5b, llama-3.2-1b, tiny, and the
// published shapes of llama-3.1-8b, qwen2.5-7b, mistral-7b (v0.1), qwen3-8b,
// qwen3-4b, gemma3-4b, gemma3-12b, phi4-mini, smollm3-3b, and the
// mixtures of experts qwen3-30b-a3b and gpt-oss-20b, and the hybrid
// qwen3.5-9b; the encoders tiny-bert, tiny-bert-rerank, tiny-nomic-bert,
// bge-small and bge-base.

const std::vector<synthetic_shape>& synthetic_shapes();
const synthetic_shape* find_synthetic_shape(const std::string& name);

// File types as llama-quantize names them: f32, f16, q8_0, q4_0, q4_k_m,
// mxfp4_moe (expert tensors MXFP4, every other matrix Q8_0: how gpt-oss
// ships).
const std::vector<std::string>& synthetic_file_types();

// Where ggml-vocab-X.gguf files are looked for when no folder is given:
// the golden vocabularies beside a checkout, relative to the working directory.
extern const char* const default_vocab_dir;

// Writes the model, one tensor in memory at a time (generated and quantized
// on n_threads threads, then written); `progress(done, total)` is called
// after each tensor. A shape with a real vocabulary reads it from
// vocab_dir ("" = default_vocab_dir); errors name the file to provide.
status write_synthetic_model(const synthetic_shape& shape, const std::string& file_type, uint64_t seed,
                             const std::string& path, int n_threads, const std::string& vocab_dir = "",
                             const std::function<void(int, int)>& progress = {});

}  // namespace cortex
