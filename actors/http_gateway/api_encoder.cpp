#include "actors/http_gateway/api_encoder.hpp"

#include <utility>

namespace cortex::http {

std::string sse_named_event(std::string_view name, std::string_view payload) {
  std::string out;
  out.reserve(name.size() + payload.size() + 16);
  out.append("event: ").append(name).append("\ndata: ").append(payload).append("\n\n");
  return out;
}

std::string api_encoder::emit(std::string bytes) {
  started_ = started_ || !bytes.empty();
  return bytes;
}

std::string api_encoder::render(const std::vector<block_event>& evs) {
  std::string out;
  for (const auto& e : evs) out += block_events(e);
  return out;
}

std::string api_encoder::on_accepted(const request_accepted& a) {
  if (done_ || accepted_) return {};
  accepted_ = true;
  usage_.input_tokens = a.prompt_tokens;
  return streaming_ ? emit(start_events(a)) : std::string();
}

std::string api_encoder::on_chunk(const request_chunk& c) {
  if (done_) return {};
  auto evs = blocks_.add(c.reasoning, c.text, c.tool_calls);
  return streaming_ ? emit(render(evs)) : std::string();
}

std::string api_encoder::on_finished(const request_finished& f) {
  if (done_) return {};
  if (f.reason == finish_reason::error) return on_error(f.error);
  usage_ = {f.prompt_tokens, f.cached_tokens, f.completion_tokens};
  reason_ = f.reason;
  if (f.reason == finish_reason::stop && f.stop_kind == "string") stop_string_ = f.stop_value;
  auto evs = blocks_.finish(f);
  done_ = true;
  if (!streaming_) return {};
  std::string out = render(evs);  // before end_events: both number the events they make
  return emit(out + end_events(f));
}

std::string api_encoder::on_error(const status& e, std::string_view param) {
  if (done_) return {};
  done_ = true;
  has_error_ = true;
  error_ = e;
  return streaming_ ? emit(error_events(e, param)) : std::string();
}

}  // namespace cortex::http
