// Parsing OpenAI request bodies (http.md "Chat and completions",
// "Embeddings") into the engine's generation_request plus the parts only
// the HTTP gateway uses (n, stream, logprobs shape, the model name to echo).
// CAF-free; nothing throws; thread-safe (no shared state).
//
// Checked here: JSON well-formedness and nesting depth, the type and range
// of every field http.md names, the size caps of protocol.md, `model`
// against the loaded model. Not checked here (intake does, with the model):
// token ids < vocab, the prompt against the context, the chat template.
//
// Errors (each names the field as `param`, a JSON path like
// "messages[1].content[0].text"):
//   400 malformed      the body is not JSON, or not a JSON object
//   400 invalid_param  a field of the wrong type or out of range, a required
//                      field missing, inconsistent fields
//   413 too_large      over a cap of openai_limits (stop strings, logit_bias
//                      entries, messages, token ids, embedding inputs, depth)
//   404 unknown_model  `model` names another model than the loaded one
//   501 unsupported    response_format other than text, non-text message
//                      parts, echo / suffix, batched completion prompts
// Unknown fields are ignored; null means "absent" for every optional field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/http_gateway/openai_error.hpp"
#include "messages/request.hpp"

namespace cortex::http {

// The last three are mapped onto a chat request (responses_api.hpp,
// anthropic_messages.hpp); parse_openai_request takes only the first three.
enum class openai_endpoint : uint8_t { chat_completions, completions, embeddings, responses, messages, count_tokens, rerank };

// "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", ..., "/v1/rerank"
const char* openai_endpoint_path(openai_endpoint e);
// "chat_completions", "completions", "embeddings", "responses", "messages",
// "count_tokens", "rerank": the `endpoint` label of
// cortex_requests_total (metrics_registry.hpp).
const char* openai_endpoint_label(openai_endpoint e);

struct openai_limits {
  std::string model_name;              // the loaded model (protocol v1 `models.name`); empty: `model` not checked
  uint32_t n_embd = 0;                 // embeddings: `dimensions` must equal it; 0: not checked
  uint32_t max_n = 8;                  // http.md: n in 1..8
  uint32_t max_logprobs = 20;          // http.md: top_logprobs / completions logprobs in 0..20
  uint32_t max_stop_strings = 16;      // protocol.md size caps from here on
  uint32_t max_stop_bytes = 256;
  uint32_t max_logit_bias = 1024;
  uint32_t max_stop_token_ids = 1024;
  uint32_t max_prompt_tokens = 1u << 20;
  uint32_t max_messages = 1024;
  uint32_t max_depth = 16;             // JSON nesting, the body included (`{}` is 1)
  uint32_t max_embedding_inputs = 256; // http.md
  // Defaults of max_tokens when the request has none: OpenAI's (chat: up
  // to the context, which intake caps; completions: 16).
  uint32_t default_max_tokens_chat = UINT32_MAX;
  uint32_t default_max_tokens_completions = 16;
};

struct openai_request {
  openai_endpoint endpoint = openai_endpoint::chat_completions;
  // The model name responses carry: the request's `model`, else limits.model_name.
  std::string model;
  // Chat / completions: the request of one choice. Chat fills messages_json
  // (the messages as given, each `content` made a string: text parts
  // concatenated), chat_template_kwargs_json (`chat_template_kwargs` plus
  // `tools` and `tool_choice` when given: template variables) and
  // add_generation_prompt; completions fill prompt or tokens. stream and
  // n_logprobs are set for the engine (n_logprobs = max(1, top_logprobs)
  // when logprobs are on: the engine reports the sampled token only with a
  // top list). client_id is left empty for the caller.
  generation_request request;
  uint32_t n = 1;                // choices, 1..max_n
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  bool logprobs = false;         // chat: `logprobs`; completions: `logprobs` given
  uint32_t top_logprobs = 0;     // top entries per token in responses (0..max_logprobs)
  std::string user;              // for logs only
  // Embeddings: one request per input, in input order (kind embed; prompt
  // or tokens; stream false). Rerank: one per document, in order (kind
  // embed, prompt the query, document the document).
  std::vector<generation_request> inputs;
  bool base64 = false;           // encoding_format "base64"
  uint32_t top_n = 0;            // rerank: results returned, 1..documents (default all)
};

struct openai_parse_result {
  openai_request request;  // complete when ok()
  openai_error error;      // error.report.is_ok() when ok()
  bool ok() const { return error.report.is_ok(); }
};

// Parses the body of a POST to `endpoint`. `body` may be any bytes.
openai_parse_result parse_openai_request(openai_endpoint endpoint, const std::string& body, const openai_limits& lim);

// The n engine requests of a chat / completions request: copies of
// r.request; with a seed, choice i gets seed + i (the same seed would make
// every choice the same text). REQUIRES: r.endpoint is not embeddings.
std::vector<generation_request> choice_requests(const openai_request& r);

}  // namespace cortex::http
