// Token sampler: turns one row of logits into the next token id.
//
// The chain follows llama.cpp's common sampler order:
//   penalties -> logit bias -> top_k -> top_p -> min_p -> temperature -> draw
// with temperature <= 0 meaning greedy argmax (ties -> lowest id).
//
// Each sampler owns its RNG, so the same seed, parameters, logits and history
// give the same tokens whatever other sequences are doing.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace cortex {

struct sampling_params {
  float temperature = 1.0f;   // <= 0: greedy
  int top_k = 0;              // keep the k highest logits; <= 0: off
  float top_p = 1.0f;         // keep the smallest prefix with mass >= top_p; >= 1: off
  float min_p = 0.0f;         // keep tokens with p >= min_p * p_max; <= 0: off
  float repetition_penalty = 1.0f;  // logit > 0: divided by it, else multiplied
  float presence_penalty = 0.0f;    // subtracted once from tokens seen in the window
  float frequency_penalty = 0.0f;   // subtracted once per occurrence in the window
  int penalty_last_n = 64;    // window: last n ids of history; 0: no penalties; -1: all
  std::optional<uint64_t> seed;  // absent: seeded from std::random_device
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logit; <= -100 bans
  int n_logprobs = 0;         // how many top alternatives to report
};

struct sampled_token {
  int32_t id;
  // log p(id) under the full-vocabulary distribution softmax(logits after
  // penalties and logit bias), i.e. BEFORE top_k/top_p/min_p truncation and
  // BEFORE temperature. This is defined for greedy decoding too, never -inf
  // for the chosen token, and comparable across sampling settings.
  float logprob;
  // The n_logprobs most likely ids under that same distribution, with their
  // log-probabilities, most likely first (ties: lower id first).
  std::vector<std::pair<int32_t, float>> top;
};

// Not thread-safe: one sampler per sequence, used by one thread at a time.
class sampler {
 public:
  // REQUIRES (checked by intake, not here): temperature, top_p, min_p,
  // penalties finite; 0 < top_p; repetition_penalty > 0; penalty_last_n >= -1;
  // n_logprobs >= 0; logit_bias ids may be out of range (they are ignored).
  explicit sampler(const sampling_params& p);

  // logits (n_vocab,); history: prompt + generated ids so far (penalties use
  // the last penalty_last_n of them; ids outside [0, n_vocab) are ignored).
  // REQUIRES: n_vocab > 0 and at least one token not banned by logit_bias.
  // allowed: null, or a bitset of (n_vocab + 63) / 64 words (bit id set =
  // the token may be drawn: a grammar's mask, grammar/token_mask.hpp),
  // applied after penalties and logit bias as a ban of the rest, so the
  // logprobs are those of the masked distribution. REQUIRES then: at
  // least one allowed token that logit_bias does not ban.
  sampled_token sample(const float* logits, int n_vocab, const std::vector<int32_t>& history,
                       const uint64_t* allowed = nullptr);

  // Speculative verification of a drafted token `draft` at this position
  // (prompt-lookup decoding): the same pipeline as sample() (penalties on
  // `history`, bias, mask, truncation, temperature), then the standard
  // rejection rule for a deterministic (one-hot) draft: greedy accepts iff
  // the argmax is the draft (and returns the argmax either way); sampling
  // accepts with probability p(draft) and otherwise draws from p with the
  // draft's mass removed and the rest renormalized. Either way the returned
  // id is distributed exactly as sample()'s. `accepted` says whether the
  // returned id is the draft. Same REQUIRES as sample().
  sampled_token verify(const float* logits, int n_vocab, const std::vector<int32_t>& history,
                       const uint64_t* allowed, int32_t draft, bool& accepted);

 private:
  struct candidate {
    float logit;
    int32_t id;
  };

  // Best first: higher logit, then lower id.
  static bool ranks_before(const candidate& a, const candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
  void apply_penalties(int n_vocab, const std::vector<int32_t>& history);
  void apply_logit_bias(int n_vocab);
  void select_best(size_t k);      // candidates_ = the k best, sorted
  void apply_top_p_sorted();       // truncates sorted candidates_ to top_p
  void select_top_p(int n_vocab);  // candidates_ = the top_p nucleus of logits_
  // logits_ = logits after penalties, bias and mask; candidates_ = the
  // truncation's survivors (sampling only). Returns log Z of logits_.
  float prepare(const float* logits, int n_vocab, const std::vector<int32_t>& history, const uint64_t* allowed);
  int32_t argmax(int n_vocab) const;
  void fill_top(sampled_token& out, float log_z);
  void candidate_probs();  // probs_ = softmax(candidates_ logits / T)
  // Inverse CDF over probs_ with u in [0, mass), skipping index `skip`.
  int32_t draw_from(double u, size_t skip);
  int32_t draw();  // from candidates_, after truncation and temperature
  // Uniform double in [0, 1) from the sampler's own generator.
  double uniform();

  sampling_params params_;
  std::mt19937_64 rng_;
  std::vector<float> logits_;           // (n_vocab,) working copy
  std::vector<candidate> candidates_;   // surviving tokens
  std::vector<float> probs_;            // (candidates_.size(),) in draw() and top-p
  std::vector<float> work_;             // (n_vocab,) selection / probabilities
  std::vector<uint32_t> boundary_;      // top-p: ids in the bucket where it ends
  std::vector<int32_t> window_;         // penalty window, sorted
};

}  // namespace cortex
