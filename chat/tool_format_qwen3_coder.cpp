// Qwen3-Coder: XML-style calls, one parameter per element, values as raw
// text (strings) or JSON (everything else),
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   <parameter=days>
//   3
//   </parameter>
//   </function>
//   </tool_call>
// A value's type comes from the tool's schema (set_tools): a string
// property's text is the string as written; another is read as JSON.
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "chat/tool_format_families.hpp"
#include "grammar/gbnf_compose.hpp"
#include "grammar/json_schema.hpp"

namespace cortex::chat {

namespace {
constexpr std::string_view k_open = "<tool_call>";
constexpr std::string_view k_close = "</tool_call>";
constexpr std::string_view k_fn = "<function=";
constexpr std::string_view k_fn_end = "</function>";
constexpr std::string_view k_param = "<parameter=";
constexpr std::string_view k_param_end = "\n</parameter>";

// A property generated and read as raw text: a string with no constraint
// the raw text could break.
bool raw_string(const nlohmann::ordered_json& s) {
  if (!s.is_object() || !s.contains("type") || s["type"] != "string") return false;
  for (const char* k : {"enum", "const", "format", "pattern", "minLength", "maxLength"})
    if (s.contains(k)) return false;
  return true;
}

// One <function=...>...</function> from `pos` (after the opener's white
// space): the call and the end, npos while unfinished, bad if malformed.
size_t parse_function(std::string_view text, size_t pos, const std::map<std::string, std::map<std::string, bool>>& string_params,
                      tool_call& c) {
  if (text.substr(pos, k_fn.size()) != k_fn)
    return text.size() - pos < k_fn.size() && k_fn.substr(0, text.size() - pos) == text.substr(pos) ? std::string_view::npos : fmt::bad;
  const size_t gt = text.find('>', pos);
  if (gt == std::string_view::npos) return std::string_view::npos;
  c.name = std::string(text.substr(pos + k_fn.size(), gt - pos - k_fn.size()));
  const auto tool = string_params.find(c.name);
  nlohmann::ordered_json args = nlohmann::ordered_json::object();
  size_t p = gt + 1;
  while (true) {
    p = fmt::skip_ws(text, p);
    if (p >= text.size()) return std::string_view::npos;
    if (text.substr(p, k_fn_end.size()) == k_fn_end) {
      c.arguments = args.dump();
      return p + k_fn_end.size();
    }
    if (text.substr(p, k_param.size()) != k_param)
      return text.size() - p < k_fn_end.size() && (k_fn_end.substr(0, text.size() - p) == text.substr(p) ||
                                                   k_param.substr(0, std::min(k_param.size(), text.size() - p)) == text.substr(p))
                 ? std::string_view::npos
                 : fmt::bad;
    const size_t kgt = text.find('>', p);
    if (kgt == std::string_view::npos) return std::string_view::npos;
    const std::string key(text.substr(p + k_param.size(), kgt - p - k_param.size()));
    size_t v = kgt + 1;
    if (text.substr(v, 1) == "\n") ++v;
    const size_t e = text.find(k_param_end, v);
    if (e == std::string_view::npos) return std::string_view::npos;
    const std::string value(text.substr(v, e - v));
    bool is_string = false;
    if (tool != string_params.end()) {
      const auto k = tool->second.find(key);
      is_string = k != tool->second.end() && k->second;
    }
    // Not a string: JSON. A string: the text as written, unless it is a
    // JSON string literal (what a constrained string's grammar writes).
    auto j = nlohmann::ordered_json::parse(value, nullptr, false);
    if (is_string) args[key] = !j.is_discarded() && j.is_string() ? j : nlohmann::ordered_json(value);
    else args[key] = j.is_discarded() ? nlohmann::ordered_json(value) : j;
    p = e + k_param_end.size();
  }
}

}  // namespace

void qwen3_coder_format::set_tools(const nlohmann::ordered_json& tools) {
  string_params_.clear();
  if (!tools.is_array()) return;
  for (const auto& t : tools) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const auto& fn = t["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) continue;
    auto& params = string_params_[fn["name"].get<std::string>()];
    if (!fn.contains("parameters") || !fn["parameters"].is_object() || !fn["parameters"].contains("properties")) continue;
    for (const auto& [k, s] : fn["parameters"]["properties"].items())
      params[k] = s.is_object() && s.contains("type") && s["type"] == "string";
  }
}

void qwen3_coder_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  size_t pos = 0;
  while (true) {
    const size_t o = text.find(k_open, pos);
    if (o == std::string_view::npos) {
      fmt::add_tail_text(text.substr(pos), partial, k_open, out);
      return;
    }
    const size_t n_content = out.content.size();
    fmt::add_text_before_call(text.substr(pos, o - pos), out);
    tool_call c;
    const size_t e = parse_function(text, fmt::skip_ws(text, o + k_open.size()), string_params_, c);
    if (e == std::string_view::npos) return;  // still being written, or cut off by the end
    if (e == fmt::bad) {
      out.content.resize(n_content);  // not a call: the text as it was
      out.content += text.substr(pos);
      return;
    }
    size_t k = fmt::skip_ws(text, e);
    if (text.substr(k, k_close.size()) == k_close) k += k_close.size();
    else if (partial && k_close.substr(0, std::min(k_close.size(), text.size() - k)) == text.substr(k)) return;
    out.tool_calls.push_back(std::move(c));
    pos = k;
  }
}

