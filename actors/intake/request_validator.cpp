#include "actors/intake/request_validator.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <utility>

#include "grammar/grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"

namespace cortex {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

constexpr size_t max_grammar_bytes = 1u << 20;

status refuse(errc code, std::string message) { return status{code, std::move(message)}; }

bool in_vocab(int32_t id, int32_t n_vocab) { return id >= 0 && id < n_vocab; }

std::string not_a_token(const std::string& field, int32_t id, int32_t n_vocab) {
  return field + " = " + std::to_string(id) + " is not a token id: ids must be in [0, " + std::to_string(n_vocab) +
         ")";
}

// The sampling and stopping parameters that need no tokenizer.
status check_params(const request_params& p, const validation_limits& lim) {
  if (p.max_tokens == 0) return refuse(errc::invalid_param, "params.max_tokens must be >= 1, got 0");
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return refuse(errc::invalid_param,
                "params.temperature must be a finite number >= 0 (0 = greedy), got " + num(p.temperature));
  if (p.top_k < 0) return refuse(errc::invalid_param, "params.top_k must be >= 0 (0 = off), got " + std::to_string(p.top_k));
  if (!(p.top_p > 0 && p.top_p <= 1)) return refuse(errc::invalid_param, "params.top_p must be in (0, 1], got " + num(p.top_p));
  if (!(p.min_p >= 0 && p.min_p <= 1)) return refuse(errc::invalid_param, "params.min_p must be in [0, 1], got " + num(p.min_p));
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0)
    return refuse(errc::invalid_param, "params.repetition_penalty must be a finite number > 0 (1 = off), got " +
                                         num(p.repetition_penalty));
  if (!std::isfinite(p.presence_penalty))
    return refuse(errc::invalid_param, "params.presence_penalty must be a finite number, got " + num(p.presence_penalty));
  if (!std::isfinite(p.frequency_penalty))
    return refuse(errc::invalid_param, "params.frequency_penalty must be a finite number, got " + num(p.frequency_penalty));
  if (p.penalty_last_n < -1)
    return refuse(errc::invalid_param, "params.penalty_last_n must be >= -1 (-1 = whole history, 0 = off), got " +
                                         std::to_string(p.penalty_last_n));
  if (p.min_tokens > p.max_tokens)
    return refuse(errc::invalid_param, "params.min_tokens (" + std::to_string(p.min_tokens) +
                                         ") must not exceed params.max_tokens (" + std::to_string(p.max_tokens) + ")");

  if (p.stop.size() > lim.max_stop_strings)
    return refuse(errc::too_large, "params.stop has " + std::to_string(p.stop.size()) + " strings; at most " +
                                     std::to_string(lim.max_stop_strings) + " are allowed");
  for (size_t i = 0; i < p.stop.size(); ++i) {
    const std::string field = "params.stop[" + std::to_string(i) + "]";
    if (p.stop[i].empty()) return refuse(errc::invalid_param, field + " is empty; stop strings must be non-empty");
    if (p.stop[i].size() > lim.max_stop_bytes)
      return refuse(errc::too_large, field + " is " + std::to_string(p.stop[i].size()) + " bytes; at most " +
                                       std::to_string(lim.max_stop_bytes) + " are allowed");
    if (!is_valid_utf8(p.stop[i])) return refuse(errc::invalid_param, field + " is not valid UTF-8");
  }
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i)
    if (!in_vocab(p.stop_token_ids[i], lim.n_vocab))
      return refuse(errc::invalid_param,
                  not_a_token("params.stop_token_ids[" + std::to_string(i) + "]", p.stop_token_ids[i], lim.n_vocab));

  if (p.logit_bias_ids.size() != p.logit_bias_values.size())
    return refuse(errc::invalid_param, "params.logit_bias: " + std::to_string(p.logit_bias_ids.size()) + " ids but " +
                                         std::to_string(p.logit_bias_values.size()) + " values");
  if (p.logit_bias_ids.size() > lim.max_logit_bias)
    return refuse(errc::too_large, "params.logit_bias has " + std::to_string(p.logit_bias_ids.size()) +
                                     " entries; at most " + std::to_string(lim.max_logit_bias) + " are allowed");
  for (size_t i = 0; i < p.logit_bias_ids.size(); ++i) {
    const int32_t id = p.logit_bias_ids[i];
    if (!in_vocab(id, lim.n_vocab)) return refuse(errc::invalid_param, not_a_token("params.logit_bias key", id, lim.n_vocab));
    const float v = p.logit_bias_values[i];
    if (!(v >= -100 && v <= 100))
      return refuse(errc::invalid_param, "params.logit_bias[" + std::to_string(id) + "] must be in [-100, 100], got " + num(v));
  }
  return status::ok();
}

