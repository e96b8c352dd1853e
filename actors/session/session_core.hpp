// One request's lifecycle after admission, without CAF: the session actor is
// a thin shell that feeds this class the scheduler's updates and external
// ends, and forwards what it returns to the request's sink.
//
// State machine (explicit; nothing else is reachable):
//
//   queued --on_scheduled--> prefilling --on_prefill_done / first token--> decoding
//      \________________________\_____________________________\__ finish / a stop ___> finished
//
// A preemption does not change the state (the scheduler recomputes the
// sequence; the request's progress is unchanged); it is counted.
//
// Contract for calls that do not fit the state:
// - Anything after `finished` (a cancel racing a natural end, a late engine
//   update) is expected: it is ignored and reported by a return value
//   (`applied == false` / `false`), never asserted. There is exactly one
//   terminal event, whatever the order of calls.
// - Other illegal transitions are bugs of the caller: they assert in debug
//   builds; in release builds they are ignored (the call returns false and
//   changes nothing), except tokens arriving while `queued`: tokens are real
//   output and are never dropped, so the missing on_scheduled(0) is implied.
//
// Text: generated ids go through an incremental detokenizer (whole UTF-8
// characters; `continues_text`, so the first token keeps its leading space)
// and a stop_matcher (text that might start a stop string is held back).
// Streaming, each engine step gives at most one chunk; the concatenation of
// all chunk texts and finished.text is the text of every accepted token,
// minus the text of a stopping token (EOS, stop id) and minus a matched stop
// string and anything after it. Not streaming, nothing is returned before the
// end and finished carries all text, ids and logprobs.
//
// Chat output (request.output.active): the text after stop strings goes
// through a chat::output_parser, so chunk.text is the content only and
// chunk.reasoning / chunk.tool_calls carry the rest; control tokens (which
// render as nothing) reach the parser as their text, since some families
// write their markers with them (<|python_tag|>, harmony's channels).
// finished carries what no chunk did (not streaming: all of it).
//
// Every end, natural or external (cancelled, deadline, shutdown,
// client_gone, error), releases the held-back text in finished.text: once
// generation is over no stop string can complete, so that text is output
// like any other (and a client's text then always matches its token ids).
//
// Not thread-safe (one per request, used by its actor). Nothing here throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/session/stop_matcher.hpp"
#include "chat/output_parser.hpp"
#include "messages/engine.hpp"
#include "messages/request.hpp"
#include "messages/session_config.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

enum class session_state : uint8_t { queued, prefilling, decoding, finished };
const char* session_state_name(session_state s);

// Milliseconds on a monotonic clock. Injected so tests are deterministic.
using session_clock = std::function<double()>;

// What one call produced, for the actor to send in this order.
struct session_events {
  bool applied = false;                      // false: ignored (see the contract above)
  std::optional<request_chunk> chunk;        // streaming only; at most one per call
  std::optional<request_finished> finished;  // the terminal event, exactly once per session
};

class session_core {
 public:
  // `tok` must outlive the session. The time of construction is the time the
  // request was accepted: queue, ttft, total and the deadline count from it.
  session_core(const tokenizer& tok, session_config cfg, session_clock clock);

  // queued -> prefilling: the scheduler put the sequence in a step for the
  // first time; `cached_tokens` prompt tokens came from the prefix cache.
  bool on_scheduled(uint32_t cached_tokens);
  // prefilling -> decoding: the prompt is computed. Accepted again while
  // decoding (a recompute after preemption); illegal while queued.
  bool on_prefill_done();
  // Total preemptions of the sequence so far (cumulative, not a delta).
  bool on_preemptions(uint32_t total);

  // The tokens sampled for this request in one engine step, in order
  // (usually one). Decides the end: a stopping token (EOS unless ignore_eos,
  // or a stop_token_id) once at least min_tokens tokens precede it, a stop
  // string, or max_tokens tokens -> length. Tokens after the one that ended
  // the request are discarded (not counted, not returned). Stop precedes
  // length when the max_tokens-th token also stops. finished.stop_kind /
  // stop_value: "eos" / "token" with the id in decimal, "string" with the
  // stop string. A stopping token's id is reported (and counted) but its
  // text is not emitted.
  session_events on_tokens(const std::vector<sampled_output>& tokens);

  // Applies a scheduler update: started, preemptions, prefill_done, tokens.
  // An update with an embedding (embed requests) ends the request with stop
  // and that embedding, no completion tokens.
  session_events on_update(const session_update& u);

  // An end decided outside (cancelled, deadline, shutdown, client_gone,
  // error with `error`; stop/length are accepted too). Releases held-back
  // text (see above). Ignored (applied == false) once finished.
  session_events finish(finish_reason reason, status error = {});

  // Ends the request with `deadline` if its deadline has passed.
  session_events check_deadline();
  // Absolute deadline on the session clock, when the request has one.
  std::optional<double> deadline_at_ms() const;

  session_state state() const { return state_; }
  bool is_finished() const { return state_ == session_state::finished; }
  request_id rid() const { return cfg_.rid; }
  uint32_t n_tokens_generated() const { return n_generated_; }
  // Text currently held back (undecided stop-string prefix).
  const std::string& held_text() const { return matcher_.held(); }

 private:
  void enter_decoding(double now);
  session_events end(finish_reason reason, status error, double now);
  request_timings timings(double now) const;

  const tokenizer& tok_;
  session_config cfg_;
  session_clock clock_;
  incremental_detokenizer detok_;
  stop_matcher matcher_;
  std::unique_ptr<chat::output_parser> parser_;  // chat output, when request.output.active
  session_state state_ = session_state::queued;

  uint32_t n_generated_ = 0;
  uint32_t n_cached_ = 0;
  uint32_t n_preemptions_ = 0;
  uint32_t n_spec_drafted_ = 0, n_spec_accepted_ = 0;  // speculative decoding, summed over updates
  std::string stop_kind_, stop_value_;  // set by a natural stop

  // Everything so far, kept only when not streaming.
  std::string all_text_;
  std::vector<int32_t> all_ids_;
  std::vector<token_logprob> all_logprobs_;
  std::vector<float> embedding_;  // embed requests: the result, until finished carries it

  double t_accepted_ = 0;
  std::optional<double> t_scheduled_, t_decoding_, t_first_token_;
};

}  // namespace cortex
