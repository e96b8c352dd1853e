// DeepSeek V3 / R1 (and R1's distills with DeepSeek's template): calls in
// DeepSeek's own tokens,
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//   ```json
//   {"city": "Paris"}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// and V3.1's shorter form, name first and bare JSON:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// R1 thinks in <think> ... </think> first (output_parser splits that off).
#include <nlohmann/json.hpp>

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_calls_begin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view k_calls_end = "<｜tool▁calls▁end｜>";
constexpr std::string_view k_call_begin = "<｜tool▁call▁begin｜>";
constexpr std::string_view k_call_end = "<｜tool▁call▁end｜>";
constexpr std::string_view k_sep = "<｜tool▁sep｜>";
}  // namespace

std::string deepseek_format::opener() const { return std::string(k_calls_begin); }

void deepseek_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  const size_t o = text.find(k_calls_begin);
  if (o == std::string_view::npos) {
    out.content += partial ? fmt::settled(text, {k_calls_begin}) : text;
    return;
  }
  out.content += fmt::rtrim(text.substr(0, o));
  size_t pos = o + k_calls_begin.size();
  while (true) {
    pos = fmt::skip_ws(text, pos);
    if (text.substr(pos, k_call_begin.size()) != k_call_begin) return;  // the end, or <｜tool▁calls▁end｜>
    const size_t b = pos + k_call_begin.size();
    const size_t s = text.find(k_sep, b);
    if (s == std::string_view::npos) return;
    std::string head(fmt::rtrim(text.substr(b, s - b)));
    size_t j = s + k_sep.size();
    tool_call c;
    if (head == "function") {  // V3 / R1: the name on the line after the separator, then fenced JSON
      const size_t nl = text.find('\n', j);
      if (nl == std::string_view::npos) return;
      c.name = std::string(fmt::rtrim(text.substr(j, nl - j)));
      j = nl + 1;
      if (text.substr(j, 7) == "```json") j += 7;
    } else {
      c.name = head;
    }
    const size_t e = fmt::json_value_end(text, j);
    if (e == std::string_view::npos || e == fmt::bad) {
      if (!partial && e == std::string_view::npos) {
        // The text ended inside the arguments: nothing to salvage.
      }
      return;
    }
    auto args = nlohmann::ordered_json::parse(text.substr(j, e - j), nullptr, false);
    if (args.is_discarded()) return;
    size_t k = fmt::skip_ws(text, e);
    if (text.substr(k, 3) == "```") k = fmt::skip_ws(text, k + 3);
    if (text.substr(k, k_call_end.size()) == k_call_end) {
      k += k_call_end.size();
    } else if (partial) {
      return;  // the end token is still to come
    }
    c.arguments = args.dump();
    out.tool_calls.push_back(std::move(c));
    pos = k;
  }
}

std::string deepseek_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal(std::string(k_call_begin) + "function" + std::string(k_sep) + t.name + "\n```json\n") + " " +
         t.args_rule + " " + fmt::gbnf_literal("\n```" + std::string(k_call_end));
}

std::string deepseek_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  const std::string end = fmt::gbnf_literal(std::string(k_calls_end));
  if (!parallel) return call_rule + " " + end;
  return call_rule + " (\"\\n\" " + call_rule + "){0,3} " + end;
}

}  // namespace cortex::chat
