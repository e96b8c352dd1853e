// A loaded model: its architecture (model/arch.hpp), hyper-parameters and
// weight views into the memory-mapped GGUF file (the file stays the source of truth; only small
// vectors such as norms and biases are converted to f32 copies).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.hpp"
#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

namespace cortex {

class tokenizer;
struct arch_def;

class model {
 public:
  // Loads and validates a GGUF model (architecture, hyper-parameters,
  // every tensor's presence, type and shape, and the tokenizer). Errors say
  // which key or tensor is wrong; a tensor type without a matrix kernel is
  // refused here, naming the tensor, never left to crash a request.
  static expected<std::unique_ptr<model>> load(const std::string& path);
  // Loads only the metadata and the tokenizer (llama.cpp's vocab_only): for
  // vocabulary-only GGUF files (no tensors) and tools that only tokenize or
  // render chat templates. hparams() has just n_vocab and arch,
  // weights() is empty: such a model must not be given to a forward pass.
  static expected<std::unique_ptr<model>> load_vocab_only(const std::string& path);
  bool is_vocab_only() const { return vocab_only_; }
  ~model();

  const model_hparams& hparams() const { return hp_; }
  // REQUIRES: !is_vocab_only().
  const arch_def& arch() const { return *arch_; }
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
  const arch_def* arch_ = nullptr;
  model_hparams hp_;
  model_weights w_;
  std::unique_ptr<cortex::tokenizer> tok_;
  bool vocab_only_ = false;
};

}  // namespace cortex
