#include "actors/http_gateway/openai_stream.hpp"

#include <utility>

#include "actors/http_gateway/openai_error.hpp"
#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

using nlohmann::ordered_json;

std::string sse_event(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  out.append("data: ").append(payload).append("\n\n");
  return out;
}

openai_stream_encoder::openai_stream_encoder(openai_response_context ctx) : ctx_(std::move(ctx)), choices_(ctx_.n) {}

std::string openai_stream_encoder::emit(std::string bytes) {
  started_ = started_ || !bytes.empty();
  return bytes;
}

ordered_json openai_stream_encoder::chunk_head() const {
  return ordered_json{{"id", ctx_.id},
                      {"object", ctx_.endpoint == openai_endpoint::chat_completions ? "chat.completion.chunk"
                                                                                     : "text_completion"},
                      {"created", ctx_.created},
                      {"model", ctx_.model}};
}

std::string openai_stream_encoder::choice_event(uint32_t i, const std::string* text, const char* finish_reason,
                                                bool role) {
  const bool chat = ctx_.endpoint == openai_endpoint::chat_completions;
  ordered_json c = {{"index", i}};
  if (chat) {
    ordered_json delta = ordered_json::object();
    if (role) delta["role"] = "assistant";
    if (text) delta["content"] = *text;
    c["delta"] = std::move(delta);
  } else {
    c["text"] = text ? *text : std::string();
  }
  choice_logprobs& lps = choices_[i].logprobs;
  c["logprobs"] = lps.empty() ? ordered_json(nullptr) : lps.take(ctx_);
  c["finish_reason"] = finish_reason ? ordered_json(finish_reason) : ordered_json(nullptr);
  ordered_json chunk = chunk_head();
  chunk["choices"] = ordered_json::array({std::move(c)});
  if (ctx_.include_usage) chunk["usage"] = nullptr;
  return sse_event(dump_json(chunk));
}

std::string openai_stream_encoder::chat_parts_event(uint32_t i, const std::string& reasoning,
                                                    const std::vector<chat::tool_call_delta>& calls) {
  if (ctx_.endpoint != openai_endpoint::chat_completions || (reasoning.empty() && calls.empty())) return {};
  ordered_json delta = ordered_json::object();
  if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
  if (!calls.empty()) {
    ordered_json list = ordered_json::array();
    for (const auto& c : calls) {
      ordered_json fn = ordered_json::object();
      if (!c.name.empty()) fn["name"] = c.name;
      fn["arguments"] = c.arguments;
      ordered_json d = {{"index", c.index}};
      if (!c.id.empty()) d["id"] = c.id, d["type"] = "function";
      d["function"] = std::move(fn);
      list.push_back(std::move(d));
    }
    delta["tool_calls"] = std::move(list);
  }
  ordered_json c = {{"index", i}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  ordered_json chunk = chunk_head();
  chunk["choices"] = ordered_json::array({std::move(c)});
  if (ctx_.include_usage) chunk["usage"] = nullptr;
  return sse_event(dump_json(chunk));
}

std::string openai_stream_encoder::open(uint32_t i) {
  choice& ch = choices_[i];
  if (ch.opened || ctx_.endpoint != openai_endpoint::chat_completions) return ch.opened = true, std::string();
  ch.opened = true;
  static const std::string empty;
  return choice_event(i, &empty, nullptr, true);
}

std::string openai_stream_encoder::on_accepted(uint32_t i, const request_accepted&) {
  if (done_ || i >= choices_.size()) return {};
  return emit(open(i));
}

std::string openai_stream_encoder::on_chunk(uint32_t i, const request_chunk& c) {
  if (done_ || i >= choices_.size() || choices_[i].finished) return {};
  std::string out = open(i);
  choices_[i].logprobs.append(ctx_, c.logprobs);
  out += chat_parts_event(i, c.reasoning, {});
  if (!c.text.empty() || !choices_[i].logprobs.empty()) out += choice_event(i, &c.text, nullptr, false);
  out += chat_parts_event(i, {}, c.tool_calls);
  choices_[i].n_tool_calls += static_cast<uint32_t>(c.tool_calls.size());
  return emit(std::move(out));
}

std::string openai_stream_encoder::on_finished(uint32_t i, const request_finished& f) {
  if (done_ || i >= choices_.size() || choices_[i].finished) return {};
  if (f.reason == finish_reason::error) return on_error(f.error);
  choice& ch = choices_[i];
  std::string out = open(i);
  ch.logprobs.append(ctx_, f.logprobs);
  out += chat_parts_event(i, f.reasoning, {});
  if (!f.text.empty() || !ch.logprobs.empty()) out += choice_event(i, &f.text, nullptr, false);
  std::vector<chat::tool_call_delta> calls;  // the calls no chunk carried, numbered after those sent
  for (const auto& c : f.tool_calls) calls.push_back({ch.n_tool_calls++, c.id, c.name, c.arguments});
  out += chat_parts_event(i, {}, calls);
  out += choice_event(i, nullptr, openai_finish_reason(f.reason, f.has_tool_calls), false);
  ch.finished = true;
  usage_.add(f);
  if (++n_finished_ == choices_.size()) {
    if (ctx_.include_usage) {
      ordered_json chunk = chunk_head();
      chunk["choices"] = ordered_json::array();
      chunk["usage"] = usage_.to_json();
      out += sse_event(dump_json(chunk));
    }
    out += sse_done;
    done_ = true;
  }
  return emit(std::move(out));
}

std::string openai_stream_encoder::on_error(const status& e, std::string_view param) {
  if (done_) return {};
  done_ = true;
  return emit(sse_event(openai_error_body(e, param)) + std::string(sse_done));
}

}  // namespace cortex::http
