#include "actors/http_gateway/openai_choice.hpp"

#include <algorithm>

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

using nlohmann::ordered_json;

namespace {

constexpr double banned_logprob = -9999.0;  // what OpenAI reports for a token that cannot occur

ordered_json byte_values(const std::string& s) {
  ordered_json out = ordered_json::array();
  for (char c : s) out.push_back(static_cast<unsigned char>(c));
  return out;
}

ordered_json chat_entry(const std::string& text, float lp) {
  return ordered_json{{"token", text}, {"logprob", json_float(lp, banned_logprob)}, {"bytes", byte_values(text)}};
}

// The logprobs object of a choice with no tokens yet.
ordered_json empty_logprobs(bool chat) {
  if (chat) return ordered_json{{"content", ordered_json::array()}};
  return ordered_json{{"tokens", ordered_json::array()},
                      {"token_logprobs", ordered_json::array()},
                      {"top_logprobs", ordered_json::array()},
                      {"text_offset", ordered_json::array()}};
}

}  // namespace

openai_response_context make_response_context(const openai_request& r, std::string id, int64_t created,
                                              token_text_fn token_text) {
  openai_response_context ctx;
  ctx.endpoint = r.endpoint;
  ctx.id = std::move(id);
  ctx.created = created;
  ctx.model = r.model;
  ctx.n = r.n;
  ctx.logprobs = r.logprobs;
  ctx.top_logprobs = r.top_logprobs;
  ctx.include_usage = r.include_usage;
  ctx.token_text = std::move(token_text);
  return ctx;
}

const char* openai_finish_reason(finish_reason r, bool has_tool_calls) {
  return r == finish_reason::stop && has_tool_calls ? "tool_calls" : finish_reason_name(r);
}

void choice_logprobs::append(const openai_response_context& ctx, const std::vector<token_logprob>& lps) {
  if (!ctx.logprobs || lps.empty()) return;
  const bool chat = ctx.endpoint == openai_endpoint::chat_completions;
  if (json_.is_null()) json_ = empty_logprobs(chat);
  for (const token_logprob& t : lps) {
    const std::string text = ctx.token_text(t.id);
    const size_t n_top = std::min<size_t>({ctx.top_logprobs, t.top_ids.size(), t.top_lps.size()});
    if (chat) {
      ordered_json entry = chat_entry(text, t.lp);
      ordered_json top = ordered_json::array();
      for (size_t k = 0; k < n_top; ++k) top.push_back(chat_entry(ctx.token_text(t.top_ids[k]), t.top_lps[k]));
      entry["top_logprobs"] = std::move(top);
      json_["content"].push_back(std::move(entry));
    } else {
      ordered_json top = ordered_json::object();
      for (size_t k = 0; k < n_top; ++k)  // two ids with the same text: the likelier one's entry stays
        top.emplace(ctx.token_text(t.top_ids[k]), json_float(t.top_lps[k], banned_logprob));
      json_["tokens"].push_back(text);
      json_["token_logprobs"].push_back(json_float(t.lp, banned_logprob));
      json_["top_logprobs"].push_back(std::move(top));
      json_["text_offset"].push_back(text_offset_);
      text_offset_ += text.size();
    }
    ++n_tokens_;
  }
}

ordered_json choice_logprobs::get(const openai_response_context& ctx) const {
  if (!ctx.logprobs) return nullptr;
  return json_.is_null() ? empty_logprobs(ctx.endpoint == openai_endpoint::chat_completions) : json_;
}

ordered_json choice_logprobs::take(const openai_response_context& ctx) {
  ordered_json out = get(ctx);
  json_ = nullptr;
  n_tokens_ = 0;
  return out;
}

void usage_totals::add(const request_finished& f) {
  prompt_ = any_ ? prompt_ : f.prompt_tokens;
  cached_ = any_ ? std::min(cached_, f.cached_tokens) : f.cached_tokens;
  completion_ += f.completion_tokens;
  any_ = true;
}

ordered_json usage_totals::to_json() const {
  return ordered_json{{"prompt_tokens", prompt_},
                      {"completion_tokens", completion_},
                      {"total_tokens", prompt_ + completion_},
                      {"prompt_tokens_details", {{"cached_tokens", cached_}}}};
}

}  // namespace cortex::http
