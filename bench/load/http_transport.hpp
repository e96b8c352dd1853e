// The HTTP mode: the load through cortexd's OpenAI-compatible API
// (../shared/docs/http.md). One keep-alive HTTP/1.1 connection per stream;
// each request is a POST /v1/completions with the prompt as token ids,
// greedy (temperature 0), max_tokens with ignore_eos, stream: true and
// include_usage (and logprobs: 0 when asked, so every token is counted
// where it arrives), read as server-sent events (completion_stream_reader).
// Boost.Beast over one Asio io_context that poll() runs on the
// controller's thread: no thread of its own.
//
// The same client drives llama.cpp's llama-server (completion_format::
// llama_server): POST /completion with the same token ids, n_predict,
// temperature 0 and ignore_eos, stream: true; readiness is its GET /health.
// Both servers are then timed by this one piece of code.
#pragma once

#include <memory>
#include <string>

#include "bench/load/completion_stream_reader.hpp"
#include "bench/load/load_run.hpp"
#include "base/expected.hpp"

namespace cortex::load {

class http_transport : public load_transport {
 public:
  // `url`: http://HOST:PORT. Waits (up to `ready_timeout_s`) until GET
  // /health/ready (llama-server: /health) answers 200, then reads the model
  // id from GET /v1/models. The error says what failed (address, timeout, reply).
  static expected<std::unique_ptr<http_transport>> connect(const std::string& url, int n_streams, double ready_timeout_s,
                                                           bool logprobs,
                                                           completion_format format = completion_format::openai);
  ~http_transport() override;

  const std::string& model_id() const;
  // Opens the stream's connection if it has none (or the server closed it),
  // then sends the request; failures come back as error events from poll().
  void submit(const planned_request& r) override;
  // Runs the I/O until an event arrives or `timeout` passes, then drains
  // what else is ready; events are stamped when their bytes are read.
  void poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) override;

  struct impl;

 private:
  http_transport() = default;
  std::unique_ptr<impl> impl_;
};

}  // namespace cortex::load
