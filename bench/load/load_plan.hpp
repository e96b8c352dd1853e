// The load definition shared by both modes (wire and in-process): which
// requests are sent, with which prompt and output length, and when.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cortex::load {

struct load_spec {
  int streams = 16;          // concurrent clients (closed loop) / sockets (Poisson)
  int requests = 0;          // measured requests; 0 = `streams`
  int prompt_tokens = 128;   // exact prompt length in token ids
  int output_tokens = 64;    // max_tokens with ignore_eos: every request generates exactly this many
  double rate = 0;           // Poisson arrivals per second; 0 = closed loop
  uint64_t seed = 1;
  int warmup = 0;            // requests run (and discarded) before the measured window
  double timeout_s = 300;    // abort when no event arrives for this long
};

// One request of the plan. Ids are unique over warmup and measured phases,
// so the prefix cache never serves a measured prompt from a warmup one
// (random prompts share no prefix either, beyond chance).
struct planned_request {
  int index = 0;                 // position in the plan; the wire/sink id is its decimal form
  bool warmup = false;
  int stream = 0;                // the client (socket) that sends it
  std::vector<int32_t> tokens;   // (prompt_tokens,) ids in [lo, n_vocab)
  int max_tokens = 0;
  double arrival_s = 0;          // Poisson: offset from the phase start; closed loop: unused
};

// Builds warmup (first) then measured requests. Prompt ids are uniform in
// [259, n_vocab) (past the byte and special tokens of llama-style vocabs),
// or [0, n_vocab) for vocabularies too small for that. Deterministic in
// spec.seed and n_vocab, so both modes send identical prompts.
std::vector<planned_request> make_plan(const load_spec& spec, int n_vocab);

}  // namespace cortex::load
