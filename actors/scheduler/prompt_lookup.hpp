// Prompt-lookup drafting (speculative decoding without a draft model): the
// last `ngram` tokens of a sequence's history are searched for earlier in
// that history, and the tokens that followed the most recent earlier match
// are proposed as the draft. The executor verifies drafts in the step's
// forward pass (actors/executor/step_runner.hpp). Plain functions, no CAF.
#pragma once

#include <cstdint>
#include <vector>

namespace cortex {

// Per-request speculation settings (request_params::spec_*); off when
// max_draft == 0.
struct spec_config {
  int32_t ngram = 0;      // n-gram length matched (>= 1 when on)
  int32_t max_draft = 0;  // tokens proposed at most; 0: off
  bool on() const { return ngram > 0 && max_draft > 0; }
};

// Up to max_draft tokens following the most recent earlier occurrence of
// the last `ngram` tokens of `tokens` (an occurrence ending before the last
// token, so at least one token follows it). Empty when the history is
// shorter than ngram + 1, there is no match, or the settings are off.
// O(tokens.size() * ngram) worst case.
std::vector<int32_t> prompt_lookup_draft(const std::vector<int32_t>& tokens, const spec_config& cfg);

}  // namespace cortex
