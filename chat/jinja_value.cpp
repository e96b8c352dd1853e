#include "chat/jinja_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/unicode.hpp"

namespace cortex::chat {

value value::undefined(std::string name) {
  value v;
  v.s_ = std::move(name);
  return v;
}
value value::none() {
  value v;
  v.kind_ = kind::none;
  return v;
}
value value::boolean(bool b) {
  value v;
  v.kind_ = kind::boolean;
  v.b_ = b;
  v.i_ = b ? 1 : 0;
  return v;
}
value value::integer(int64_t i) {
  value v;
  v.kind_ = kind::integer;
  v.i_ = i;
  return v;
}
value value::floating(double f) {
  value v;
  v.kind_ = kind::floating;
  v.f_ = f;
  return v;
}
value value::string(std::string s) {
  value v;
  v.kind_ = kind::string;
  v.s_ = std::move(s);
  return v;
}
value value::list(value_list items) {
  value v;
  v.kind_ = kind::list;
  v.list_ = std::make_shared<value_list>(std::move(items));
  return v;
}
value value::tuple(value_list items) {
  value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
value value::dict(value_dict items) {
  value v;
  v.kind_ = kind::dict;
  v.dict_ = std::make_shared<value_dict>(std::move(items));
  return v;
}
value value::make_namespace(value_dict items) {
  value v = dict(std::move(items));
  v.kind_ = kind::ns;
  return v;
}
value value::callable(std::string name, native_fn fn) {
  value v;
  v.kind_ = kind::callable;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<native_fn>(std::move(fn));
  return v;
}

namespace {
template <class J>
value json_to_value(const J& j, int depth) {
  if (depth > max_json_depth)
    throw template_error("the input JSON is nested deeper than " + std::to_string(max_json_depth) + " levels");
  switch (j.type()) {
    case J::value_t::null: return value::none();
    case J::value_t::boolean: return value::boolean(j.template get<bool>());
    case J::value_t::number_integer: return value::integer(j.template get<int64_t>());
    case J::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? value::floating(static_cast<double>(u))
                                                   : value::integer(static_cast<int64_t>(u));
    }
    case J::value_t::number_float: return value::floating(j.template get<double>());
    case J::value_t::string: return value::string(j.template get<std::string>());
    case J::value_t::array: {
      value_list items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(json_to_value(e, depth + 1));
      return value::list(std::move(items));
    }
    case J::value_t::object: {
      value_dict items;
      items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), json_to_value(it.value(), depth + 1));
      return value::dict(std::move(items));
    }
    default: return value::none();  // binary / discarded: not produced by parsing text
  }
}
}  // namespace

value value::from_json(const nlohmann::ordered_json& j) { return json_to_value(j, 0); }
value value::from_json(const nlohmann::json& j) { return json_to_value(j, 0); }

bool value::truthy() const {
  switch (kind_) {
    case kind::undefined:
    case kind::none: return false;
    case kind::boolean: return b_;
    case kind::integer: return i_ != 0;
    case kind::floating: return f_ != 0.0;
    case kind::string: return !s_.empty();
    case kind::list: return !list_->empty();
    case kind::dict: return !dict_->empty();
    default: return true;
  }
}

