// What a generation request carries and what it produces, as plain structs
// (no CAF here: the wire codec and plain-C++ logic use them too; the CAF
// inspect overloads are in messages/type_ids.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chat/chat_output.hpp"
#include "messages/errors.hpp"

namespace cortex {

// A request's server-side id, assigned by intake (from 1) and used unchanged
// by the scheduler, the KV cache, the executor and the sessions.
using request_id = uint64_t;

// Sampling and stopping parameters (protocol.md `params`), with its defaults.
struct request_params {
  uint32_t max_tokens = 256;  // capped to the context by intake
  bool max_tokens_given = false;  // the request named max_tokens (else the default, which a tier's cap bounds)
  float temperature = 1.0f;   // 0 = greedy
  int32_t top_k = 0;          // 0 = off
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;
  bool has_seed = false;
  uint64_t seed = 0;
  std::vector<std::string> stop;        // at most 16, each at most 256 bytes
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  uint32_t min_tokens = 0;
  std::vector<int32_t> logit_bias_ids;  // parallel to logit_bias_values, in [-100, 100]
  std::vector<float> logit_bias_values;
  // Structured output (grammar/): a GBNF grammar the generated text
  // must follow, or a JSON Schema (JSON text) its text must validate
  // against; at most one. Intake turns json_schema into grammar (and
  // clears it), so past intake only `grammar` is set.
  std::string grammar;
  std::string json_schema;
  // Speculative decoding by prompt lookup (protocol `params.speculative`,
  // {ngram, max_draft}): draft up to spec_max_draft tokens by matching the
  // last spec_ngram tokens earlier in prompt + output, verified in the same
  // step. Off when spec_max_draft == 0. Not given: the server's default
  // (cortexd --speculative) applies.
  bool spec_given = false;
  int32_t spec_ngram = 3;       // in [1, 16]
  int32_t spec_max_draft = 0;   // in [0, 32]; 0 = off
};

// How a chat request's generated text is read (chat/output_parser.hpp),
// decided by intake from the template and the request; `active` false:
// the text is passed through as it is.
struct chat_output_spec {
  bool active = false;
  std::string format;            // a chat::tool_format_names() entry
  bool parse_tool_calls = false;  // tools were offered (tool_choice not none)
  bool think_tags = false;        // <think> blocks are reasoning
  bool thinking_open = false;     // the rendered prompt opened one
  bool split_reasoning = true;    // reasoning_format auto
};

// What a request asks the engine for: generated text, or (prefill only) an
// embedding of the prompt (http.md `/v1/embeddings`); on a reranker
// (pooling rank) the embedding is the score of `document` against the
// prompt, the query (http.md `/v1/rerank`).
enum class request_kind : uint8_t { generate, embed };

struct generation_request {
  std::string client_id;        // the submitter's id (wire `id`), for logs and replies
  // The API key the request belongs to (auth.md), as its gateway
  // authenticated it; empty when access control is off.
  std::string key_id;
  // The engine sequences of one client request (an HTTP chat with n > 1
  // choices, an embeddings call with several inputs) share one admission:
  // the same group name (unique for the gateway's life; "" = a request of
  // its own) and the member count on every member.
  std::string admission_group;
  uint32_t group_size = 1;
  request_kind kind = request_kind::generate;
  std::string prompt;           // exactly one of prompt / tokens / messages_json
  std::vector<int32_t> tokens;
  bool use_tokens = false;
  // Reranking (kind embed on a reranker): the document scored against the
  // query in `prompt`; empty otherwise.
  std::string document;
  // Chat turns (protocol.md `messages`, http.md) as a JSON array of
  // {role, content, ...} objects, rendered by intake with the model's chat
  // template; empty when the request has none. `chat_template_kwargs_json`
  // is a JSON object of extra template variables (empty: none).
  std::string messages_json;
  std::string chat_template_kwargs_json;
  bool add_generation_prompt = true;
  // Tools (chat only; protocol.md chat-only submit keys): OpenAI function
  // tools as a JSON array ("" = none); tool_choice "" (auto when tools are
  // given) | "none" | "auto" | "required" | "function" (then
  // tool_choice_name names it); reasoning_format "" (auto) | "auto" | "none".
  std::string tools_json;
  std::string tool_choice;
  std::string tool_choice_name;
  bool parallel_tool_calls = true;
  std::string reasoning_format;
  chat_output_spec output;  // set by intake
  int8_t add_bos = -1;          // -1: the model's default
  bool stream = true;           // false: only accepted and finished (with all text)
  int32_t priority = 0;         // higher is served first
  uint64_t deadline_ms = 0;     // from receipt; 0 = none
  bool want_text = true;
  bool want_token_ids = false;
  uint32_t n_logprobs = 0;      // 0..20 top entries, 0 = off
  std::map<std::string, std::string> tags;
  request_params params;
};

struct request_accepted {
  request_id rid = 0;             // server-side id
  std::string client_id;
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;   // filled when known (prefix cache), else 0
  uint32_t queue_pos = 0;
  std::map<std::string, std::string> tags;
};

struct token_logprob {
  int32_t id = 0;
  float lp = 0;
  std::vector<int32_t> top_ids;
  std::vector<float> top_lps;
};

// The tokens of one engine step for one request.
struct request_chunk {
  request_id rid = 0;
  std::string client_id;
  std::string text;               // whole UTF-8 characters; stop-string prefixes held back
  // Chat output read by output.format (generation_request::output): the
  // reasoning text and the calls completed in this step (text is then the
  // content only).
  std::string reasoning;
  std::vector<chat::tool_call_delta> tool_calls;
  std::vector<int32_t> token_ids; // when asked; never held back
  std::vector<token_logprob> logprobs;
};

enum class finish_reason : uint8_t { stop, length, cancelled, deadline, shutdown, client_gone, error };
const char* finish_reason_name(finish_reason r);

// Whether a sampled token ends the request by itself (stop strings aside):
// EOS / end-of-generation unless ignore_eos, else a stop token id, and only
// once at least min_tokens tokens precede it. `n_generated` counts this
// token (1 for the first). The one rule the scheduler (to stop computing at
// once) and the session (to report the end) both apply.
enum class token_stop : uint8_t { none, eos, token };
token_stop stop_by_token(const request_params& p, bool is_eog, int32_t token, uint32_t n_generated);

// Whether a request that has generated `n_generated` tokens (the last one
// counted) has reached `max_tokens` and ends with `length`. The one rule the
// scheduler (to stop computing: scheduler_core) and the session (to report
// the end) both apply.
inline bool length_reached(int64_t n_generated, int64_t max_tokens) { return n_generated >= max_tokens; }

struct request_timings {
  double queue_ms = 0, prefill_ms = 0, ttft_ms = 0, decode_ms = 0, total_ms = 0, tokens_per_s = 0;
  // Speculative decoding (params.speculative): draft tokens verified, and
  // how many of them were accepted; 0 when it was off.
  uint32_t spec_drafted_tokens = 0, spec_accepted_tokens = 0;
};

// The one terminal event of a request.
struct request_finished {
  request_id rid = 0;
  std::string client_id;
  finish_reason reason = finish_reason::stop;
  std::string stop_kind;   // eos | token | string, when reason == stop
  std::string stop_value;
  std::string text;        // remaining held-back text; all text when not streaming
  // Chat output (generation_request::output): the reasoning and the calls
  // no chunk carried (not streaming: all of them); has_tool_calls when the
  // answer made any call, streamed or not (the reason is then tool_calls
  // to clients where it is stop).
  std::string reasoning;
  std::vector<chat::tool_call> tool_calls;
  bool has_tool_calls = false;
  std::vector<int32_t> token_ids;  // remaining ids (non-streaming: all), when asked
  std::vector<token_logprob> logprobs;  // remaining logprobs (non-streaming: all), when asked
  uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  request_timings timings;
  uint32_t preemptions = 0;
  status error;      // when reason == error
  std::map<std::string, std::string> tags;
  std::vector<float> embedding;  // (n_embd,) L2-normalized, for request_kind::embed
};

// A submit that was rejected before it started (no accepted, no finished).
struct request_rejected {
  std::string client_id;
  status error;
};

}  // namespace cortex