std::string qwen3_coder_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal("<function=" + t.name + ">\n") + " " + t.args_rule;
}

std::string qwen3_coder_format::gbnf_after_opener(const std::string& call_rule, bool parallel) const {
  const std::string one = "\"\\n\" " + call_rule + " \"\\n</tool_call>\"";
  if (!parallel) return one;
  return one + " (\"\\n<tool_call>\" " + one + "){0,3}";
}

expected<std::string> qwen3_coder_format::gbnf_arguments(const nlohmann::ordered_json& parameters, const std::string& prefix,
                                                         std::string& rules) const {
  // Continuation-passing: <prefix>after-k is what may follow parameter k
  // (the later parameters, then </function>); optional ones may be skipped.
  std::vector<std::pair<std::string, const nlohmann::ordered_json*>> props;
  std::vector<std::string> required;
  if (parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object())
    for (const auto& [k, s] : parameters["properties"].items()) props.emplace_back(k, &s);
  if (parameters.is_object() && parameters.contains("required") && parameters["required"].is_array())
    for (const auto& r : parameters["required"])
      if (r.is_string()) required.push_back(r.get<std::string>());
  const size_t n = props.size();
  rules += prefix + "after-" + std::to_string(n) + " ::= \"</function>\"\n";
  for (size_t i = n; i-- > 0;) {
    const std::string& key = props[i].first;
    const auto& schema = *props[i].second;
    const std::string after = prefix + "after-" + std::to_string(i + 1);
    const std::string param = prefix + "param-" + std::to_string(i);
    const std::string head = fmt::gbnf_literal("<parameter=" + key + ">\n");
    if (raw_string(schema)) {
      const std::string p = prefix + "text-" + std::to_string(i) + "-";
      rules += param + " ::= " + head + " " + p + "0\n";
      rules += gbnf_text_until(k_param_end, p, "\"\\n\" " + after, /*allow_end=*/false);
    } else {
      auto g = json_schema_to_gbnf(schema.dump());
      if (!g) return fail(errc::invalid_param, "property '" + key + "': " + g.error().message);
      const std::string vp = prefix + "value-" + std::to_string(i) + "-";
      rules += gbnf_prefix_rules(*g, vp);
      rules += param + " ::= " + head + " " + vp + "root \"\\n</parameter>\\n\" " + after + "\n";
    }
    const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
    rules += prefix + "after-" + std::to_string(i) + " ::= " + param + (is_required ? "" : " | " + after) + "\n";
  }
  return prefix + "after-0";
}

}  // namespace cortex::chat
