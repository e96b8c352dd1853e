// Checks a submitted generation_request against the model and the request
// limits, tokenizes its prompt and resolves what the executor needs. CAF-free;
// the intake actor calls it once per submit.
//
// Error codes (protocol.md): 400 invalid_param for out-of-range or
// inconsistent values and token ids >= n_vocab; 413 too_large for too many
// stop strings or logit bias entries, over-long stop strings or id; 422
// context_overflow when the prompt leaves no room to generate. Every message
// names the field and says what to fix. Nothing here throws.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "messages/errors.hpp"
#include "messages/request.hpp"
#include "actors/intake/chat_setup.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

// What an encoder gives for an input, by its file's pooling type: one pooled
// vector (mean, cls, last), one vector per token (none), or a score (rank:
// a reranker).
enum class encoder_output : uint8_t { pooled_vector, per_token, score };

struct validation_limits {
  int32_t n_ctx = 0;                  // context length of the model (positions)
  int32_t n_vocab = 0;                // token ids must be < n_vocab
  uint32_t max_stop_strings = 16;     // protocol.md
  uint32_t max_stop_bytes = 256;      // per stop string
  uint32_t max_logit_bias = 1024;     // entries
  uint32_t max_id_bytes = 64;         // client id
  uint32_t max_logprobs = 20;         // top entries per token
  // Encoders (hp.encoder): the model only embeds. Generation requests are
  // refused (400 invalid_param), a text is framed with the vocabulary's
  // special tokens ([CLS] text [SEP] for WordPiece, as llama.cpp tokenizes
  // it), and the file's pooling must give one vector per input (not none;
  // rank scores pairs). n_ctx is then what one step computes whole.
  bool embeds_only = false;
  encoder_output output = encoder_output::pooled_vector;
  std::string model_name;             // for the messages
};

// What a valid request turns into.
struct validated_request {
  std::vector<int32_t> tokens_prompt;  // token ids, BOS included when added; 1..n_ctx-1 of them
  uint32_t max_tokens = 0;      // params.max_tokens capped to n_ctx - tokens_prompt.size(); >= 1
  // params.seed, or a random one chosen here, so that the request can be
  // replayed from its logs. The executor builds its sampler from
  // request_params + this seed (to_sampling_params in actors/executor).
  uint64_t seed = 0;
  // Chat requests: the template's end-of-turn tokens, which end generation
  // like params.stop_token_ids (intake appends them there).
  std::vector<int32_t> chat_stop_ids;
  // The request's grammar (GBNF): params.grammar, or the one made from
  // params.json_schema; checked to compile. Empty: unconstrained.
  std::string grammar;
  // Chat requests: how the session reads the answer (content, reasoning,
  // tool calls).
  chat_output_spec output;
};

struct validation_result {
  validated_request request;  // when ok()
  status error;         // ok() when the request is valid
  bool ok() const { return error.is_ok(); }
};

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF).
bool is_valid_utf8(const std::string& s);

// Not thread-safe (it owns the RNG that draws seeds). `tok` must outlive it.
class request_validator {
 public:
  // seeds_seed: seeds the generator of the seeds given to requests without
  // one (tests pass a fixed value; the server passes std::random_device()).
  request_validator(validation_limits limits, const tokenizer& tok, uint64_t seeds_seed);

  validation_result validate(const generation_request& r);

  const validation_limits& limits() const { return limits_; }

  // Requests with `messages` are rendered with `chat` (must outlive the
  // validator); without one they are rejected.
  void set_chat(const chat_setup* chat) { chat_ = chat; }

 private:
  const chat_setup* chat_ = nullptr;
  size_t max_piece_bytes_ = 1;  // the longest token's text: bounds the tokens a prompt can become
  validation_limits limits_;
  const tokenizer& tok_;
  std::mt19937_64 seeds_;
};

// Bounds the waiting queue: at most max_waiting requests and max_queued_tokens
// prompt tokens admitted but not yet released. O(1) accounting.
//
// A request is always admitted into an empty queue, whatever its size (the
// token limit bounds the backlog; single prompts are bounded by the context),
// unless max_waiting is 0 (admit nothing).
// Not thread-safe (owned by the intake actor).
class admission_limits {
 public:
  admission_limits(uint32_t max_waiting, uint64_t max_queued_tokens, uint32_t retry_after_ms = 1000);

  // Counts the request and returns ok; or, when a limit
  // is reached, counts nothing and returns `overloaded` (retryable, with
  // retry_after_ms) saying which limit.
  status try_admit(uint32_t n_tokens_prompt);
  // The request left the queue (started running or ended before it).
  // REQUIRES: matches an admitted request. A release that would underflow is
  // a bug: it asserts in debug; in release it clamps and returns false.
  bool release(uint32_t n_tokens_prompt);

  uint32_t n_waiting() const { return n_waiting_; }
  uint64_t n_queued_tokens() const { return n_queued_tokens_; }

 private:
  uint32_t max_waiting_;
  uint64_t max_queued_tokens_;
  uint32_t retry_after_ms_;
  uint32_t n_waiting_ = 0;
  uint64_t n_queued_tokens_ = 0;
};

}  // namespace cortex
