// Drives a plan through a transport (wire or in-process) and records, per
// request, the client-side times of its events.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/load/load_plan.hpp"

namespace cortex::load {

using load_clock = std::chrono::steady_clock;

// One server event as the client saw it, stamped when the client received it.
struct load_event {
  enum class kind { accepted, chunk, finished, error };
  int request = -1;              // planned_request::index
  kind what = kind::chunk;
  load_clock::time_point at;
  int n_tokens = 0;              // chunk / finished: token ids carried
  bool has_text = false;
  std::string reason;            // finished: protocol reason (length, stop, ...)
  int completion_tokens = 0;     // finished: usage.completion_tokens
  int error_code = 0;            // error: protocol code (429, ...)
  std::string error_name;        // error: protocol name (overloaded, ...)
};

// How requests reach an engine. Implementations: wire_transport (one DEALER
// socket per stream to cortexd) and inprocess_transport (embedded runtime).
// Both are used from one thread only (the controller's).
class load_transport {
 public:
  virtual ~load_transport() = default;
  // Sends the request without blocking on the engine: token ids as the
  // prompt, greedy, max_tokens with ignore_eos, token ids and text wanted.
  virtual void submit(const planned_request& r) = 0;
  // Appends the events that arrived, waiting up to `timeout` for the first.
  virtual void poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) = 0;
};

// What happened to one request.
struct request_outcome {
  int index = 0;
  load_clock::time_point submitted, first_token, last_token, ended;
  bool got_first = false;
  bool done = false;
  int tokens_seen = 0;           // token ids counted over chunks and finished
  int completion_tokens = 0;     // from finished.usage
  std::string outcome;           // "length", "stop", "finished:<reason>", "error:<code> <name>"
  bool ok = false;               // finished with length or stop
};

// The measured window of one phase.
struct phase_result {
  std::vector<request_outcome> requests;  // in plan order
  std::vector<double> ttft_ms;            // one per request with a first token
  std::vector<double> itl_ms;             // one per generated token after a stream's first chunk
  load_clock::time_point start, end;      // first submit, last terminal event
  bool timed_out = false;
};

// Runs the requests of one phase (`warmup` selects which) to completion.
// Closed loop (spec.rate == 0): each stream sends its next request when its
// previous one ended. Poisson: request i goes at phase start + arrival_s.
// ITL: a chunk carrying k tokens after the previous token-carrying chunk of
// the same request counts as k intervals of gap / k.
phase_result run_phase(load_transport& t, const load_spec& spec, const std::vector<planned_request>& plan, bool warmup);

}  // namespace cortex::load
