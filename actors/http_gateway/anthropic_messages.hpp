// Anthropic's Messages API (http.md "Anthropic Messages API"): the request
// mapped onto the chat request of /v1/chat/completions, and the engine's
// output (output_blocks) rendered as a `message` or as its event stream.
// CAF-free; nothing throws.
//
// Request: `model`, `max_tokens` (required, except for count_tokens),
// `system` (string or text blocks: the first system message), `messages`
// (user / assistant turns; content a string or blocks: text, tool_use {id,
// name, input} (assistant: a tool call), tool_result {tool_use_id, content,
// is_error} (user: a `tool` turn; is_error prefixes "Error: "), thinking
// (assistant: reasoning_content for templates that show past thinking)),
// `tools` ({name, description, input_schema}), `tool_choice` ({type: auto |
// any | tool (with name) | none, disable_parallel_tool_use}: auto / required
// / the named function / none), `stop_sequences`, `temperature`, `top_p`,
// `top_k`, `stream`, `thinking` ({type: "enabled", budget_tokens} sets the
// template's enable_thinking; "disabled" clears it), and the chat extensions
// that keep their names (seed, min_p, ...). Errors name the field as sent.
//
// Answer: content blocks thinking {thinking, signature: ""}, text {text},
// tool_use {id, name, input}; stop_reason end_turn | max_tokens |
// stop_sequence (with stop_sequence) | tool_use, or protocol v1's reason
// (deadline, cancelled, shutdown); usage {input_tokens, output_tokens}. A
// model's reasoning always comes back as a thinking block, never as text.
//
// Stream (each `event: TYPE` + `data: {type, ...}`): message_start (on
// accepted, usage.input_tokens known), ping, per block content_block_start,
// content_block_delta (text_delta, thinking_delta, input_json_delta),
// content_block_stop; then message_delta {stop_reason, stop_sequence,
// usage.output_tokens} and message_stop; or an `error` event instead.
//
// Errors: {type: "error", error: {type, message}} with Anthropic's type for
// the status protocol v1 gives the code (400 invalid_request_error, 401
// authentication_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 503 overloaded_error, other 5xx
// api_error).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/api_encoder.hpp"
#include "actors/http_gateway/openai_request.hpp"

namespace cortex::http {

struct anthropic_parse_result {
  openai_request request;  // the mapped chat request (n = 1)
  openai_error error;
  bool ok() const { return error.report.is_ok(); }
};

// `count_tokens`: a /v1/messages/count_tokens body (max_tokens optional; the
// request asks for one token, not streamed: the caller only counts its prompt).
anthropic_parse_result parse_anthropic_request(const std::string& body, const openai_limits& lim, bool count_tokens = false);

// A request target under /v1/messages: its errors are Anthropic-shaped.
bool is_anthropic_target(std::string_view target);
std::string anthropic_error_body(const status& e);
openai_error_response make_anthropic_error(const status& e);

class anthropic_encoder final : public api_encoder {
 public:
  // `id` ("msg_..."), `model` as the response names it.
  anthropic_encoder(bool streaming, std::string id, std::string model);

  std::string body() const override;
  openai_error_response error_response(const status& e, std::string_view param = {}) const override;

 private:
  std::string start_events(const request_accepted& a) override;
  std::string block_events(const block_event& e) override;
  std::string end_events(const request_finished& f) override;
  std::string error_events(const status& e, std::string_view param) override;

  nlohmann::ordered_json message_json(bool finished) const;
  nlohmann::ordered_json block_json(size_t block, bool finished) const;
  nlohmann::ordered_json stop_reason() const;

  std::string id_, model_;
};

}  // namespace cortex::http
