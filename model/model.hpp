// A loaded Llama-family model: hyper-parameters and weight views into the
// memory-mapped GGUF file (the file stays the source of truth; only small
// vectors such as norms and biases are converted to f32 copies).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.hpp"
#include "model/expected.hpp"
#include "model/gguf.hpp"

namespace cortex {

class tokenizer;

enum class model_arch { llama, qwen2 };
const char* arch_name(model_arch a);

struct model_hparams {
  model_arch arch = model_arch::llama;
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;       // d_model
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;     // n_embd / n_head
  int n_ff = 0;
  int n_rot = 0;        // rotated dims per head
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  // Linear RoPE scaling: 1 / GGUF rope.scaling.factor (or 1 / rope.scale_linear); 1 for none.
  float rope_freq_scale = 1.0f;
  bool rope_neox = false;  // qwen2 rotates (i, i + n_rot/2) pairs
  int n_embd_kv() const { return n_head_kv * head_dim; }
};

struct layer_weights {
  std::vector<float> attn_norm;          // (n_embd,)
  kernels::weight_view wq, wk, wv, wo;   // wq (n_head*hd, n_embd), wk/wv (n_head_kv*hd, n_embd), wo (n_embd, n_head*hd)
  std::vector<float> bq, bk, bv;         // qwen2 only: (n_head*hd,), (n_head_kv*hd,) x2
  std::vector<float> ffn_norm;           // (n_embd,)
  kernels::weight_view w_gate, w_up;     // (n_ff, n_embd)
  kernels::weight_view w_down;           // (n_embd, n_ff)
};

struct model_weights {
  kernels::weight_view token_embd;  // (n_vocab, n_embd), rows dequantized on lookup
  std::vector<float> output_norm;   // (n_embd,)
  kernels::weight_view output;      // (n_vocab, n_embd); token_embd when tied
  // (n_rot/2,) Llama 3.1's RoPE frequency divisors (rope_freqs.weight, its
  // "llama3" rope scaling baked in by the converter); empty when the file has none.
  std::vector<float> rope_freqs;
  std::vector<layer_weights> layers;
};

class model {
 public:
  // Loads and validates a GGUF model (architecture, hyper-parameters,
  // every tensor's presence, type and shape, and the tokenizer). Errors say
  // which key or tensor is wrong.
  static expected<std::unique_ptr<model>> load(const std::string& path);
  // Loads only the metadata and the tokenizer (llama.cpp's vocab_only): for
  // vocabulary-only GGUF files (no tensors) and tools that only tokenize or
  // render chat templates. hparams() has just n_vocab (and arch when known),
  // weights() is empty: such a model must not be given to a forward pass.
  static expected<std::unique_ptr<model>> load_vocab_only(const std::string& path);
  bool is_vocab_only() const { return vocab_only_; }
  ~model();

  const model_hparams& hparams() const { return hp_; }
  const model_weights& weights() const { return w_; }
  const gguf::file& file() const { return *file_; }
  const cortex::tokenizer& tokenizer() const { return *tok_; }
  std::string name() const;
  // Total bytes of the weights that one decode step streams (every matrix
  // once, embeddings one row); used for bandwidth efficiency figures.
  size_t bytes_per_token() const;
  // Predominant matrix type, as llama.cpp names file types (e.g. "q4_0").
  std::string quant_name() const;
  uint64_t n_params() const;

 private:
  model() = default;
  std::unique_ptr<gguf::file> file_;
  model_hparams hp_;
  model_weights w_;
  std::unique_ptr<cortex::tokenizer> tok_;
  bool vocab_only_ = false;
};

}  // namespace cortex
