#include "model/perplexity.hpp"

#include <algorithm>
#include <cmath>

#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

perplexity_result windowed_perplexity(const model& m, kernels::thread_pool& pool, const std::vector<int32_t>& ids,
                                      int n_ctx, kernels::kv_type kv,
                                      const std::function<void(int, int, double)>& progress) {
  perplexity_result r;
  r.n_windows = static_cast<int>(ids.size()) / n_ctx;
  const auto& tok = m.tokenizer();
  single_sequence seq(m, pool, n_ctx, kv);
  const int n_vocab = m.hparams().n_vocab;
  const int first = n_ctx / 2;
  double nll = 0;
  for (int c = 0; c < r.n_windows; ++c) {
    std::vector<int32_t> window(ids.begin() + static_cast<long>(c) * n_ctx, ids.begin() + static_cast<long>(c + 1) * n_ctx);
    if (tok.add_bos()) window[0] = tok.bos_id();
    seq.reset();
    seq.feed(window, logits_mode::all);
    for (int j = first; j < n_ctx - 1; ++j) {
      const float* lg = seq.logits(j);
      const float mx = *std::max_element(lg, lg + n_vocab);
      double sum = 0;
      for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(lg[v]) - mx);
      const int32_t next = ids[static_cast<size_t>(c) * n_ctx + j + 1];
      nll += -(static_cast<double>(lg[next]) - mx - std::log(sum));
      ++r.n_scored;
    }
    if (progress) progress(c + 1, r.n_windows, std::exp(nll / static_cast<double>(r.n_scored)));
  }
  r.ppl = r.n_scored > 0 ? std::exp(nll / static_cast<double>(r.n_scored)) : 0;
  return r;
}

}  // namespace cortex
