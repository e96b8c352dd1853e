// The architecture registry. Each file model/arch/<name>.cpp defines one
// arch_def and owns its architecture completely: the GGUF keys it reads, its
// tensor table and its layer, written with the shared blocks
// (model/blocks.hpp). The registry (model/arch_registry.cpp) maps
// general.architecture to it; no other code branches on the architecture.
#pragma once

#include <string>
#include <vector>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "model/hparams.hpp"
#include "model/tensor_table.hpp"
#include "model/weights.hpp"

namespace cortex {

class blocks;
class hparam_reader;

struct arch_def {
  const char* name;  // general.architecture
  // Reads the hyper-parameters after the common ones (hparam_reader::read_common
  // has filled sizes, eps, rope and one default layer_attention per layer).
  status (*read_hparams)(hparam_reader& r, model_hparams& hp);
  // Declares every tensor of a file of this architecture with these
  // hyper-parameters, bound to w (w.layers already has n_layer entries).
  void (*tensors)(const model_hparams& hp, model_weights& w, tensor_table& t);
  // Runs layer il of a step: b.x() holds the residual stream in and out.
  void (*layer)(blocks& b, int il);
  // Optional: runs once a step after the token embedding (b.x() holds the
  // scaled embeddings), before the layers: inputs the layers take besides
  // the residual stream (Gemma 4's per-layer embeddings).
  void (*step_inputs)(blocks& b) = nullptr;
};

// The definition for general.architecture `name`, or nullptr.
const arch_def* find_arch(const std::string& name);
// "llama, qwen2, ..." for error messages.
std::string supported_archs();

}  // namespace cortex
