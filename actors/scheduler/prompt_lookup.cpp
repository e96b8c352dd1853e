#include "actors/scheduler/prompt_lookup.hpp"

#include <algorithm>

namespace cortex {

std::vector<int32_t> prompt_lookup_draft(const std::vector<int32_t>& tokens, const spec_config& cfg) {
  std::vector<int32_t> draft;
  if (!cfg.on()) return draft;
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t g = cfg.ngram;
  if (n < g + 1) return draft;
  const int32_t* tail = tokens.data() + (n - g);
  // Candidate starts i: the match tokens[i, i + g) ends at i + g <= n - 1,
  // so tokens[i + g] exists. Most recent first.
  for (int64_t i = n - g - 1; i >= 0; --i) {
    if (!std::equal(tail, tail + g, tokens.data() + i)) continue;
    const int64_t from = i + g;
    const int64_t to = std::min(n, from + cfg.max_draft);
    draft.assign(tokens.begin() + from, tokens.begin() + to);
    return draft;
  }
  return draft;
}

}  // namespace cortex
