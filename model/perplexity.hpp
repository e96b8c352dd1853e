// Perplexity as llama.cpp's llama-perplexity computes it (its default mode):
// the text's tokens (with BOS) are cut into windows of n_ctx tokens, each
// window's first token is replaced by BOS (when the vocabulary adds one),
// each window is run from an empty cache, and the second half of each window
// is scored: PPL = exp(mean over scored positions of -log p(next token)).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/kv_type.hpp"
#include "kernels/thread_pool.hpp"
#include "model/model.hpp"

namespace cortex {

struct perplexity_result {
  double ppl = 0;
  long n_scored = 0;   // positions scored
  int n_windows = 0;
};

// ids: the tokenized text (BOS first). progress(window, n_windows, running ppl)
// after each window. REQUIRES: n_ctx >= 8, ids.size() >= n_ctx.
perplexity_result windowed_perplexity(const model& m, kernels::thread_pool& pool, const std::vector<int32_t>& ids,
                                      int n_ctx, kernels::kv_type kv,
                                      const std::function<void(int, int, double)>& progress = {});

}  // namespace cortex
