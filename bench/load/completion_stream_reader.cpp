#include "bench/load/completion_stream_reader.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace cortex::load {

using json = nlohmann::json;

std::string error_name(const json& error, const std::string& fallback) {
  // cortexd names the error in `code`; llama-server's code is the HTTP status and `type` the name.
  std::string name = fallback;
  for (const char* key : {"type", "code"}) {
    if (!error.is_object()) break;
    if (auto v = error.find(key); v != error.end() && v->is_string()) name = v->get<std::string>();
  }
  return name;
}

void completion_stream_reader::feed(std::string_view bytes, load_clock::time_point at, std::vector<load_event>& out) {
  while (!bytes.empty() && !done_) {
    const size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      line_.append(bytes);
      return;
    }
    line_.append(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {  // a blank line ends the event
      if (has_data_) dispatch(data_, at, out);
      data_.clear();
      has_data_ = false;
    } else if (line_.compare(0, 5, "data:") == 0) {
      std::string_view v(line_);
      v.remove_prefix(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (has_data_) data_ += '\n';
      data_.append(v);
      has_data_ = true;
    }
    line_.clear();
  }
}

void completion_stream_reader::dispatch(const std::string& data, load_clock::time_point at, std::vector<load_event>& out) {
  load_event e;
  e.request = request_;
  e.at = at;
  if (data == "[DONE]") {
    done_ = true;
    e.what = load_event::kind::finished;
    e.reason = reason_.empty() ? "missing_finish_reason" : reason_;
    e.completion_tokens = completion_tokens_;
    out.push_back(std::move(e));
    return;
  }
  const json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  if (auto err = j.find("error"); err != j.end()) {
    done_ = true;
    e.what = load_event::kind::error;
    e.error_name = error_name(*err, "error");
    out.push_back(std::move(e));
    return;
  }
  if (format_ == completion_format::llama_server) return dispatch_llama_server(j, e, out);
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) completion_tokens_ = u->value("completion_tokens", 0);
  const auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) return;
  const json& c = (*choices)[0];
  if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) reason_ = fr->get<std::string>();
  const auto text = c.find("text");
  e.has_text = text != c.end() && text->is_string() && !text->get_ref<const std::string&>().empty();
  e.n_tokens = e.has_text ? 1 : 0;
  if (auto lp = c.find("logprobs"); lp != c.end() && lp->is_object()) {
    if (auto tokens = lp->find("tokens"); tokens != lp->end() && tokens->is_array()) e.n_tokens = int(tokens->size());
  }
  if (e.has_text || e.n_tokens > 0) {
    e.what = load_event::kind::chunk;
    out.push_back(std::move(e));
  }
}

void completion_stream_reader::dispatch_llama_server(const json& j, load_event& e, std::vector<load_event>& out) {
  const auto content = j.find("content");
  e.has_text = content != j.end() && content->is_string() && !content->get_ref<const std::string&>().empty();
  // tokens_predicted counts every token decoded so far, also those the
  // server sent no event for (their text was incomplete UTF-8): exact.
  const auto predicted = j.find("tokens_predicted");
  const auto tokens = j.find("tokens");
  if (predicted != j.end() && predicted->is_number_integer()) {
    e.n_tokens = std::max(0, predicted->get<int>() - completion_tokens_);
  } else {
    e.n_tokens = tokens != j.end() && tokens->is_array() ? int(tokens->size()) : e.has_text ? 1 : 0;
  }
  completion_tokens_ += e.n_tokens;
  const auto stop = j.find("stop");
  if (stop == j.end() || !stop->is_boolean() || !stop->get<bool>()) {
    if (e.n_tokens > 0) {
      e.what = load_event::kind::chunk;
      out.push_back(std::move(e));
    }
    return;
  }
  if (e.n_tokens > 0) {  // the last event may carry a token of its own
    load_event c = e;
    c.what = load_event::kind::chunk;
    out.push_back(std::move(c));
  }
  done_ = true;
  const std::string type = j.value("stop_type", std::string());
  e.what = load_event::kind::finished;
  e.reason = type == "limit" ? "length" : type == "eos" || type == "word" ? "stop" : type;
  e.completion_tokens = j.value("tokens_predicted", completion_tokens_);
  e.n_tokens = 0;
  out.push_back(std::move(e));
}

}  // namespace cortex::load
