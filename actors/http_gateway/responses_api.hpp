// OpenAI's Responses API, stateless (http.md "Responses API"): the request
// mapped onto the chat request of /v1/chat/completions, and the engine's
// output (output_blocks) rendered as a `response` object or as its typed
// event stream. CAF-free; nothing throws.
//
// Request: `input` (a string, or items: messages {role, content: string |
// parts input_text / output_text}, function_call {call_id, name, arguments},
// function_call_output {call_id, output}, reasoning {content:
// [reasoning_text]}), `instructions` (the first system message), `tools`
// (flat function tools), `tool_choice` ("none" | "auto" | "required" |
// {type: "function", name}), `parallel_tool_calls`, `text.format` (text,
// json_object, json_schema {name, schema, strict}), `max_output_tokens`,
// `temperature`, `top_p`, `stream`, `reasoning.effort`, and the chat
// extensions that keep their names (seed, top_k, min_p, ...). `store: true`,
// `previous_response_id`, `conversation` and `background: true` are 400: no
// state is kept. Errors name the field as sent ("input[2].call_id").
//
// Output items: reasoning {id, type, summary: [], content: [{type:
// "reasoning_text", text}]}, message {id, type, status, role: "assistant",
// content: [{type: "output_text", text, annotations: []}]}, function_call
// {id, type, status, call_id, name, arguments}. status "completed", or
// "incomplete" with incomplete_details.reason "max_output_tokens" (length)
// or protocol v1's reason (deadline, cancelled, shutdown); an error is the
// HTTP error (not streaming) or `response.failed` (streaming).
//
// Stream: response.created, response.in_progress (on accepted); per item
// response.output_item.added, (message / reasoning: response.content_part.added),
// the deltas (response.output_text.delta, response.reasoning_text.delta,
// response.function_call_arguments.delta), their ...done events,
// response.content_part.done, response.output_item.done; then
// response.completed or response.incomplete carrying the whole response.
// Every event is `event: TYPE` + `data: {type, sequence_number (0, 1, ...), ...}`.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/api_encoder.hpp"
#include "actors/http_gateway/openai_request.hpp"

namespace cortex::http {

struct responses_request {
  openai_request chat;  // the mapped chat request (n = 1); chat.stream is `stream`
  // Echoed in the response object (null when absent).
  nlohmann::ordered_json instructions, max_output_tokens, temperature, top_p, tool_choice, tools, text;
  bool parallel_tool_calls = true;
};

struct responses_parse_result {
  responses_request request;
  openai_error error;
  bool ok() const { return error.report.is_ok(); }
};

responses_parse_result parse_responses_request(const std::string& body, const openai_limits& lim);

class responses_encoder final : public api_encoder {
 public:
  // `id` ("resp_..."), the request's echo fields, unix seconds.
  responses_encoder(const responses_request& r, std::string id, int64_t created_at);

  std::string body() const override;
  openai_error_response error_response(const status& e, std::string_view param = {}) const override;

 private:
  std::string start_events(const request_accepted& a) override;
  std::string block_events(const block_event& e) override;
  std::string end_events(const request_finished& f) override;
  std::string error_events(const status& e, std::string_view param) override;

  // The response object: status "in_progress" before the end, else from reason().
  nlohmann::ordered_json response_json(bool finished) const;
  nlohmann::ordered_json item_json(size_t block, bool finished) const;
  std::string item_id(size_t block) const;
  std::string event(const char* type, nlohmann::ordered_json fields);

  responses_request req_;
  std::string id_;
  int64_t created_at_;
  uint64_t sequence_ = 0;
  std::string failed_code_, failed_message_;
};

}  // namespace cortex::http
