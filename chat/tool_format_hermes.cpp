// Hermes 2/3, Qwen 2.5 and Qwen 3 (and the convention for templates with no
// call syntax of their own, http.md): each call is a JSON object in tags,
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// several calls one after another; the text before the first is content.
#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_open = "<tool_call>";
constexpr std::string_view k_close = "</tool_call>";
}  // namespace

void hermes_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  size_t pos = 0;
  while (true) {
    const size_t o = text.find(k_open, pos);
    if (o == std::string_view::npos) {
      fmt::add_tail_text(text.substr(pos), partial, k_open, out);
      return;
    }
    const size_t n_content = out.content.size();
    fmt::add_text_before_call(text.substr(pos, o - pos), out);
    const size_t j = o + k_open.size();
    const size_t e = fmt::json_value_end(text, j);
    tool_call c;
    if (e == std::string_view::npos || e == fmt::bad || !fmt::call_from_json(text.substr(j, e - j), {"arguments", "parameters"}, c)) {
      // A call still being written, or cut off by the end of generation
      // (max_tokens): not content, never shown as text.
      if (e == std::string_view::npos) return;
      out.content.resize(n_content);  // not a call after all: the text as it was
      out.content += text.substr(pos);
      return;
    }
    size_t k = fmt::skip_ws(text, e);
    if (text.substr(k, k_close.size()) == k_close) {
      k += k_close.size();
    } else if (k < text.size() || partial) {
      // A close tag still coming (partial), or something else: the call ends
      // at its JSON when the text does.
      if (partial && k_close.substr(0, text.size() - k) == text.substr(k)) return;
      if (partial && k == text.size()) return;
    }
    out.tool_calls.push_back(std::move(c));
    pos = k;
  }
}

std::string hermes_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal("{\"name\": \"" + t.name + "\", \"arguments\": ") + " " + t.args_rule + " \"}\"";
}

std::string hermes_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  const std::string one = "\"\\n\" " + call_rule + " \"\\n</tool_call>\"";
  if (!parallel) return one;
  return one + " (\"\\n<tool_call>\" " + one + "){0,3}";
}

}  // namespace cortex::chat
