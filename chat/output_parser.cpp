#include "chat/output_parser.hpp"

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_think_open = "<think>";
constexpr std::string_view k_think_close = "</think>";

bool is_proper_prefix(std::string_view s, std::string_view of) { return s.size() < of.size() && of.substr(0, s.size()) == s; }
}  // namespace

output_parser::output_parser(output_options o) : opt_(std::move(o)), format_(make_tool_format(opt_.format)) {
  if (!format_) format_ = make_tool_format("hermes");
  if (!opt_.tools_json.empty()) {
    auto tools = nlohmann::ordered_json::parse(opt_.tools_json, nullptr, false);
    if (!tools.is_discarded()) format_->set_tools(tools);
  }
}

parsed_output output_parser::parse(bool partial) const {
  parsed_output out;
  const std::string_view text = text_;
  if (format_->own_reasoning()) {
    if (!opt_.split_reasoning && !opt_.parse_tool_calls) {
      out.content = text_;
      return out;
    }
    static_cast<const harmony_format&>(*format_).parse_channels(text, partial, opt_.split_reasoning, out);
    if (!opt_.parse_tool_calls) out.tool_calls.clear();
    return out;
  }
  std::string_view answer = text;
  if (opt_.think_tags && opt_.split_reasoning) {
    size_t start = std::string_view::npos;
    if (opt_.thinking_open) {
      start = 0;
    } else {
      const size_t p = fmt::skip_ws(text, 0);
      if (text.substr(p, k_think_open.size()) == k_think_open) start = p + k_think_open.size();
      else if (partial && is_proper_prefix(text.substr(p), k_think_open)) return out;  // may open one
    }
    if (start != std::string_view::npos) {
      const size_t e = text.find(k_think_close, start);
      std::string_view r = text.substr(start, e == std::string_view::npos ? std::string_view::npos : e - start);
      r = r.substr(fmt::skip_ws(r, 0));
      if (e == std::string_view::npos) {  // still thinking (or cut off: still reasoning)
        out.reasoning = partial ? fmt::settled(r, {k_think_close}) : fmt::rtrim(r);
        return out;
      }
      out.reasoning = fmt::rtrim(r);
      answer = text.substr(e + k_think_close.size());
      answer = answer.substr(fmt::skip_ws(answer, 0));
    }
  }
  if (opt_.parse_tool_calls) format_->parse(answer, partial, out);
  else out.content = answer;
  return out;
}

output_delta output_parser::advance(parsed_output now, bool final) {
  output_delta d;
  // Content and reasoning only grow; an end that reread the text (a call
  // that never closed) can only add what is past the text already sent.
  const auto grow = [](std::string& emitted, const std::string& now_text, std::string& delta) {
    if (now_text.size() > emitted.size()) delta = now_text.substr(emitted.size());
    emitted += delta;
  };
  grow(emitted_.content, now.content, d.content);
  grow(emitted_.reasoning, now.reasoning, d.reasoning);
  for (size_t i = emitted_.tool_calls.size(); i < now.tool_calls.size(); ++i) {
    tool_call c = std::move(now.tool_calls[i]);
    if (c.id.empty()) c.id = format_->call_id(opt_.id_seed, static_cast<uint32_t>(i));
    d.tool_calls.push_back({static_cast<uint32_t>(i), c.id, c.name, c.arguments});
    emitted_.tool_calls.push_back(std::move(c));
  }
  if (final) {  // the whole message, as a non-streamed answer reads it
    emitted_.content = std::move(now.content);
    emitted_.reasoning = std::move(now.reasoning);
  }
  return d;
}

output_delta output_parser::push(std::string_view text) {
  if (finished_ || text.empty()) return {};
  text_ += text;
  return advance(parse(true), false);
}

output_delta output_parser::finish() {
  if (finished_) return {};
  finished_ = true;
  return advance(parse(false), true);
}

parsed_output parse_output(const output_options& o, std::string_view text) {
  output_parser p(o);
  p.push(text);
  p.finish();
  return p.result();
}

}  // namespace cortex::chat
