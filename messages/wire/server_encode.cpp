#include "messages/wire/server_encode.hpp"

#include <cstdlib>
#include <string_view>

#include <msgpack.hpp>

#include "messages/wire/msgpack_write.hpp"
#include "messages/wire/protocol.hpp"

namespace cortex::wire {
namespace {

// One message under construction. msgpack maps declare their size first,
// so each encoder counts its keys: n_body + the envelope's.
class message_writer {
 public:
  // `with_seq` false: the id without a seq (an error that is not the request's terminal message).
  message_writer(const char* type, const std::string& id, uint64_t seq, uint32_t n_body, bool with_seq = true)
      : sink_{out_}, pk_(sink_) {
    const bool has_id = !id.empty();
    pk_.pack_map(n_body + 2 + (has_id ? 1 : 0) + (has_id && with_seq ? 1 : 0));
    key("v").pack(protocol_version);
    key("t").pack(std::string_view(type));
    if (has_id) key("id").pack(id);
    if (has_id && with_seq) key("seq").pack(seq);
  }
  msgpack::packer<byte_sink>& key(std::string_view k) {
    pk_.pack(k);
    return pk_;
  }
  msgpack::packer<byte_sink>& pk() { return pk_; }
  void raw(const std::vector<uint8_t>& bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  // Floats always as float32/float64 (see msgpack_write.hpp).
  void f32(float v) { write_f32(out_, v); }
  void f64(double v) { write_f64(out_, v); }
  void key_f64(std::string_view k, double v) {
    key(k);
    f64(v);
  }
  wire_bytes take() { return std::move(out_); }

 private:
  wire_bytes out_;
  byte_sink sink_;
  msgpack::packer<byte_sink> pk_;
};

void pack_tags(msgpack::packer<byte_sink>& pk, const std::map<std::string, std::string>& tags) {
  pk.pack_map(static_cast<uint32_t>(tags.size()));
  for (const auto& [k, v] : tags) pk.pack(k).pack(v);
}

// [{id, lp, top: [[id, lp], ...]}, ...]
void pack_logprobs(message_writer& w, const std::vector<token_logprob>& lps) {
  w.pk().pack_array(static_cast<uint32_t>(lps.size()));
  for (const token_logprob& t : lps) {
    const size_t n_top = std::min(t.top_ids.size(), t.top_lps.size());
    w.pk().pack_map(3);
    w.key("id").pack(t.id);
    w.key("lp");
    w.f32(t.lp);
    w.key("top").pack_array(static_cast<uint32_t>(n_top));
    for (size_t i = 0; i < n_top; ++i) {
      w.pk().pack_array(2).pack(t.top_ids[i]);
      w.f32(t.top_lps[i]);
    }
  }
}

// The optional outputs shared by chunk and finished.
uint32_t n_outputs(const output_fields& want) { return want.text + want.token_ids + want.logprobs; }
void pack_outputs(message_writer& w, const output_fields& want, const std::string& text,
                  const std::vector<int32_t>& ids, const std::vector<token_logprob>& lps) {
  if (want.text) w.key("text").pack(text);
  if (want.token_ids) w.key("token_ids").pack(ids);
  if (want.logprobs) {
    w.key("logprobs");
    pack_logprobs(w, lps);
  }
}

// Chat output (protocol.md chunk/finished `reasoning`, `tool_calls`): keys
// only when there is something to say, so plain requests look as before.
uint32_t n_chat_keys(const std::string& reasoning, size_t n_calls) { return !reasoning.empty() + (n_calls > 0); }
void pack_tool_call_deltas(message_writer& w, const std::vector<chat::tool_call_delta>& calls) {
  w.key("tool_calls").pack_array(static_cast<uint32_t>(calls.size()));
  for (const auto& c : calls) {
    w.pk().pack_map(4);
    w.key("index").pack(c.index);
    w.key("id").pack(c.id);
    w.key("name").pack(c.name);
    w.key("arguments").pack(c.arguments);
  }
}

void pack_stop(message_writer& w, const request_finished& f) {
  msgpack::packer<byte_sink>& pk = w.pk();
  pk.pack_map(2);
  w.key("kind").pack(f.stop_kind);
  w.key("value");
  // session_core writes token ids in decimal; anything else stays a string.
  char* end = nullptr;
  const unsigned long long id = f.stop_kind != "string" && !f.stop_value.empty()
                                    ? std::strtoull(f.stop_value.c_str(), &end, 10)
                                    : 0;
  if (end && *end == '\0' && f.stop_value[0] != '-')
    pk.pack(static_cast<uint64_t>(id));
  else
    pk.pack(f.stop_value);
}

void pack_percentiles(message_writer& w, const latency_percentiles& p) {
  w.pk().pack_map(3);
  w.key_f64("p50", p.p50);
  w.key_f64("p90", p.p90);
  w.key_f64("p99", p.p99);
}

}  // namespace

output_fields output_fields_of(const generation_request& r) {
  output_fields f;
  f.text = r.want_text;
  f.token_ids = r.want_token_ids;
  f.logprobs = r.n_logprobs > 0;
  const bool encoder = r.kind == request_kind::embed;
  f.embedding = encoder && r.document.empty();
  f.score = encoder && !r.document.empty();
  return f;
}

const char* health_status_name(health_status s) {
  switch (s) {
    case health_status::starting: return "starting";
    case health_status::ready: return "ready";
    case health_status::draining: return "draining";
  }
  return "starting";
}

wire_bytes encode_accepted(const request_accepted& a, uint64_t seq, const std::vector<std::string>& ignored) {
  message_writer w("accepted", a.client_id, seq, 6);
  w.key("rid").pack(a.rid);
  w.key("prompt_tokens").pack(a.prompt_tokens);
  w.key("cached_tokens").pack(a.cached_tokens);
  w.key("queue_pos").pack(a.queue_pos);
  w.key("ignored").pack(ignored);
  pack_tags(w.key("tags"), a.tags);
  return w.take();
}

wire_bytes encode_chunk(const request_chunk& c, uint64_t seq, const output_fields& want) {
  message_writer w("chunk", c.client_id, seq, n_outputs(want) + n_chat_keys(c.reasoning, c.tool_calls.size()));
  pack_outputs(w, want, c.text, c.token_ids, c.logprobs);
  if (!c.reasoning.empty()) w.key("reasoning").pack(c.reasoning);
  if (!c.tool_calls.empty()) pack_tool_call_deltas(w, c.tool_calls);
  return w.take();
}

wire_bytes encode_finished(const request_finished& f, uint64_t seq, const output_fields& want) {
  // An encoder request generates nothing, so nothing stopped it; what it
  // computed comes only with a finish that is no failure (reason stop).
  const bool encoder = want.embedding || want.score;
  const bool has_stop = f.reason == finish_reason::stop && !encoder;
  const bool has_result = f.reason == finish_reason::stop && encoder && !f.embedding.empty();
  // A request that ended with an error says which and why (code, name,
  // message, retryable and retry_after_ms as in an `error` message), or its
  // client could not tell.
  const bool has_error = f.reason == finish_reason::error;
  message_writer w("finished", f.client_id, seq,
                   5 + has_stop + has_error + has_result + n_outputs(want) +
                       n_chat_keys(f.reasoning, f.tool_calls.size()));
  // A stop after tool calls is the reason tool_calls (protocol.md).
  w.key("reason").pack(std::string_view(has_stop && f.has_tool_calls ? "tool_calls" : finish_reason_name(f.reason)));
  if (has_stop) {
    w.key("stop");
    pack_stop(w, f);
  }
  if (has_error) {
    const bool retryable = errc_retryable(f.error.code);  // e.g. a router's worker_lost
    w.key("error").pack_map(4 + retryable);
    w.key("code").pack(errc_code(f.error.code));
    w.key("name").pack(std::string_view(errc_name(f.error.code)));
    w.key("message").pack(f.error.message.empty() ? std::string("the request failed (no detail)") : f.error.message);
    w.key("retryable").pack(retryable);
    if (retryable) w.key("retry_after_ms").pack(f.error.retry_after_ms);
  }
  pack_outputs(w, want, f.text, f.token_ids, f.logprobs);
  if (has_result && want.score) {  // a reranker's one output, as llama-server returns it
    w.key_f64("score", f.embedding[0]);
  } else if (has_result) {
    w.key("embedding").pack_array(static_cast<uint32_t>(f.embedding.size()));
    for (float x : f.embedding) w.f32(x);
  }
  if (!f.reasoning.empty()) w.key("reasoning").pack(f.reasoning);
  if (!f.tool_calls.empty()) {  // the calls no chunk carried: {id, name, arguments}
    w.key("tool_calls").pack_array(static_cast<uint32_t>(f.tool_calls.size()));
    for (const auto& c : f.tool_calls) {
      w.pk().pack_map(3);
      w.key("id").pack(c.id);
      w.key("name").pack(c.name);
      w.key("arguments").pack(c.arguments);
    }
  }
  w.key("usage").pack_map(3);
  w.key("prompt_tokens").pack(f.prompt_tokens);
  w.key("cached_tokens").pack(f.cached_tokens);
  w.key("completion_tokens").pack(f.completion_tokens);
  const request_timings& t = f.timings;
  w.key("timings").pack_map(8);
  w.key_f64("queue_ms", t.queue_ms);
  w.key_f64("prefill_ms", t.prefill_ms);
  w.key_f64("ttft_ms", t.ttft_ms);
  w.key_f64("decode_ms", t.decode_ms);
  w.key_f64("total_ms", t.total_ms);
  w.key_f64("tokens_per_s", t.tokens_per_s);
  w.key("spec_drafted_tokens").pack(t.spec_drafted_tokens);
  w.key("spec_accepted_tokens").pack(t.spec_accepted_tokens);
  w.key("preemptions").pack(f.preemptions);
  pack_tags(w.key("tags"), f.tags);
  return w.take();
}

wire_bytes encode_error(const std::string& id, uint64_t seq, const status& e, bool terminal) {
  const bool retryable = errc_retryable(e.code);
  const bool version = e.code == errc::unsupported_version;
  message_writer w("error", id, seq, 5 + retryable + version, terminal);
  w.key("terminal").pack(terminal);
  w.key("code").pack(errc_code(e.code));
  w.key("name").pack(std::string_view(errc_name(e.code)));
  w.key("message").pack(e.message);
  w.key("retryable").pack(retryable);
  if (retryable) w.key("retry_after_ms").pack(e.retry_after_ms);
  if (version) w.key("supported").pack_array(1).pack(protocol_version);
  return w.take();
}

wire_bytes encode_pong(const std::string& id, uint64_t seq, const std::vector<uint8_t>& nonce, uint64_t server_time_ms) {
  const bool has_nonce = !nonce.empty();
  message_writer w("pong", id, seq, 1 + has_nonce);
  if (has_nonce) {
    w.key("nonce");
    w.raw(nonce);
  }
  w.key("server_time_ms").pack(server_time_ms);
  return w.take();
}

wire_bytes encode_stats(const std::string& id, uint64_t seq, const server_stats& s) {
  const engine_stats& e = s.engine;
  message_writer w("stats", id, seq, s.access_control ? 27 : 26);
  w.key("running").pack(e.running);
  w.key("waiting").pack(e.waiting);
  w.key("kv_blocks_used").pack(e.kv_blocks_used);
  w.key("kv_blocks_total").pack(e.kv_blocks_total);
  w.key("kv_type").pack(e.kv_type);
  w.key("kernel_isa").pack(e.kernel_isa);
  w.key("kv_bytes_per_token").pack(e.kv_bytes_per_token);
  w.key("kv_bytes_used").pack(e.kv_bytes_used);
  w.key("kv_bytes_full").pack(e.kv_bytes_full);
  w.key("kv_bytes_total").pack(e.kv_bytes_total);
  // One map per K/V group (memory kinds: full attention, sliding windows).
  const size_t n_groups = e.kv_group_windows.size();
  const auto at = [](const std::vector<uint32_t>& v, size_t i) { return i < v.size() ? v[i] : 0u; };
  w.key("kv_groups").pack_array(static_cast<uint32_t>(n_groups));
  for (size_t g = 0; g < n_groups; ++g) {
    w.pk().pack_map(4);
    w.key("window").pack(at(e.kv_group_windows, g));
    w.key("layers").pack(at(e.kv_group_layers, g));
    w.key("blocks_used").pack(at(e.kv_group_blocks_used, g));
    w.key("blocks_released").pack(at(e.kv_group_blocks_released, g));
  }
  w.key_f64("prefix_cache_hit_rate", e.prefix_cache_hit_rate);
  w.key("prefix_cache_enabled").pack(e.prefix_cache_enabled);
  w.key("state_slots_used").pack(e.state_slots_used);
  w.key("state_bytes_per_slot").pack(e.state_bytes_per_slot);
  w.key("tokens_generated").pack(e.tokens_generated);
  w.key("tokens_prefilled").pack(e.tokens_prefilled);
  constexpr finish_reason reasons[] = {finish_reason::stop,     finish_reason::length,   finish_reason::cancelled,
                                       finish_reason::deadline, finish_reason::shutdown, finish_reason::client_gone,
                                       finish_reason::error};
  w.key("requests_finished").pack_map(static_cast<uint32_t>(std::size(reasons)));
  for (finish_reason r : reasons) {
    const auto i = static_cast<size_t>(r);
    w.key(finish_reason_name(r)).pack(i < e.finished_by_reason.size() ? e.finished_by_reason[i] : uint64_t{0});
  }
  w.key("preemptions").pack(e.preemptions);
  w.key("spec_drafted_tokens").pack(e.spec_drafted_tokens);
  w.key("spec_accepted_tokens").pack(e.spec_accepted_tokens);
  w.key("malformed_messages").pack(s.malformed_messages);
  w.key_f64("step_batch_tokens_mean", e.step_batch_tokens_mean);
  w.key("ttft_ms");
  pack_percentiles(w, s.ttft_ms);
  w.key("itl_ms");
  pack_percentiles(w, s.itl_ms);
  w.key_f64("uptime_s", s.uptime_s);
  if (s.access_control) {
    w.key("keys").pack_map(static_cast<uint32_t>(s.keys.size()));
    for (const key_stats& k : s.keys) {
      w.key(k.id).pack_map(8);
      w.key("tier").pack(std::string_view(k.tier));
      w.key("revoked").pack(k.revoked);
      w.key("running").pack(k.running);
      w.key("admitted").pack(k.admitted);
      w.key("rejected_forbidden").pack(k.rejected_forbidden);
      w.key("rejected_limited").pack(k.rejected_limited);
      w.key("rejected_revoked").pack(k.rejected_revoked);
      w.key("tokens").pack(k.tokens);
    }
  }
  return w.take();
}

wire_bytes encode_health(const std::string& id, uint64_t seq, health_status status, bool model_loaded) {
  message_writer w("health", id, seq, 2);
  w.key("status").pack(std::string_view(health_status_name(status)));
  w.key("model_loaded").pack(model_loaded);
  return w.take();
}

wire_bytes encode_models(const std::string& id, uint64_t seq, const std::vector<model_info>& models) {
  message_writer w("models", id, seq, 1);
  w.key("models").pack_array(static_cast<uint32_t>(models.size()));
  for (const model_info& m : models) {
    w.pk().pack_map(6);
    w.key("name").pack(m.name);
    w.key("arch").pack(m.arch);
    w.key("n_ctx").pack(m.n_ctx);
    w.key("n_vocab").pack(m.n_vocab);
    w.key("quant").pack(m.quant);
    w.key("n_params").pack(m.n_params);
  }
  return w.take();
}

}  // namespace cortex::wire
