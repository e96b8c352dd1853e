#include "actors/session/session_core.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace cortex {

const char* session_state_name(session_state s) {
  switch (s) {
    case session_state::queued: return "queued";
    case session_state::prefilling: return "prefilling";
    case session_state::decoding: return "decoding";
    case session_state::finished: return "finished";
  }
  return "unknown";
}

session_core::session_core(const tokenizer& tok, session_config cfg, session_clock clock)
    : tok_(tok),
      cfg_(std::move(cfg)),
      clock_(std::move(clock)),
      // A grammar matched the tokens' exact bytes: no space cleaning after it.
      detok_(tok, /*continues_text=*/true, /*verbatim=*/!cfg_.request.params.grammar.empty()),
      matcher_(cfg_.request.params.stop) {
  t_accepted_ = clock_();
  const chat_output_spec& o = cfg_.request.output;
  if (o.active && cfg_.request.want_text) {
    chat::output_options opt;
    opt.format = o.format;
    opt.parse_tool_calls = o.parse_tool_calls;
    opt.think_tags = o.think_tags;
    opt.thinking_open = o.thinking_open;
    opt.split_reasoning = o.split_reasoning;
    opt.tools_json = cfg_.request.tools_json;
    opt.id_seed = cfg_.rid * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(t_accepted_ * 1000.0);
    parser_ = std::make_unique<chat::output_parser>(std::move(opt));
  }
}

bool session_core::on_scheduled(uint32_t cached_tokens) {
  if (state_ == session_state::finished) return false;
  if (state_ != session_state::queued) {
    assert(!"session_core::on_scheduled: not queued");
    return false;
  }
  t_scheduled_ = clock_();
  n_cached_ = cached_tokens;
  state_ = session_state::prefilling;
  return true;
}

bool session_core::on_prefill_done() {
  if (state_ == session_state::finished) return false;
  if (state_ == session_state::queued) {
    assert(!"session_core::on_prefill_done: still queued");
    return false;
  }
  if (state_ == session_state::prefilling) enter_decoding(clock_());
  return true;
}

bool session_core::on_preemptions(uint32_t total) {
  if (state_ == session_state::finished) return false;
  n_preemptions_ = std::max(n_preemptions_, total);
  return true;
}

void session_core::enter_decoding(double now) {
  t_decoding_ = now;
  state_ = session_state::decoding;
}

session_events session_core::on_tokens(const std::vector<sampled_output>& tokens) {
  session_events ev;
  if (state_ == session_state::finished) return ev;
  const double now = clock_();
  if (state_ == session_state::queued) {
    assert(!"session_core::on_tokens: tokens before on_scheduled");
    t_scheduled_ = now;  // release builds: the missed on_scheduled(0) is implied
    state_ = session_state::prefilling;
  }
  ev.applied = true;
  if (tokens.empty()) return ev;
  if (state_ == session_state::prefilling) enter_decoding(now);
  if (!t_first_token_) t_first_token_ = now;

  const generation_request& req = cfg_.request;
  const request_params& p = req.params;
  std::string text;
  std::vector<int32_t> ids;
  std::vector<token_logprob> logprobs;
  std::optional<finish_reason> reason;
  for (const sampled_output& t : tokens) {
    ++n_generated_;
    ids.push_back(t.token);
    if (req.n_logprobs > 0) {
      token_logprob lp = t.logprob;
      lp.id = t.token;
      const size_t n_top = std::min<size_t>(req.n_logprobs, std::min(lp.top_ids.size(), lp.top_lps.size()));
      lp.top_ids.resize(n_top);
      lp.top_lps.resize(n_top);
      logprobs.push_back(std::move(lp));
    }
    // A stopping token needs min_tokens tokens before it; until then it is an
    // ordinary token (EOS then renders as nothing).
    const token_stop by_token = stop_by_token(p, tok_.is_eog(t.token), t.token, n_generated_);
    if (by_token != token_stop::none) {
      reason = finish_reason::stop;
      stop_kind_ = by_token == token_stop::eos ? "eos" : "token";
      stop_value_ = std::to_string(t.token);
      break;
    }
    std::string piece = detok_.push(t.token);
    // A control token is text to a parser (a family's markers) and to a
    // grammar (it matched the token by its text): both see it.
    if ((parser_ || !req.params.grammar.empty()) && piece.empty() && tok_.rendered_piece(t.token).empty() && !tok_.is_eog(t.token))
      piece = tok_.special_piece(t.token);
    stop_matcher::result r = matcher_.push(piece);
    text += r.text;
    if (r.match >= 0) {
      reason = finish_reason::stop;
      stop_kind_ = "string";
      stop_value_ = matcher_.stops()[static_cast<size_t>(r.match)];
      break;
    }
    if (length_reached(n_generated_, p.max_tokens)) {
      reason = finish_reason::length;
      break;
    }
  }

  if (!req.want_text) text.clear();
  if (!req.want_token_ids) ids.clear();
  chat::output_delta parsed;
  if (parser_) {
    parsed = parser_->push(text);
    text = std::move(parsed.content);
  }
  if (req.stream) {
    if (!text.empty() || !ids.empty() || !logprobs.empty() || !parsed.reasoning.empty() || !parsed.tool_calls.empty()) {
      request_chunk c;
      c.rid = cfg_.rid;
      c.client_id = req.client_id;
      c.text = std::move(text);
      c.reasoning = std::move(parsed.reasoning);
      c.tool_calls = std::move(parsed.tool_calls);
      c.token_ids = std::move(ids);
      c.logprobs = std::move(logprobs);
      ev.chunk = std::move(c);
    }
  } else {
    all_text_ += text;
    all_ids_.insert(all_ids_.end(), ids.begin(), ids.end());
    for (auto& lp : logprobs) all_logprobs_.push_back(std::move(lp));
  }
  if (reason) ev.finished = end(*reason, {}, now).finished;
  return ev;
}