// A grammar the executor will run: it compiles and does not start with too
// many open parses. Errors name `field`.
status check_grammar(const std::string& gbnf, const std::string& field) {
  auto c = grammar::compile(gbnf);
  if (!c) return refuse(errc::invalid_param, field + ": " + c.error().message);
  // The executor refuses a state with too many open parses at any step;
  // one that starts that way is refused here, before it is queued.
  const size_t open = grammar_matcher(*c).initial().stacks.size();
  if (open > grammar_matcher::max_open_stacks) {
    return refuse(errc::invalid_param, field + ": the grammar opens " + std::to_string(open) +
                                           " parses at its start, more than the " + std::to_string(grammar_matcher::max_open_stacks) +
                                           " allowed (too many alternatives, or optional properties, at one place)");
  }
  return status::ok();
}

// Structured output: params.json_schema becomes a grammar; either must
// compile (grammar/), its errors naming the field.
status resolve_grammar(const generation_request& r, std::string& gbnf) {
  const request_params& p = r.params;
  if (p.grammar.empty() && p.json_schema.empty()) return status::ok();
  if (!p.grammar.empty() && !p.json_schema.empty())
    return refuse(errc::invalid_param, "give params.grammar or params.json_schema, not both");
  if (r.kind == request_kind::embed) return refuse(errc::invalid_param, "an embedding request takes no grammar or json_schema");
  const char* field = p.grammar.empty() ? "params.json_schema" : "params.grammar";
  if (std::max(p.grammar.size(), p.json_schema.size()) > max_grammar_bytes)
    return refuse(errc::too_large, std::string(field) + " is over " + std::to_string(max_grammar_bytes) + " bytes");
  if (!p.json_schema.empty()) {
    auto g = json_schema_to_gbnf(p.json_schema);
    if (!g) return refuse(errc::invalid_param, "params." + g.error().message);
    gbnf = std::move(*g);
  } else {
    gbnf = p.grammar;
  }
  return check_grammar(gbnf, field);
}

}  // namespace

