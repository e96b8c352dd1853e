// A sequence as the scheduler sees it: token ids and progress, no text.
// Plain data, copied freely across the scheduler's API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/scheduler/prompt_lookup.hpp"
#include "actors/scheduler/draft_governor.hpp"
#include "messages/engine.hpp"   // sequence_admission
#include "messages/request.hpp"  // finish_reason: the vocabulary sessions report
#include "base/status.hpp"

namespace cortex {

enum class seq_state : uint8_t {
  waiting,    // never ran; holds no blocks
  running,    // admitted; holds blocks for [0, n_tokens_computed) at least
  preempted,  // waiting again after losing its blocks; recomputes all its tokens
  finished,   // terminal; holds no blocks
};

const char* to_string(seq_state s);

// Why the scheduler itself ends a sequence with finish_reason::error.
constexpr const char* seq_error_kv_capacity = "the sequence needs more KV blocks than the pool holds";
constexpr const char* seq_error_step_failed = "the executor failed the step";
constexpr const char* seq_error_no_token = "the executor returned no token for the sequence";

// What a new request brings to the scheduler.
struct seq_request {
  request_id rid = 0;
  int32_t priority = 0;              // higher runs first
  std::vector<int32_t> tokens_prompt;  // REQUIRES: non-empty
  int32_t max_tokens = 1;            // tokens to generate at most (>= 1)
  bool embed = false;                // prefill only (see sequence::embed)
  spec_config spec;                  // speculative decoding; off by default
};

// The scheduler's view of an admitted request. Speculative decoding follows
// the request's own settings, else `default_spec`; it is off for embeddings,
// for requests of at most one token, and for recurrent models (`recurrent`:
// drafts would advance their state past tokens that may be rejected).
seq_request seq_request_of(const sequence_admission& a, const spec_config& default_spec, bool recurrent);

struct sequence {
  request_id rid = 0;
  int32_t priority = 0;
  uint64_t arrival = 0;             // admission order among equal priorities (lower first)
  uint64_t step_arrived = 0;        // scheduler step at which it arrived (for aging)
  std::vector<int32_t> tokens;      // prompt then generated: every known token
  int32_t n_tokens_prompt = 0;
  int32_t n_tokens_computed = 0;    // tokens whose K/V are in its blocks
  int32_t n_tokens_cached = 0;      // of those, served by the prefix cache at its last admission
  int32_t max_tokens = 1;
  int32_t n_preemptions = 0;
  seq_state state = seq_state::waiting;
  // Prefill only (an embedding): finishes with stop once its prompt is
  // computed and the executor answered for it; never takes prefix-cache
  // hits, because the executor must see every prompt token's hidden state.
  bool embed = false;
  spec_config spec;                 // speculative decoding by prompt lookup
  draft_record spec_record;         // its acceptance so far: how much to draft (draft_governor)
  int32_t n_tokens_drafted = 0;     // draft tokens verified so far
  int32_t n_tokens_accepted = 0;    // of which accepted

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_tokens_generated() const { return n_tokens() - n_tokens_prompt; }
  int32_t n_tokens_uncomputed() const { return n_tokens() - n_tokens_computed; }
};

// A sequence's terminal record, handed to whoever tells its session.
// The scheduler itself ends sequences with length (max_tokens), stop (the
// sampled token was flagged finished), error (`error` says why); anything
// else comes from finish().
struct seq_finished {
  request_id rid = 0;
  finish_reason reason = finish_reason::stop;
  status error;  // for reason == error: a seq_error_* text; context_overflow for kv_capacity, else internal
  int32_t n_tokens_prompt = 0;
  int32_t n_tokens_generated = 0;
  int32_t n_tokens_cached = 0;
  int32_t n_preemptions = 0;
  int32_t n_tokens_drafted = 0;   // speculative decoding
  int32_t n_tokens_accepted = 0;
};

}  // namespace cortex
