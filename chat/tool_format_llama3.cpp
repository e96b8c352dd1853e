// Llama 3.1 / 3.2 / 3.3: a call is the whole answer, one JSON object
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// (some fine-tunes write "arguments", or "type": "function" too), or, after
// the <|python_tag|> token, JSON calls separated by ';' or a built-in tool
// in Python call syntax: brave_search.call(query="...").
#include <nlohmann/json.hpp>

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {

constexpr std::string_view k_python_tag = "<|python_tag|>";

// name.call(key="value", n=3) -> a call; false if it is not one.
bool parse_builtin(std::string_view s, tool_call& c) {
  s = fmt::rtrim(s);
  const size_t dot = s.find(".call(");
  if (dot == std::string_view::npos || s.empty() || s.back() != ')') return false;
  c.name = std::string(s.substr(0, dot));
  std::string_view args = s.substr(dot + 6, s.size() - dot - 7);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  size_t i = 0;
  while (i < args.size()) {
    i = fmt::skip_ws(args, i);
    const size_t eq = args.find('=', i);
    if (eq == std::string_view::npos) return false;
    const std::string key(fmt::rtrim(args.substr(i, eq - i)));
    size_t v = fmt::skip_ws(args, eq + 1);
    size_t e;
    if (v < args.size() && (args[v] == '"' || args[v] == '\'')) {
      const char q = args[v];
      e = v + 1;
      std::string val;
      while (e < args.size() && args[e] != q) {
        if (args[e] == '\\' && e + 1 < args.size()) ++e;
        val += args[e++];
      }
      if (e >= args.size()) return false;
      j[key] = val;
      ++e;
    } else {
      e = args.find(',', v);
      if (e == std::string_view::npos) e = args.size();
      auto num = nlohmann::ordered_json::parse(fmt::rtrim(args.substr(v, e - v)), nullptr, false);
      if (num.is_discarded()) return false;
      j[key] = num;
    }
    e = fmt::skip_ws(args, e);
    if (e < args.size() && args[e] != ',') return false;
    i = e + 1;
  }
  c.arguments = j.dump();
  return !c.name.empty();
}

// JSON calls from `pos`, separated by ';' or white space. Returns false when
// the first object is not a call (the text is then content).
bool parse_json_calls(std::string_view text, size_t pos, bool partial, parsed_output& out, bool& pending) {
  pending = false;
  bool any = false;
  while (true) {
    pos = fmt::skip_ws(text, pos);
    if (pos < text.size() && text[pos] == ';') pos = fmt::skip_ws(text, pos + 1);
    if (pos >= text.size()) return any || partial;
    const size_t e = fmt::json_value_end(text, pos);
    if (e == std::string_view::npos) {
      pending = partial;
      return any || partial;
    }
    tool_call c;
    if (e == fmt::bad || !fmt::call_from_json(text.substr(pos, e - pos), {"parameters", "arguments"}, c)) return any;
    out.tool_calls.push_back(std::move(c));
    any = true;
    pos = e;
  }
}

}  // namespace

void llama3_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  const size_t tag = text.find(k_python_tag);
  if (tag != std::string_view::npos) {
    out.content += fmt::rtrim(text.substr(0, tag));
    const size_t body = tag + k_python_tag.size();
    bool pending = false;
    parsed_output calls;
    if (fmt::skip_ws(text, body) < text.size() && text[fmt::skip_ws(text, body)] == '{') {
      if (parse_json_calls(text, body, partial, calls, pending)) {
        for (auto& c : calls.tool_calls) out.tool_calls.push_back(std::move(c));
        return;
      }
    } else {
      tool_call c;
      if (parse_builtin(text.substr(body), c)) {
        if (!partial) out.tool_calls.push_back(std::move(c));
        return;
      }
      if (partial) return;  // a built-in call still being written
    }
    if (!partial) out.content += text.substr(tag + k_python_tag.size());
    return;
  }
  const size_t start = fmt::skip_ws(text, 0);
  if (start == text.size() || (partial && std::string_view(k_python_tag).substr(0, text.size() - start) == text.substr(start)))
    return;  // nothing settled yet
  if (text[start] == '{') {
    parsed_output calls;
    bool pending = false;
    if (parse_json_calls(text, start, partial, calls, pending)) {
      if (!calls.tool_calls.empty() || pending) {
        for (auto& c : calls.tool_calls) out.tool_calls.push_back(std::move(c));
        return;
      }
      if (partial) return;
    }
  }
  out.content += partial ? fmt::settled(text, {k_python_tag}) : text;
}

std::string llama3_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal("{\"name\": \"" + t.name + "\", \"parameters\": ") + " " + t.args_rule + " \"}\"";
}

std::string llama3_format::gbnf_after_opener(const std::string& call_rule, bool) const {
  return call_rule;  // Llama 3.x makes one call per turn
}

}  // namespace cortex::chat
