#include <nlohmann/json.hpp>

#include "chat/tool_format.hpp"

namespace cortex::chat::fmt {

namespace {
bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
}  // namespace

size_t skip_ws(std::string_view s, size_t pos) {
  while (pos < s.size() && is_ws(s[pos])) ++pos;
  return pos;
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

bool is_ws_only(std::string_view s) { return skip_ws(s, 0) == s.size(); }

size_t json_value_end(std::string_view s, size_t pos) {
  pos = skip_ws(s, pos);
  if (pos >= s.size()) return std::string_view::npos;
  const char c0 = s[pos];
  if (c0 != '{' && c0 != '[' && c0 != '"') {
    // A scalar: up to a delimiter; at the end of the text it may go on.
    size_t e = pos;
    while (e < s.size() && !is_ws(s[e]) && s[e] != ',' && s[e] != '}' && s[e] != ']' && s[e] != ';' && s[e] != '<') ++e;
    if (e == s.size()) return std::string_view::npos;
    if (e == pos) return bad;
    return e;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
      if (depth < 0) return bad;
    }
  }
  return std::string_view::npos;
}

size_t partial_marker_len(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

std::string_view settled(std::string_view s, const std::vector<std::string_view>& markers) {
  size_t hold = 0;
  for (auto m : markers) hold = std::max(hold, partial_marker_len(s, m));
  return rtrim(s.substr(0, s.size() - hold));
}

void add_text_before_call(std::string_view before, parsed_output& out) {
  if (out.tool_calls.empty()) out.content += rtrim(before);
  else if (!is_ws_only(before)) out.content += before;
}

void add_tail_text(std::string_view tail, bool partial, std::string_view opener, parsed_output& out) {
  if (partial) tail = settled(tail, {opener});
  else if (!out.tool_calls.empty()) tail = rtrim(tail);
  if (out.tool_calls.empty() || !is_ws_only(tail)) out.content += tail;
}

bool call_from_json(std::string_view json_text, const std::vector<std::string>& args_keys, tool_call& out) {
  auto j = nlohmann::ordered_json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto n = j.find("name");
  if (n == j.end() || !n->is_string()) return false;
  for (const auto& k : args_keys) {
    auto a = j.find(k);
    if (a == j.end()) continue;
    out.name = n->get<std::string>();
    out.arguments = a->is_string() ? a->get<std::string>() : a->dump();
    return true;
  }
  return false;
}

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

}  // namespace cortex::chat::fmt
