#include "actors/intake/intake_core.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace cortex {

namespace {

uint64_t seeds_seed(uint64_t configured) {
  return configured ? configured : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

intake_core::intake_core(const intake_config& cfg, const tokenizer& tok)
    : chat_(cfg.chat),
      access_(cfg.access),
      validator_(cfg.limits, tok, seeds_seed(cfg.seed)),
      admission_(cfg.max_waiting, cfg.max_queued_tokens) {
  validator_.set_chat(chat_.get());
  if (access_) groups_ = std::make_unique<admission_groups>(access_);
}

void intake_core::apply_tier_defaults(generation_request& req) const {
  if (auto cap = access_->max_tokens_cap(req.key_id); cap && !req.params.max_tokens_given)
    req.params.max_tokens = std::min(req.params.max_tokens, *cap);
}

intake_decision intake_core::admit(generation_request req) {
  intake_decision d;
  if (draining_) {
    d.error = {errc::draining, "the server is shutting down; submit to another instance", 1000};
    return d;
  }
  if (access_) {
    if (req.key_id.empty()) {
      d.error = {errc::unauthenticated, "this server requires an API key (auth.md)", 0};
      return d;
    }
    apply_tier_defaults(req);
  }
  validation_result v = validator_.validate(req);
  if (!v.ok()) {
    d.error = std::move(v.error);
    return d;
  }
  const auto n_tokens_prompt = static_cast<uint32_t>(v.request.tokens_prompt.size());
  std::shared_ptr<auth::admission_ticket> ticket;
  if (groups_) {
    auto a = groups_->admit(req, n_tokens_prompt, v.request.max_tokens);
    if (!a.error.is_ok()) {
      d.error = std::move(a.error);
      return d;
    }
    ticket = std::move(a.ticket);
  }
  if (status err = admission_.try_admit(n_tokens_prompt); !err.is_ok()) {
    if (groups_) groups_->undo(req, ticket, err);
    d.error = std::move(err);
    return d;
  }
  // The request as the session and the scheduler see it.
  req.params.max_tokens = v.request.max_tokens;
  req.params.grammar = std::move(v.request.grammar);  // json_schema resolved into it
  req.params.json_schema.clear();
  req.output = v.request.output;
  auto& stops = req.params.stop_token_ids;
  stops.insert(stops.end(), v.request.chat_stop_ids.begin(), v.request.chat_stop_ids.end());

  intake_admission& a = d.admitted;
  a.rid = next_rid_++;
  a.n_tokens_prompt = n_tokens_prompt;
  a.queue_pos = admission_.n_waiting() - 1;
  a.sequence.rid = a.rid;
  a.sequence.tokens_prompt = std::move(v.request.tokens_prompt);
  a.sequence.params = req.params;
  a.sequence.seed = v.request.seed;
  a.sequence.priority = req.priority;
  a.sequence.n_logprobs = req.n_logprobs;
  a.sequence.kind = req.kind;
  a.request = std::move(req);
  a.ticket = std::move(ticket);
  return d;
}

void intake_core::close_group(const std::string& group) {
  if (groups_) groups_->close(group);
}

}  // namespace cortex
