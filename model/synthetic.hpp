// Synthetic models: real Llama/Qwen2 shapes with seeded random weights,
// quantized by our own quantizers, plus a small SentencePiece-style
// vocabulary, so benchmarks and demos run at real sizes with no download.
// Their output is random text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/expected.hpp"
#include "model/model.hpp"

namespace cortex {

struct synthetic_shape {
  std::string name;
  model_arch arch = model_arch::llama;
  int n_vocab, n_ctx, n_embd, n_layer, n_head, n_head_kv, n_ff;
  float rope_freq_base, rms_eps;
  bool tied_embeddings;
};

// Named shapes: tinyllama-1.1b, qwen2.5-0.5b, llama-3.2-1b, tiny.
const std::vector<synthetic_shape>& synthetic_shapes();
const synthetic_shape* find_synthetic_shape(const std::string& name);

// File types as llama-quantize names them: f32, f16, q8_0, q4_0, q4_k_m.
const std::vector<std::string>& synthetic_file_types();

// Writes the model; `progress(done, total)` is called after each tensor.
status write_synthetic_model(const synthetic_shape& shape, const std::string& file_type, uint64_t seed,
                             const std::string& path, int n_threads,
                             const std::function<void(int, int)>& progress = {});

}  // namespace cortex
