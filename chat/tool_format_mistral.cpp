// Mistral: after the [TOOL_CALLS] token, either a JSON array of calls
// (Mistral 7B v0.3, Nemo, Small 3 / 3.1)
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
// or, in the newer tokenizer versions (Small 3.2, Magistral, Devstral), one
// call per [TOOL_CALLS], the name, an optional [CALL_ID], then [ARGS] and
// the JSON arguments:
//   [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
// Call ids are 9 letters and digits, as Mistral's templates require.
#include <nlohmann/json.hpp>

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_open = "[TOOL_CALLS]";
constexpr std::string_view k_args = "[ARGS]";
constexpr std::string_view k_call_id = "[CALL_ID]";
}  // namespace

size_t parse_json_call_array(std::string_view text, size_t pos, std::vector<tool_call>& calls) {
  pos = fmt::skip_ws(text, pos);
  if (pos >= text.size()) return std::string_view::npos;
  if (text[pos] != '[') return fmt::bad;
  const size_t e = fmt::json_value_end(text, pos);
  if (e == std::string_view::npos || e == fmt::bad) return e;
  auto j = nlohmann::ordered_json::parse(text.substr(pos, e - pos), nullptr, false);
  if (j.is_discarded() || !j.is_array()) return fmt::bad;
  std::vector<tool_call> found;
  for (const auto& item : j) {
    tool_call c;
    if (!fmt::call_from_json(item.dump(), {"arguments", "parameters"}, c)) return fmt::bad;
    if (item.contains("id") && item["id"].is_string()) c.id = item["id"].get<std::string>();
    found.push_back(std::move(c));
  }
  for (auto& c : found) calls.push_back(std::move(c));
  return e;
}

void mistral_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  const size_t o = text.find(k_open);
  if (o == std::string_view::npos) {
    out.content += partial ? fmt::settled(text, {k_open}) : text;
    return;
  }
  out.content += fmt::rtrim(text.substr(0, o));
  size_t pos = o + k_open.size();
  while (true) {
    const size_t p = fmt::skip_ws(text, pos);
    if (p >= text.size()) return;
    if (text[p] == '[') {  // the JSON array form
      const size_t e = parse_json_call_array(text, p, out.tool_calls);
      if (e == std::string_view::npos && partial) return;
      if (e == std::string_view::npos || e == fmt::bad) {
        if (!partial) out.content += text.substr(p);
        return;
      }
      pos = e;
    } else {  // name[ARGS]{...}
      const size_t a = text.find(k_args, p);
      if (a == std::string_view::npos) {
        if (!partial) out.content += text.substr(p);
        return;
      }
      tool_call c;
      std::string_view name = text.substr(p, a - p);
      if (const size_t ci = name.find(k_call_id); ci != std::string_view::npos) {
        c.id = std::string(name.substr(ci + k_call_id.size()));
        name = name.substr(0, ci);
      }
      const size_t j = a + k_args.size();
      const size_t e = fmt::json_value_end(text, j);
      if (e == std::string_view::npos && partial) return;
      if (e == std::string_view::npos || e == fmt::bad) {
        if (!partial) out.content += text.substr(p);
        return;
      }
      auto args = nlohmann::ordered_json::parse(text.substr(j, e - j), nullptr, false);
      if (args.is_discarded()) {
        if (!partial) out.content += text.substr(p);
        return;
      }
      c.name = std::string(fmt::rtrim(name));
      c.arguments = args.dump();
      out.tool_calls.push_back(std::move(c));
      pos = e;
    }
    const size_t n = fmt::skip_ws(text, pos);
    if (text.substr(n, k_open.size()) == k_open) {
      pos = n + k_open.size();
      continue;
    }
    if (n >= text.size()) return;
    if (partial && fmt::partial_marker_len(text.substr(n), k_open) == text.size() - n) return;
    return;  // text after the calls is not part of the message
  }
}

std::string mistral_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal("{\"name\": \"" + t.name + "\", \"arguments\": ") + " " + t.args_rule + " \"}\"";
}

std::string mistral_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  if (!parallel) return "\"[\" " + call_rule + " \"]\"";
  return "\"[\" " + call_rule + " (\", \" " + call_rule + "){0,3} \"]\"";
}

std::string mistral_format::call_id(uint64_t seed, uint32_t index) const {
  static const char k_alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + (index + 1) * 0xBF58476D1CE4E5B9ull;
  std::string id;
  for (int i = 0; i < 9; ++i) {
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    id += k_alnum[x % 62];
  }
  return id;
}

}  // namespace cortex::chat
