// What the Responses API and the Anthropic Messages API encoders share: one
// engine request (n = 1) answered either as one JSON body or as named
// server-sent events (`event: NAME\ndata: JSON\n\n`), the answer kept as
// output_blocks. The HTTP gateway drives every encoder through this
// interface. CAF-free; nothing throws; not thread-safe (one per response).
//
// Contract for the caller (the gateway):
//   - streaming(): send the bytes each on_* returns, in order, on a
//     text/event-stream response; done() after the terminal event (the
//     API's completion or its error event).
//   - not streaming: the on_* return ""; once done(), answer error() as
//     error_response(*error()) or else body().
//   - a rejection before any byte went out (started() false) is answered
//     as error_response(); after, on_error() ends the stream in-band.
// Events after done() are ignored; every response ends exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/http_gateway/openai_error.hpp"
#include "actors/http_gateway/output_blocks.hpp"
#include "messages/errors.hpp"
#include "messages/request.hpp"

namespace cortex::http {

// `event: <name>\ndata: <payload>\n\n`.
std::string sse_named_event(std::string_view name, std::string_view payload);

// The usage the engine reported, kept from the terminal event.
struct api_usage {
  uint32_t input_tokens = 0, cached_tokens = 0, output_tokens = 0;
};

class api_encoder {
 public:
  explicit api_encoder(bool streaming) : streaming_(streaming) {}
  virtual ~api_encoder() = default;

  std::string on_accepted(const request_accepted& a);
  std::string on_chunk(const request_chunk& c);
  std::string on_finished(const request_finished& f);
  // Ends the stream with the API's error event ("" when not streaming or done).
  std::string on_error(const status& e, std::string_view param = {});

  bool streaming() const { return streaming_; }
  bool done() const { return done_; }
  bool started() const { return started_; }
  const status* error() const { return has_error_ ? &error_ : nullptr; }

  // The whole answer. REQUIRES: done() and no error().
  virtual std::string body() const = 0;
  // An error in the API's shape, sent instead of a response.
  virtual openai_error_response error_response(const status& e, std::string_view param = {}) const = 0;

 protected:
  // Streaming only: the events that open the stream (on accepted), that a
  // block event becomes, that end it after the last block closed, and the
  // in-stream error that ends it instead.
  virtual std::string start_events(const request_accepted& a) = 0;
  virtual std::string block_events(const block_event& e) = 0;
  virtual std::string end_events(const request_finished& f) = 0;
  virtual std::string error_events(const status& e, std::string_view param) = 0;

  const output_blocks& blocks() const { return blocks_; }
  const api_usage& usage() const { return usage_; }
  // The terminal event's reason and stop string (reason stop, stop_kind "string").
  finish_reason reason() const { return reason_; }
  const std::string& stop_string() const { return stop_string_; }

 private:
  std::string render(const std::vector<block_event>& evs);
  std::string emit(std::string bytes);

  bool streaming_;
  bool accepted_ = false, started_ = false, done_ = false, has_error_ = false;
  output_blocks blocks_;
  api_usage usage_;
  finish_reason reason_ = finish_reason::stop;
  std::string stop_string_;
  status error_;
};

}  // namespace cortex::http
