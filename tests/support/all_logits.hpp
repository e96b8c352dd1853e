// Every logits row of a token sequence fed from position 0 in one prefill,
// on a fresh single_sequence (f32 K/V, 2 threads): the comparison the model
// tests make between two files or two loaders of the same weights.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"

namespace cortex::testing {

// tokens (n,) -> n rows of n_vocab logits. REQUIRES: n <= 64.
inline std::vector<std::vector<float>> all_logits(const model& m, const std::vector<int32_t>& tokens) {
  kernels::thread_pool pool(2);
  single_sequence seq(m, pool, 64, kernels::kv_type::f32);
  const int rows = seq.feed(tokens, logits_mode::all);
  std::vector<std::vector<float>> out;
  for (int r = 0; r < rows; ++r) out.emplace_back(seq.logits(r), seq.logits(r) + m.hparams().n_vocab);
  return out;
}

}  // namespace cortex::testing
