// IBM Granite 3.x: the calls as one JSON array after <|tool_call|>,
//   <|tool_call|>[{"arguments": {"city": "Paris"}, "name": "get_weather"}]
#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_open = "<|tool_call|>";
}

void granite_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  const size_t o = text.find(k_open);
  if (o == std::string_view::npos) {
    out.content += partial ? fmt::settled(text, {k_open}) : text;
    return;
  }
  out.content += fmt::rtrim(text.substr(0, o));
  const size_t p = o + k_open.size();
  const size_t e = parse_json_call_array(text, p, out.tool_calls);
  if ((e == std::string_view::npos || e == fmt::bad) && !partial) out.content += text.substr(p);
}

std::string granite_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal("{\"name\": \"" + t.name + "\", \"arguments\": ") + " " + t.args_rule + " \"}\"";
}

std::string granite_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  if (!parallel) return "\"[\" " + call_rule + " \"]\"";
  return "\"[\" " + call_rule + " (\", \" " + call_rule + "){0,3} \"]\"";
}

}  // namespace cortex::chat
