// The single CAF type-ID block of CortexStream: every atom and message type,
// their inspect overloads, and the project's error enum as caf::error.
// Register with cfg.add_message_types<caf::id_block::cortex>() (done by
// cortex::register_types in messages/actors.hpp's users via runtime).
#pragma once

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>  // for CAF_ERROR_CODE_ENUM's context (caf_status.hpp)
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include "messages/engine.hpp"
#include "messages/errors.hpp"
#include "messages/gateway.hpp"
#include "messages/request.hpp"

namespace cortex {

namespace chat {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_call& x) {
  return f(caf::meta::type_name("tool_call"), x.id, x.name, x.arguments);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_call_delta& x) {
  return f(caf::meta::type_name("tool_call_delta"), x.index, x.id, x.name, x.arguments);
}
}  // namespace chat

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, status& x) {
  return f(caf::meta::type_name("status"), x.code, x.message, x.retry_after_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_params& x) {
  return f(caf::meta::type_name("request_params"), x.max_tokens, x.max_tokens_given, x.temperature, x.top_k, x.top_p, x.min_p,
           x.repetition_penalty, x.presence_penalty, x.frequency_penalty, x.penalty_last_n, x.has_seed, x.seed, x.stop,
           x.stop_token_ids, x.ignore_eos, x.min_tokens, x.logit_bias_ids, x.logit_bias_values, x.grammar, x.json_schema,
           x.spec_given, x.spec_ngram, x.spec_max_draft);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_output_spec& x) {
  return f(caf::meta::type_name("chat_output_spec"), x.active, x.format, x.parse_tool_calls, x.think_tags, x.thinking_open,
           x.split_reasoning);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generation_request& x) {
  return f(caf::meta::type_name("generation_request"), x.client_id, x.key_id, x.admission_group, x.group_size, x.kind, x.prompt, x.tokens, x.use_tokens, x.document,
           x.messages_json, x.chat_template_kwargs_json, x.add_generation_prompt, x.tools_json, x.tool_choice,
           x.tool_choice_name, x.parallel_tool_calls, x.reasoning_format, x.output, x.add_bos,
           x.stream, x.priority, x.deadline_ms, x.want_text, x.want_token_ids, x.n_logprobs, x.tags, x.params);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_accepted& x) {
  return f(caf::meta::type_name("request_accepted"), x.rid, x.client_id, x.prompt_tokens, x.cached_tokens, x.queue_pos,
           x.tags);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_logprob& x) {
  return f(caf::meta::type_name("token_logprob"), x.id, x.lp, x.top_ids, x.top_lps);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_chunk& x) {
  return f(caf::meta::type_name("request_chunk"), x.rid, x.client_id, x.text, x.reasoning, x.tool_calls, x.token_ids,
           x.logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_timings& x) {
  return f(caf::meta::type_name("request_timings"), x.queue_ms, x.prefill_ms, x.ttft_ms, x.decode_ms, x.total_ms,
           x.tokens_per_s, x.spec_drafted_tokens, x.spec_accepted_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_finished& x) {
  return f(caf::meta::type_name("request_finished"), x.rid, x.client_id, x.reason, x.stop_kind, x.stop_value, x.text,
           x.reasoning, x.tool_calls, x.has_tool_calls,
           x.token_ids, x.logprobs, x.prompt_tokens, x.cached_tokens, x.completion_tokens, x.timings, x.preemptions, x.error, x.tags, x.embedding);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_rejected& x) {
  return f(caf::meta::type_name("request_rejected"), x.client_id, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sequence_admission& x) {
  return f(caf::meta::type_name("sequence_admission"), x.rid, x.tokens_prompt, x.params, x.seed, x.priority, x.n_logprobs,
           x.kind);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sequence_open& x) {
  return f(caf::meta::type_name("sequence_open"), x.rid, x.params, x.seed, x.n_logprobs, x.tokens_prompt);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_entry& x) {
  return f(caf::meta::type_name("step_entry"), x.rid, x.tokens, x.pos0, x.block_table, x.more_block_tables, x.sample,
           x.is_decode, x.embed, x.n_draft);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_step& x) {
  return f(caf::meta::type_name("engine_step"), x.step_id, x.entries, x.closed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampled_output& x) {
  return f(caf::meta::type_name("sampled_output"), x.rid, x.token, x.logprob);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_failure& x) {
  return f(caf::meta::type_name("request_failure"), x.rid, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, embedding_output& x) {
  return f(caf::meta::type_name("embedding_output"), x.rid, x.embedding);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_step_result& x) {
  return f(caf::meta::type_name("engine_step_result"), x.step_id, x.outputs, x.error, x.compute_ms, x.embeddings,
           x.failures);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_update& x) {
  return f(caf::meta::type_name("session_update"), x.rid, x.started, x.cached_tokens, x.prefill_done, x.tokens,
           x.preemptions, x.spec_drafted, x.spec_accepted, x.embedding);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_stats& x) {
  return f(caf::meta::type_name("engine_stats"), x.running, x.waiting, x.kv_blocks_used, x.kv_blocks_total,
           x.kv_blocks_cached, x.kv_type, x.kernel_isa, x.kv_bytes_per_token, x.kv_bytes_used, x.kv_bytes_full, x.kv_bytes_total,
           x.kv_group_windows, x.kv_group_layers, x.kv_group_blocks_used, x.kv_group_blocks_released, x.prefix_cache_hit_rate, x.prefix_tokens_queried, x.prefix_tokens_hit, x.prefix_cache_enabled, x.state_slots_used, x.state_bytes_per_slot, x.tokens_generated, x.tokens_prefilled, x.steps, x.preemptions,
           x.failed_steps, x.spec_drafted_tokens, x.spec_accepted_tokens, x.step_batch_tokens_mean, x.step_seqs_mean, x.step_seqs_max, x.finished_by_reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, http_inbound& x) {
  return f(caf::meta::type_name("http_inbound"), x.conn, x.method, x.target, x.content_type, x.body, x.peer, x.key_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_inbound& x) {
  return f(caf::meta::type_name("gateway_inbound"), x.peer, x.payload, x.delimiter, x.extra_frames);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_info& x) {
  return f(caf::meta::type_name("model_info"), x.name, x.arch, x.n_ctx, x.n_vocab, x.quant, x.n_params);
}

}  // namespace cortex

CAF_BEGIN_TYPE_ID_BLOCK(cortex, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(cortex, (cortex::generation_request))
  CAF_ADD_TYPE_ID(cortex, (cortex::request_accepted))
  CAF_ADD_TYPE_ID(cortex, (cortex::request_chunk))
  CAF_ADD_TYPE_ID(cortex, (cortex::request_finished))
  CAF_ADD_TYPE_ID(cortex, (cortex::request_rejected))
  CAF_ADD_TYPE_ID(cortex, (cortex::sequence_admission))
  CAF_ADD_TYPE_ID(cortex, (cortex::sequence_open))
  CAF_ADD_TYPE_ID(cortex, (cortex::engine_step))
  CAF_ADD_TYPE_ID(cortex, (cortex::engine_step_result))
  CAF_ADD_TYPE_ID(cortex, (cortex::session_update))
  CAF_ADD_TYPE_ID(cortex, (cortex::engine_stats))
  CAF_ADD_TYPE_ID(cortex, (cortex::status))
  CAF_ADD_TYPE_ID(cortex, (cortex::finish_reason))
  CAF_ADD_TYPE_ID(cortex, (cortex::gateway_inbound))
  CAF_ADD_TYPE_ID(cortex, (cortex::http_inbound))
  CAF_ADD_TYPE_ID(cortex, (cortex::model_info))
  CAF_ADD_TYPE_ID(cortex, (cortex::health_status))

  CAF_ADD_ATOM(cortex, cortex, submit_atom, "submit")
  CAF_ADD_ATOM(cortex, cortex, cancel_atom, "cancel")
  CAF_ADD_ATOM(cortex, cortex, stats_atom, "stats")
  CAF_ADD_ATOM(cortex, cortex, admit_atom, "admit")
  CAF_ADD_ATOM(cortex, cortex, finish_atom, "finish")
  CAF_ADD_ATOM(cortex, cortex, dequeued_atom, "dequeued")
  CAF_ADD_ATOM(cortex, cortex, shutdown_atom, "shutdown")
  CAF_ADD_ATOM(cortex, cortex, deadline_atom, "deadline")
  CAF_ADD_ATOM(cortex, cortex, fail_atom, "fail")
  CAF_ADD_ATOM(cortex, cortex, tick_atom, "tick")
  CAF_ADD_ATOM(cortex, cortex, ready_atom, "ready")
  CAF_ADD_ATOM(cortex, cortex, drain_atom, "drain")
  CAF_ADD_ATOM(cortex, cortex, active_atom, "active")
  CAF_ADD_ATOM(cortex, cortex, peer_gone_atom, "peergone")
  CAF_ADD_ATOM(cortex, cortex, blocked_atom, "blocked")
  CAF_ADD_ATOM(cortex, cortex, group_done_atom, "groupdone")
  CAF_ADD_ATOM(cortex, cortex, hello_atom, "hello")
  CAF_ADD_ATOM(cortex, cortex, workers_atom, "workers")

CAF_END_TYPE_ID_BLOCK(cortex)

CAF_ERROR_CODE_ENUM(cortex::errc, "cortex")