const value* value::find(const std::string& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& kv : *dict_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void value::set(const std::string& key, value v) {
  for (auto& kv : *dict_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  dict_->emplace_back(key, std::move(v));
}

bool value::has_length() const { return kind_ == kind::string || kind_ == kind::list || is_mapping(); }

size_t value::length() const {
  if (kind_ == kind::string) {
    size_t n = 0;
    for (unsigned char c : s_) n += (c & 0xC0) != 0x80;
    return n;
  }
  return kind_ == kind::list ? list_->size() : dict_->size();
}

value call_args::get(size_t pos, const char* name) const {
  for (const auto& kv : keyword)
    if (kv.first == name) return kv.second;
  return pos < positional.size() ? positional[pos] : value();
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf = [-]d[.ddd]e[+-]XX: split into digits and decimal exponent.
  std::string s(buf);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int decpt = exp10 + 1;
  std::string out;
  if (decpt > 16 || decpt <= -4) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
  }
  return sign + out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string repr_impl(const value& v, int depth);

std::string str_impl(const value& v, int depth) {
  if (depth > 64) throw template_error("value nested too deeply to print");
  switch (v.type()) {
    case value::kind::undefined: return "";
    case value::kind::none: return "None";
    case value::kind::boolean: return v.as_bool() ? "True" : "False";
    case value::kind::integer: return std::to_string(v.as_int());
    case value::kind::floating: return python_float_repr(v.as_double());
    case value::kind::string: return v.str_ref();
    case value::kind::list: {
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ", ";
        out += repr_impl(v.items()[i], depth + 1);
      }
      if (v.is_tuple() && v.items().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case value::kind::dict:
    case value::kind::ns: {
      std::string out = v.type() == value::kind::ns ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& kv : v.entries()) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(kv.first) + ": " + repr_impl(kv.second, depth + 1);
      }
      return out + (v.type() == value::kind::ns ? "}>" : "}");
    }
    case value::kind::callable: return "<function " + v.str_ref() + ">";
  }
  return "";
}

std::string repr_impl(const value& v, int depth) {
  if (v.is_string()) return repr_string(v.str_ref());
  if (v.is_undefined()) return "Undefined";
  return str_impl(v, depth);
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_impl(std::string& out, const value& v, int indent, bool sort_keys, int level) {
  if (level > 64) throw template_error("tojson: value nested too deeply");
  auto newline = [&](int lv) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lv), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.type()) {
    case value::kind::none: out += "null"; return;
    case value::kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case value::kind::integer: out += std::to_string(v.as_int()); return;
    case value::kind::floating: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d);
      return;
    }
    case value::kind::string: json_string(out, v.str_ref()); return;
    case value::kind::list: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_impl(out, v.items()[i], indent, sort_keys, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case value::kind::dict: {
      if (v.entries().empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, value>*> kvs;
      for (const auto& kv : v.entries()) kvs.push_back(&kv);
      if (sort_keys) std::stable_sort(kvs.begin(), kvs.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < kvs.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_string(out, kvs[i]->first);
        out += ": ";
        json_impl(out, kvs[i]->second, indent, sort_keys, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: throw template_error(std::string("tojson: Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_str(const value& v) { return str_impl(v, 0); }
std::string to_repr(const value& v) { return repr_impl(v, 0); }

std::string to_json(const value& v, int indent, bool sort_keys) {
  std::string out;
  json_impl(out, v, indent, sort_keys, 0);
  return out;
}

const char* type_name(const value& v) {
  switch (v.type()) {
    case value::kind::undefined: return "Undefined";
    case value::kind::none: return "NoneType";
    case value::kind::boolean: return "bool";
    case value::kind::integer: return "int";
    case value::kind::floating: return "float";
    case value::kind::string: return "str";
    case value::kind::list: return "list";
    case value::kind::dict: return "dict";
    case value::kind::ns: return "Namespace";
    case value::kind::callable: return "function";
  }
  return "?";
}

bool equals(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type() != value::kind::floating && b.type() != value::kind::floating) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type() != b.type() || a.is_tuple() != b.is_tuple()) return false;
  switch (a.type()) {
    case value::kind::undefined:
    case value::kind::none: return true;
    case value::kind::string: return a.str_ref() == b.str_ref();
    case value::kind::list: {
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!equals(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case value::kind::dict: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& kv : a.entries()) {
        const value* other = b.find(kv.first);
        if (!other || !equals(kv.second, *other)) return false;
      }
      return true;
    }
    case value::kind::ns: return &a.entries() == &b.entries();  // identity, as Python's object ==
    default: return false;
  }
}

std::vector<uint32_t> to_cpts(const std::string& s) { return unicode::cpts_from_utf8(s); }

std::string from_cpts(const std::vector<uint32_t>& cpts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cpts.size(); ++i) unicode::append_utf8(out, cpts[i]);
  return out;
}

bool is_python_space(uint32_t cpt) { return unicode::is_whitespace(cpt) || (cpt >= 0x1C && cpt <= 0x1F); }

std::string python_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  const auto cpts = to_cpts(s);
  std::vector<uint32_t> set;
  if (chars) set = to_cpts(*chars);
  auto strip_it = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_python_space(c);
  };
  size_t b = 0, e = cpts.size();
  if (left)
    while (b < e && strip_it(cpts[b])) ++b;
  if (right)
    while (e > b && strip_it(cpts[e - 1])) --e;
  if (b == 0 && e == cpts.size()) return s;
  return from_cpts(cpts, b, e);
}

}  // namespace cortex::chat
