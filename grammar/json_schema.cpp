#include "grammar/json_schema.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_parts.hpp"

namespace cortex {
namespace {

using json = nlohmann::ordered_json;
using schema_parts::gbnf_literal;

// The shared pieces every document may use.
const char* k_base_rules = R"(ws ::= (" " | "\n" [ \t]{0,6})?
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value ws ("," ws json-string ws ":" ws json-value ws)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
)";

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",      "description", "$schema",  "$id",      "$comment",
                                          "default",    "examples",    "deprecated", "readOnly", "writeOnly",
                                          "definitions", "$defs"};
  return k;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> k = {
      "type",     "properties", "required",  "additionalProperties", "enum",    "const",
      "items",    "minItems",   "maxItems",  "minLength",            "maxLength", "pattern",
      "format",   "minimum",    "maximum",   "exclusiveMinimum",     "exclusiveMaximum",
      "anyOf",    "oneOf",      "$ref"};
  return k;
}

class schema_converter {
 public:
  expected<std::string> run(std::string_view text) {
    // Bounded nesting first: parsing and dumping recurse per level. And
    // bounded objects: the order-keeping parse finds each key by a linear
    // search of its object, so an object's cost grows with its keys squared.
    std::vector<int32_t> keys;  // per open level: keys so far in an object, -1 in an array
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        if (keys.size() == max_json_depth) {
          return fail(errc::invalid_param, "json_schema: nested deeper than " + std::to_string(max_json_depth) + " levels");
        }
        keys.push_back(c == '{' ? 0 : -1);
      } else if ((c == '}' || c == ']') && !keys.empty()) {
        keys.pop_back();
      } else if (c == ':' && !keys.empty() && keys.back() >= 0 && ++keys.back() > max_object_keys) {
        return fail(errc::invalid_param, "json_schema: an object with more than " + std::to_string(max_object_keys) +
                                             " keys (at byte " + std::to_string(i) + ")");
      }
    }
    root_ = json::parse(text.begin(), text.end(), nullptr, false);
    if (root_.is_discarded()) return fail(errc::invalid_param, "json_schema: not valid JSON");
    used_.insert("root");
    std::string top = visit(root_, "#", 0);
    if (!err_.empty()) return fail(errc::invalid_param, "json_schema: " + err_);
    std::string out = "root ::= " + top + "\n" + k_base_rules;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  static constexpr int max_depth = 64;
  static constexpr size_t max_json_depth = 128;
  static constexpr int32_t max_object_keys = 1024;

  std::string error(const std::string& what) {
    if (err_.empty()) err_ = what;
    return "json-null";
  }

  std::string new_rule(const std::string& hint, std::string body) {
    std::string base;
    for (char c : hint) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
    if (base.empty() || base.size() > 40) base = "s";
    std::string name = base;
    if (used_.count(name)) {  // the next free suffix, counted per base: linear in the rules made
      int& k = next_suffix_[base];
      if (k < 2) k = 2;
      do name = base + "-" + std::to_string(k++);
      while (used_.count(name));
    }
    used_.insert(name);
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  std::string visit(const json& s, const std::string& path, int depth) {
    if (!err_.empty()) return "json-null";
    if (depth > max_depth) return error("nested deeper than " + std::to_string(max_depth) + " levels at " + path);
    if (s.is_boolean()) return s.get<bool>() ? "json-value" : error("schema false at " + path + " allows nothing");
    if (!s.is_object()) return error("the schema at " + path + " is not an object");
    for (const auto& [k, v] : s.items()) {
      if (!supported().count(k) && !annotations().count(k)) {
        return error("keyword '" + k + "' at " + path + " is not supported");
      }
    }
    if (s.contains("$ref")) return ref(s["$ref"], path, depth);
    if (s.contains("const")) return gbnf_literal(s["const"].dump());
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) return error("enum at " + path + " must be a non-empty array");
      std::string alts;
      for (const auto& v : e) alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return "(" + alts + ")";
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      const json& a = s[k];
      if (!a.is_array() || a.empty()) return error(std::string(k) + " at " + path + " must be a non-empty array");
      for (const auto& [key, v] : s.items()) {
        if (key != k && !annotations().count(key)) {
          return error(std::string(k) + " with '" + key + "' beside it at " + path + " is not supported");
        }
      }
      std::string alts;
      for (size_t i = 0; i < a.size(); ++i) {
        alts += (i ? " | " : "") + visit(a[i], path + "/" + k + "/" + std::to_string(i), depth + 1);
      }
      return "(" + alts + ")";
    }
    if (s.contains("type") && s["type"].is_array()) {
      std::string alts;
      for (const auto& t : s["type"]) {
        json one = s;
        one["type"] = t;
        alts += (alts.empty() ? "" : " | ") + visit(one, path, depth + 1);
      }
      return alts.empty() ? error("type at " + path + " is an empty list") : "(" + alts + ")";
    }
    std::string type;
    if (s.contains("type")) {
      if (!s["type"].is_string()) return error("type at " + path + " must be a string or a list of strings");
      type = s["type"].get<std::string>();
    } else if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
      type = "object";
    } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
      type = "array";
    } else if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
      type = "string";
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) {
      type = "number";
    } else {
      return "json-value";
    }
    // A format the grammar cannot hold (int32 on an integer, a format on an
    // object...) is refused, never dropped: the output must validate.
    if (s.contains("format") && type != "string")
      return error("format at " + path + " on a " + type + " is not supported (date, time, date-time, uuid on strings are)");
    if (type == "object") return object(s, path, depth);
    if (type == "array") return array(s, path, depth);
    if (type == "string") return string(s, path);
    if (type == "number" || type == "integer") return number(s, path, type == "integer");
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    return error("type '" + type + "' at " + path + " is not a JSON Schema type");
  }

  std::string ref(const json& r, const std::string& path, int depth) {
    if (!r.is_string()) return error("$ref at " + path + " must be a string");
    const std::string target = r.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target != "#" && target.rfind("#/", 0) != 0) return error("$ref '" + target + "' at " + path + " is not local (only '#...' refs are)");
    json::json_pointer ptr;
    try {
      ptr = json::json_pointer(target.substr(1));
    } catch (const std::exception&) {
      return error("$ref '" + target + "' at " + path + " is not a valid JSON pointer");
    }
    if (!root_.contains(ptr)) return error("$ref '" + target + "' at " + path + " points to nothing");
    // Name the rule before visiting it, so recursive schemas refer to it.
    const std::string name = new_rule("ref-" + target.substr(target.find_last_of('/') + 1), "");
    refs_[target] = name;
    const size_t slot = rules_.size() - 1;
    // depth + 1, not a fresh count: a chain of refs (a -> b -> c ...) is
    // nesting too, and must not recurse without bound.
    std::string body = visit(root_[ptr], target, depth + 1);
    rules_[slot].second = body;
    return name;
  }

  std::string object(const json& s, const std::string& path, int depth) {
    const json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props != nullptr && !props->is_object()) return error("properties at " + path + " must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return error("required at " + path + " must be an array");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) return error("required at " + path + " must list strings");
        if (props == nullptr || !props->contains(r.get<std::string>())) {
          return error("required property '" + r.get<std::string>() + "' at " + path + " is not in its properties");
        }
        required.insert(r.get<std::string>());
      }
    }
    if (props == nullptr || props->empty()) {
      const json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if (extra != nullptr && extra->is_boolean() && !extra->get<bool>()) return "\"{\" ws \"}\"";
      if (extra == nullptr || extra->is_boolean()) return "json-object";
      const std::string v = visit(*extra, path + "/additionalProperties", depth + 1);
      const std::string kv = "json-string ws \":\" ws " + v + " ws";
      return new_rule(path_hint(path) + "-map", "\"{\" ws (" + kv + " (\",\" ws " + kv + ")*)? \"}\"");
    }
    // kv_i for each property; then the chain T_i ::= ("," ws kv_i)[?] T_{i+1}
    // (optional unless required), and the body starts at the first emitted one.
    std::vector<std::string> kv;
    std::vector<bool> req;
    for (const auto& [name, sub] : props->items()) {
      const std::string v = visit(sub, path + "/properties/" + name, depth + 1);
      kv.push_back(gbnf_literal(json(name).dump()) + " ws \":\" ws " + v + " ws");
      req.push_back(required.count(name) != 0);
    }
    const size_t n = kv.size();
    std::vector<std::string> tail(n + 1);  // tail[i]: what may follow after properties < i
    for (size_t i = n; i-- > 0;) {
      std::string item = "\",\" ws " + kv[i];
      std::string body = req[i] ? item : "(" + item + ")?";
      if (!tail[i + 1].empty()) body += " " + tail[i + 1];
      tail[i] = new_rule(path_hint(path) + "-tail", body);
    }
    std::vector<std::string> starts;  // the first emitted property is i: all before it optional
    for (size_t i = 0; i < n; ++i) {
      starts.push_back(kv[i] + (i + 1 < n ? " " + tail[i + 1] : ""));
      if (req[i]) break;
    }
    std::string alts;
    for (const auto& a : starts) alts += (alts.empty() ? "" : " | ") + a;
    const bool all_optional = std::none_of(req.begin(), req.end(), [](bool b) { return b; });
    return new_rule(path_hint(path), "\"{\" ws (" + alts + ")" + (all_optional ? "?" : "") + " \"}\"");
  }

  std::string array(const json& s, const std::string& path, int depth) {
    const std::string item = s.contains("items") ? visit(s["items"], path + "/items", depth + 1) : "json-value";
    uint64_t lo = 0;
    int64_t hi = -1;
    if (!count_range(s, "minItems", "maxItems", path, lo, hi)) return "json-null";
    if (hi == 0) return "\"[\" ws \"]\"";
    std::string more = "(\",\" ws " + item + " ws)";
    const std::string rest_lo = std::to_string(lo > 0 ? lo - 1 : 0);
    more += hi < 0 ? "{" + rest_lo + ",}" : "{" + rest_lo + "," + std::to_string(hi - 1) + "}";
    const std::string body = item + " ws " + more;
    return new_rule(path_hint(path) + "-array", "\"[\" ws " + (lo == 0 ? "(" + body + ")?" : body) + " \"]\"");
  }

  std::string string(const json& s, const std::string& path) {
    uint64_t lo = 0;
    int64_t hi = -1;
    if (!count_range(s, "minLength", "maxLength", path, lo, hi)) return "json-null";
    const bool has_length = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern") || s.contains("format")) {
      if (has_length) return error("minLength/maxLength together with pattern or format at " + path + " are not supported");
      if (s.contains("pattern") && s.contains("format")) return error("pattern together with format at " + path + " is not supported");
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return error("pattern at " + path + " must be a string");
      auto p = schema_parts::pattern_to_gbnf(s["pattern"].get<std::string>());
      if (!p) return error(p.error().message + " at " + path);
      return new_rule(path_hint(path) + "-pattern", "\"\\\"\" " + *p + " \"\\\"\"");
    }
    if (s.contains("format")) return format(s["format"], path);
    if (!has_length) return "json-string";
    const std::string reps = hi < 0 ? "{" + std::to_string(lo) + ",}" : "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
    return new_rule(path_hint(path) + "-string", "\"\\\"\" json-char" + reps + " \"\\\"\"");
  }

  std::string format(const json& f, const std::string& path) {
    static const std::map<std::string, std::string> k = {
        // RFC 3339 full-date: each month's days, February 29 only in leap
        // years (divisible by 4, centuries only by 400); years 0001-9999
        // (year 0 is no date to Python's date.fromisoformat).
        {"date",
         R"((( ([1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9]) "-" )"
         R"(( ("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01]) )"
         R"(| ("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30") )"
         R"(| "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]) ) ) )"
         R"(| ( [0-9] [0-9] ([02468] [48] | [2468] "0" | [13579] [26]) | ([02468] [48] | [2468] "0" | [13579] [26]) "00" ) "-02-29"))"},
        {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
        {"uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
    };
    const std::string name = f.is_string() ? f.get<std::string>() : "";
    std::string body;
    if (name == "date-time") {
      body = k.at("date") + " \"T\" " + k.at("time");
    } else if (auto it = k.find(name); it != k.end()) {
      body = it->second;
    } else {
      return error("format '" + name + "' at " + path + " is not supported (date, time, date-time, uuid are)");
    }
    return new_rule(path_hint(path) + "-" + name, "\"\\\"\" " + body + " \"\\\"\"");
  }

  std::string number(const json& s, const std::string& path, bool integer) {
    schema_parts::bound lo, hi;
    for (const auto& [key, b, strict] : {std::make_tuple("minimum", &lo, false), std::make_tuple("exclusiveMinimum", &lo, true),
                                         std::make_tuple("maximum", &hi, false), std::make_tuple("exclusiveMaximum", &hi, true)}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_number()) return error(std::string(key) + " at " + path + " must be a number");
      const double v = s[key].get<double>();
      // Two bounds on one side: the tighter one counts.
      const bool tighter = !b->given || (b == &lo ? (v > b->value || (v == b->value && strict))
                                                   : (v < b->value || (v == b->value && strict)));
      if (tighter) *b = {true, v, strict};
    }
    if (!lo.given && !hi.given) return integer ? "json-integer" : "json-number";
    auto r = schema_parts::number_range(lo, hi, integer);
    if (!r) return error(r.error().message + " (at " + path + ")");
    if (r->empty()) return error("the range at " + path + " holds no " + (integer ? "integer" : "number"));
    return new_rule(path_hint(path) + (integer ? "-integer" : "-number"), *r);
  }

  // [lo, hi] from a min/max keyword pair; hi = -1 when there is no max.
  bool count_range(const json& s, const char* min_key, const char* max_key, const std::string& path, uint64_t& lo,
                   int64_t& hi) {
    if (!count(s, min_key, path, lo)) return false;
    if (!s.contains(max_key)) return true;
    uint64_t h = 0;
    if (!count(s, max_key, path, h)) return false;
    hi = static_cast<int64_t>(h);
    if (h < lo) error(std::string(max_key) + " below " + min_key + " at " + path);
    return h >= lo;
  }

  bool count(const json& s, const char* key, const std::string& path, uint64_t& out) {
    if (!s.contains(key)) return true;
    const json& v = s[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      error(std::string(key) + " at " + path + " must be a non-negative integer");
      return false;
    }
    out = v.get<uint64_t>();
    if (out > 10000) {
      error(std::string(key) + " at " + path + " above 10000 is not supported");
      return false;
    }
    return true;
  }

  static std::string path_hint(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "root" : path.substr(slash + 1);
  }

  json root_;
  std::string err_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_map<std::string, int> next_suffix_;  // [rule name base] the suffix to try next
  std::set<std::string> used_ = {"ws", "json-char", "json-string", "json-number", "json-integer", "json-boolean",
                                 "json-null", "json-value", "json-object", "json-array"};
  std::map<std::string, std::string> refs_;
};

}  // namespace

expected<std::string> json_schema_to_gbnf(std::string_view schema_json) { return schema_converter().run(schema_json); }

std::string json_object_gbnf() { return std::string("root ::= json-object\n") + k_base_rules; }

}  // namespace cortex