session_events session_core::on_update(const session_update& u) {
  if (state_ == session_state::finished) return {};
  if (u.started && state_ == session_state::queued) on_scheduled(u.cached_tokens);
  on_preemptions(u.preemptions);
  n_spec_drafted_ += u.spec_drafted;
  n_spec_accepted_ += u.spec_accepted;
  if (u.prefill_done) on_prefill_done();
  if (!u.embedding.empty()) {  // an embed request is done once its prompt is
    embedding_ = u.embedding;
    return end(finish_reason::stop, {}, clock_());
  }
  if (!u.tokens.empty()) return on_tokens(u.tokens);
  session_events ev;
  ev.applied = true;
  return ev;
}

session_events session_core::finish(finish_reason reason, status error) {
  if (state_ == session_state::finished) return {};
  return end(reason, std::move(error), clock_());
}

std::optional<double> session_core::deadline_at_ms() const {
  if (cfg_.request.deadline_ms == 0) return std::nullopt;
  return t_accepted_ + static_cast<double>(cfg_.request.deadline_ms);
}

session_events session_core::check_deadline() {
  if (state_ == session_state::finished) return {};
  const auto at = deadline_at_ms();
  const double now = clock_();
  if (!at || now < *at) {
    session_events ev;
    ev.applied = true;
    return ev;
  }
  return end(finish_reason::deadline, {}, now);
}

request_timings session_core::timings(double now) const {
  request_timings t;
  t.total_ms = now - t_accepted_;
  t.queue_ms = t_scheduled_.value_or(now) - t_accepted_;
  if (t_scheduled_) t.prefill_ms = t_decoding_.value_or(now) - *t_scheduled_;
  if (t_first_token_) {
    t.ttft_ms = *t_first_token_ - t_accepted_;
    t.decode_ms = now - *t_first_token_;
    // Decode throughput: the first token's time is ttft, not decode.
    if (t.decode_ms > 0 && n_generated_ > 1) t.tokens_per_s = (n_generated_ - 1) * 1000.0 / t.decode_ms;
  }
  t.spec_drafted_tokens = n_spec_drafted_;
  t.spec_accepted_tokens = n_spec_accepted_;
  return t;
}

session_events session_core::end(finish_reason reason, status error, double now) {
  const generation_request& req = cfg_.request;
  // Generation is over: the detokenizer's incomplete bytes and the held-back
  // text are released (a stop string may still cut the flushed tail).
  std::string tail;
  if (!matcher_.matched()) {
    tail = matcher_.push(detok_.flush()).text;
    if (!matcher_.matched()) tail += matcher_.flush();
  }

  request_finished f;
  f.rid = cfg_.rid;
  f.client_id = req.client_id;
  f.reason = reason;
  if (reason == finish_reason::stop) {
    f.stop_kind = stop_kind_;
    f.stop_value = stop_value_;
  }
  if (reason == finish_reason::error) f.error = as_request_error(std::move(error));
  if (parser_) {  // the rest of the chat output, read to its end
    chat::output_delta d = parser_->push(tail);
    chat::output_delta last = parser_->finish();
    const chat::parsed_output& whole = parser_->result();
    f.has_tool_calls = !whole.tool_calls.empty();
    if (req.stream) {
      tail = d.content + last.content;
      f.reasoning = d.reasoning + last.reasoning;
      for (auto* part : {&d, &last})
        for (auto& c : part->tool_calls) f.tool_calls.push_back({c.id, c.name, c.arguments});
    } else {
      all_text_.clear();
      tail = whole.content;
      f.reasoning = whole.reasoning;
      f.tool_calls = whole.tool_calls;
    }
  }
  if (req.stream) {
    if (req.want_text) f.text = std::move(tail);
  } else {
    if (req.want_text) f.text = std::move(all_text_) + tail;
    f.token_ids = std::move(all_ids_);
    f.logprobs = std::move(all_logprobs_);
  }
  f.prompt_tokens = cfg_.n_tokens_prompt;
  f.cached_tokens = n_cached_;
  f.completion_tokens = n_generated_;
  f.timings = timings(now);
  f.preemptions = n_preemptions_;
  f.tags = req.tags;
  f.embedding = std::move(embedding_);

  state_ = session_state::finished;
  session_events ev;
  ev.applied = true;
  ev.finished = std::move(f);
  return ev;
}

}  // namespace cortex