bool is_valid_utf8(const std::string& s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

request_validator::request_validator(validation_limits limits, const tokenizer& tok, uint64_t seeds_seed)
    : limits_(limits), tok_(tok), seeds_(seeds_seed) {
  for (int32_t id = 0; id < tok_.n_vocab(); ++id) max_piece_bytes_ = std::max(max_piece_bytes_, tok_.token_to_piece(id).size());
  max_piece_bytes_ = std::max<size_t>(max_piece_bytes_, 4);  // a byte-fallback or U+FFFD token covers up to 4 input bytes
}

validation_result request_validator::validate(const generation_request& r) {
  validation_result out;
  auto reject = [&](status e) {
    out.error = std::move(e);
    return out;
  };

  if (r.client_id.empty()) return reject(refuse(errc::invalid_param, "id must be 1.." + std::to_string(limits_.max_id_bytes) + " bytes, got an empty id"));
  if (r.client_id.size() > limits_.max_id_bytes)
    return reject(refuse(errc::too_large, "id is " + std::to_string(r.client_id.size()) + " bytes; at most " +
                                            std::to_string(limits_.max_id_bytes) + " are allowed"));
  if (r.n_logprobs > limits_.max_logprobs)
    return reject(refuse(errc::invalid_param, "want.logprobs must be in 0.." + std::to_string(limits_.max_logprobs) +
                                                " (0 = off), got " + std::to_string(r.n_logprobs)));
  if (limits_.embeds_only) {
    const std::string model = "model '" + limits_.model_name + "'";
    if (r.kind != request_kind::embed) {
      return reject(refuse(errc::invalid_param, model + " is an embedding model and only embeds (/v1/embeddings, "
                                                        "/v1/rerank): it cannot generate text"));
    }
    if (limits_.output == encoder_output::per_token) {
      return reject(refuse(errc::invalid_param, model + " pools nothing (pooling_type none: one vector per token); "
                                                        "an embedding request needs a pooled model"));
    }
    if (limits_.output == encoder_output::score && r.document.empty()) {
      return reject(refuse(errc::invalid_param, model + " is a reranker (pooling_type rank): it scores documents "
                                                        "against a query (/v1/rerank) and gives no embeddings"));
    }
  }
  if (!r.document.empty() && !(limits_.embeds_only && limits_.output == encoder_output::score)) {
    return reject(refuse(errc::invalid_param, "model '" + limits_.model_name + "' is not a reranker (pooling_type rank): "
                                              "it cannot score documents; use /v1/embeddings"));
  }
  status params = check_params(r.params, limits_);
  if (!params.is_ok()) return reject(std::move(params));
  if (auto e = resolve_grammar(r, out.request.grammar); !e.is_ok()) return reject(std::move(e));

  std::vector<int32_t> prompt;
  if (!r.messages_json.empty()) {
    if (r.use_tokens || !r.prompt.empty())
      return reject(refuse(errc::invalid_param, "give exactly one of prompt / tokens / messages, not several"));
    if (!chat_) return reject(refuse(errc::unsupported, "this server renders no chat messages; send prompt or tokens"));
    chat_render_result chat;
    if (auto e = chat_prompt_tokens(*chat_, tok_, r, out.request.grammar, chat); !e.is_ok()) return reject(std::move(e));
    prompt = std::move(chat.prompt);
    if (prompt.empty()) return reject(refuse(errc::invalid_param, "messages rendered to an empty prompt"));
    if (chat.grammar != out.request.grammar) {  // a tool call's grammar, or the request's after the reasoning
      if (auto e = check_grammar(chat.grammar, r.tools_json.empty() ? "params.grammar" : "tools"); !e.is_ok())
        return reject(std::move(e));
      out.request.grammar = std::move(chat.grammar);
    }
    out.request.output = chat.output;
    out.request.chat_stop_ids = chat_->stop_ids;
  } else if (!r.document.empty()) {
    if (r.use_tokens || r.prompt.empty())
      return reject(refuse(errc::invalid_param, "a rerank request gives the query as text (prompt) and the document"));
    const size_t n_ctx_bytes = static_cast<size_t>(std::max(limits_.n_ctx, 0)) * max_piece_bytes_;
    if (r.prompt.size() + r.document.size() > n_ctx_bytes)
      return reject(refuse(errc::context_overflow, "the query and document are " +
                                                       std::to_string(r.prompt.size() + r.document.size()) +
                                                       " bytes, more than the context of " + std::to_string(limits_.n_ctx) +
                                                       " tokens can hold; shorten them"));
    prompt = tok_.encode_pair(r.prompt, r.document);
  } else if (r.use_tokens) {
    if (!r.prompt.empty()) return reject(refuse(errc::invalid_param, "give exactly one of prompt / tokens, not both"));
    if (r.tokens.empty()) return reject(refuse(errc::invalid_param, "tokens is empty; give at least one token id"));
    for (size_t i = 0; i < r.tokens.size(); ++i)
      if (!in_vocab(r.tokens[i], limits_.n_vocab))
        return reject(refuse(errc::invalid_param, not_a_token("tokens[" + std::to_string(i) + "]", r.tokens[i], limits_.n_vocab)));
    prompt = r.tokens;
  } else {
    // Cost before checks (protocol.md): no token covers more than
    // max_piece_bytes_ bytes of text, so a prompt longer than the context
    // times that cannot fit, whatever it tokenizes to: 422 without tokenizing it.
    const size_t n_ctx_bytes = static_cast<size_t>(std::max(limits_.n_ctx, 0)) * max_piece_bytes_;
    if (r.prompt.size() > n_ctx_bytes)
      return reject(refuse(errc::context_overflow,
                           "the prompt is " + std::to_string(r.prompt.size()) + " bytes: at least " +
                               std::to_string(r.prompt.size() / max_piece_bytes_) + " tokens, and the context holds " +
                               std::to_string(limits_.n_ctx) + "; shorten it"));
    const bool add_bos = r.add_bos < 0 ? tok_.add_bos() : r.add_bos != 0;
    if (limits_.embeds_only) {
      prompt = tok_.encode(r.prompt, /*add_special=*/add_bos);  // framed as the vocabulary says: [CLS] ... [SEP]
    } else {
      if (add_bos) prompt.push_back(tok_.bos_id());
      const std::vector<int32_t> text_ids = tok_.encode(r.prompt, /*add_special=*/false);
      prompt.insert(prompt.end(), text_ids.begin(), text_ids.end());
    }
    if (prompt.empty())
      return reject(refuse(errc::invalid_param, "the prompt is empty and add_bos is false: give a prompt or set add_bos"));
  }

  const size_t n_ctx = limits_.n_ctx > 0 ? static_cast<size_t>(limits_.n_ctx) : 0;
  if (r.kind == request_kind::embed && prompt.size() > n_ctx)  // prefill only: the input may fill the context
    return reject(refuse(errc::context_overflow, "the input is " + std::to_string(prompt.size()) +
                                                   " tokens; the context holds " + std::to_string(n_ctx) +
                                                   ": shorten it to at most " + std::to_string(n_ctx) + " tokens"));
  if (r.kind != request_kind::embed && prompt.size() >= n_ctx)
    return reject(refuse(errc::context_overflow,
                       "the prompt is " + std::to_string(prompt.size()) + " tokens; the context holds " +
                           std::to_string(n_ctx) + " and at least one must be left to generate: shorten it to at most " +
                           std::to_string(n_ctx == 0 ? 0 : n_ctx - 1) + " tokens"));

  validated_request& v = out.request;
  v.max_tokens = static_cast<uint32_t>(std::min<size_t>(r.params.max_tokens, n_ctx - prompt.size()));
  v.tokens_prompt = std::move(prompt);
  // Drawn here, not in the sampler, so that the seed can be logged and the
  // request replayed.
  v.seed = r.params.has_seed ? r.params.seed : seeds_();
  out.error = status::ok();
  return out;
}

admission_limits::admission_limits(uint32_t max_waiting, uint64_t max_queued_tokens, uint32_t retry_after_ms)
    : max_waiting_(max_waiting), max_queued_tokens_(max_queued_tokens), retry_after_ms_(retry_after_ms) {}

status admission_limits::try_admit(uint32_t n_tokens_prompt) {
  if (n_waiting_ > 0) {
    std::string why;
    if (n_waiting_ >= max_waiting_)
      why = std::to_string(n_waiting_) + " requests are waiting (limit " + std::to_string(max_waiting_) + ")";
    else if (n_queued_tokens_ + n_tokens_prompt > max_queued_tokens_)
      why = std::to_string(n_queued_tokens_) + " prompt tokens are queued and this request adds " +
            std::to_string(n_tokens_prompt) + " (limit " + std::to_string(max_queued_tokens_) + ")";
    if (!why.empty()) {
      status e = refuse(errc::overloaded, "the server is overloaded: " + why + "; retry after " +
                                                  std::to_string(retry_after_ms_) + " ms");
      e.retry_after_ms = retry_after_ms_;
      return e;
    }
  } else if (max_waiting_ == 0) {
    status e = refuse(errc::overloaded, "the server admits no waiting requests (limit 0); retry after " +
                                                std::to_string(retry_after_ms_) + " ms");
    e.retry_after_ms = retry_after_ms_;
    return e;
  }
  ++n_waiting_;
  n_queued_tokens_ += n_tokens_prompt;
  return status::ok();
}

bool admission_limits::release(uint32_t n_tokens_prompt) {
  const bool consistent = n_waiting_ > 0 && n_queued_tokens_ >= n_tokens_prompt;
  assert(consistent && "admission_limits::release without a matching admit");
  if (n_waiting_ > 0) --n_waiting_;
  n_queued_tokens_ -= std::min<uint64_t>(n_queued_tokens_, n_tokens_prompt);
  return consistent;
}

}  // namespace cortex
