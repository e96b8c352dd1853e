// MeetKai Functionary v3.2 (Llama 3 based): the answer is a run of
// "recipient" segments, the first right after the generation prompt's ">>>",
// each later one after another ">>>":
//   all\nSure, let me check.>>>get_weather\n{"city": "Paris"}
// "all" is text for the user; any other recipient is a call of that function
// with the segment as its JSON arguments (the template renders calls back
// the same way: '>>>' + name + '\n' + arguments).
#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_sep = ">>>";
constexpr std::string_view k_text = "all";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}
}  // namespace

void functionary_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find(k_sep, pos);
    const bool last = next == std::string_view::npos;
    if (last) next = text.size();
    const std::string_view seg = text.substr(pos, next - pos);
    const size_t nl = seg.find('\n');
    // The recipient: a name then a newline. Until the newline comes (or when
    // the segment is not of that shape) nothing is decided while partial.
    bool named = nl != std::string_view::npos && nl > 0;
    for (size_t i = 0; named && i < nl; ++i) named = is_name_char(seg[i]);
    if (!named) {
      if (partial && last) {
        bool prefix = true;  // still a possible recipient
        for (char c : seg) prefix = prefix && is_name_char(c);
        if (prefix) return;
      }
      out.content += last && partial ? fmt::settled(seg, {k_sep}) : seg;  // free text: as written
    } else {
      const std::string_view name = seg.substr(0, nl);
      const std::string_view body = seg.substr(nl + 1);
      if (name == k_text) {
        out.content += last && partial ? fmt::settled(body, {k_sep}) : fmt::rtrim(body);
      } else {
        const size_t e = fmt::json_value_end(body, 0);
        if (e == std::string_view::npos && partial && last) return;  // the arguments are still coming
        nlohmann::ordered_json args;
        if (e != std::string_view::npos && e != fmt::bad) {
          args = nlohmann::ordered_json::parse(body.substr(0, e), nullptr, /*allow_exceptions=*/false);
        }
        if (!args.is_object()) {
          out.content += seg;  // not a call after all: the text as written
        } else {
          out.tool_calls.push_back({"", std::string(name), args.dump()});
        }
      }
    }
    if (last) return;
    pos = next + k_sep.size();
  }
}

std::string functionary_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal(t.name + "\n") + " " + t.args_rule;
}

std::string functionary_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  if (!parallel) return call_rule;
  return call_rule + " (\">>>\" " + call_rule + "){0,3}";
}

}  // namespace cortex::chat
