// Reads an architecture's hyper-parameters from GGUF metadata: keys are
// "<arch>.<key>", as llama.cpp's converter writes them. Errors name the key.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "model/hparams.hpp"

namespace cortex {

class hparam_reader {
 public:
  hparam_reader(const gguf::file& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  const gguf::file& file() const { return f_; }
  const std::string& arch() const { return arch_; }
  std::string key(const std::string& k) const { return arch_ + "." + k; }

  // A positive integer (at most 2^30); required keys fail when absent.
  status u32(const std::string& k, int& out, bool required = true) const;
  // A finite float; absent keys leave out unchanged.
  status f32(const std::string& k, float& out, bool required = false) const;
  std::optional<std::string> str(const std::string& k) const;
  // A positive integer, or an array of one per layer (llama.cpp's
  // get_key_or_arr): per_layer gets the array (left empty for a scalar) and
  // out the largest value. REQUIRES: n_layer > 0.
  status u32_or_array(const std::string& k, int n_layer, int& out, std::vector<int>& per_layer, bool required = true) const;
  bool has(const std::string& k) const { return f_.find(key(k)) != nullptr; }

  // The keys every architecture shares: context, sizes, heads (head_dim from
  // attention.key_length, else n_embd / n_head), rope dimension count and
  // base, linear rope scaling, RMS epsilon; then one layer_attention per
  // layer with scale 1/sqrt(head_dim), the given rope kind and the global
  // rope settings. YaRN as llama.cpp sets it up. Refuses rope scaling types
  // other than none, linear and yarn unless allow_scaling names the type.
  status read_common(model_hparams& hp, rope_kind rope, const char* allow_scaling = nullptr) const;
  // A mixture of experts' sizes: expert_count, expert_used_count (at most
  // the count), expert_feed_forward_length, and expert_weights_scale where
  // present; the gating and weight normalisation are the architecture's.
  status read_moe(model_hparams& hp, moe_gating gating, bool norm_weights) const;

 private:
  status read_yarn(model_hparams& hp, layer_attention& a) const;
  const gguf::file& f_;
  std::string arch_;
};

}  // namespace cortex
