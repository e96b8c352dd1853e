// One HTTP response answered from the engine events of its requests: the n
// choices of a chat or completions request (streamed or whole), the inputs
// of an embeddings request, or the single request of the Responses and
// Messages APIs (count_tokens included). CAF-free; the HTTP gateway actor
// routes each event here with the index of the request it belongs to, and
// does what the group asks of its connection and the engine through a
// response_io.
//
// Fan-in rules:
// - Choices 1..n-1 are held back (hold_back) until choice 0 has its prompt
//   computed (its first chunk) or has ended without an error, so that they
//   find that prompt in the prefix cache: the prompt is computed once.
// - Whole responses are sent when every choice (or input) has finished;
//   streams send each event as it comes, the first bytes opening the stream.
// - The first error ends the response: before any byte was streamed as an
//   error status (in its API's shape), after as the stream's error event.
//   The owner then cancels the requests still running (response_end::cut).
// - A held-back choice refused because the server began draining ends like
//   the running ones do (reason shutdown): the response had been accepted.
// - count_tokens answers on `accepted` with the prompt's tokens, and the
//   request itself is cancelled (cut).
//
// Not thread-safe: one owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/http_gateway/api_encoder.hpp"
#include "actors/http_gateway/openai_choice.hpp"
#include "actors/http_gateway/openai_request.hpp"
#include "actors/http_gateway/openai_response.hpp"
#include "actors/http_gateway/openai_stream.hpp"
#include "messages/engine.hpp"
#include "messages/errors.hpp"

namespace cortex::http {

// What a response does to its connection and to the engine.
class response_io {
 public:
  using header_list = std::vector<std::pair<std::string, std::string>>;
  virtual ~response_io() = default;
  // The whole response (no stream was begun).
  virtual void respond(int status, std::string body, header_list headers) = 0;
  // A server-sent event stream: begun once, before its first bytes.
  virtual void stream_begin() = 0;
  virtual void stream_write(std::string bytes) = 0;
  virtual void stream_end() = 0;
  // Submits a held-back choice to the engine.
  virtual void submit(generation_request req) = 0;
};

// What an event did to the response.
enum class response_end {
  none,      // still open
  complete,  // answered; every request of it has ended
  cut,       // answered early: the owner cancels its requests still running
};

class openai_response_group {
 public:
  // The n choices of a chat or completions request; `ctx` as for
  // openai_stream_encoder / openai_response_builder.
  static openai_response_group choices(const openai_response_context& ctx, bool stream);
  // The inputs of an embeddings request, answered as one list.
  static openai_response_group embeddings(std::string model, size_t n_inputs, bool base64);
  // The documents of a rerank request (one score each), answered as the
  // top_n results, best first.
  static openai_response_group rerank(std::string model, size_t n_documents, uint32_t top_n);
  // The request of the Responses API (`responses`) or the Messages API
  // (`messages`, `count_tokens`), answered by its encoder.
  static openai_response_group api(openai_endpoint endpoint, std::unique_ptr<api_encoder> encoder);

  // Choices 1..n-1, routes open and client ids set, to submit once choice 0
  // has its prompt computed.
  void hold_back(std::vector<generation_request> reqs) { held_back_ = std::move(reqs); }
  // The held-back choices never submitted (when the response has ended):
  // their routes close without events.
  std::vector<generation_request> take_held_back() { return std::move(held_back_); }

  // The events of request `index` (a choice, an input).
  response_end on_accepted(response_io& io, uint32_t index, const request_accepted& a);
  response_end on_chunk(response_io& io, uint32_t index, const request_chunk& c);
  response_end on_finished(response_io& io, uint32_t index, const request_finished& f);
  response_end on_rejected(response_io& io, uint32_t index, const status& e);

  openai_endpoint endpoint() const { return endpoint_; }

 private:
  explicit openai_response_group(openai_endpoint endpoint) : endpoint_(endpoint) {}
  // One result per input (embeddings, rerank scores), answered as one list.
  static openai_response_group inputs(openai_endpoint endpoint, std::string model, size_t n_inputs);

  void release_held_back(response_io& io);
  void write(response_io& io, std::string bytes);
  // An error answered as a status, in the response's API's shape.
  void respond_error(response_io& io, const status& e) const;
  response_end finish_embedding(response_io& io, uint32_t index, const request_finished& f);
  response_end finish_api(response_io& io, const request_finished& f);

  openai_endpoint endpoint_;
  std::optional<openai_stream_encoder> stream_;
  std::optional<openai_response_builder> whole_;
  std::unique_ptr<api_encoder> api_;
  // Embeddings (rerank: one score per document): one vector per input, and
  // the prompt tokens counted.
  std::string model_;
  std::vector<std::vector<float>> embeddings_;
  uint64_t prompt_tokens_ = 0;
  size_t n_done_ = 0;
  bool base64_ = false;
  uint32_t top_n_ = 0;  // rerank: results returned
  std::vector<generation_request> held_back_;
  bool stream_begun_ = false;
};

}  // namespace cortex::http
