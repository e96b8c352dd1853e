// Printing values: Python's str() and repr() as Jinja2 prints them, and
// json.dumps for the tojson filter (declared in jinja_value.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_ops.hpp"
#include "chat/jinja_value.hpp"

namespace cortex::chat {

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
        out += repr_impl(kv.first, depth + 1) + ": " + repr_impl(kv.second, depth + 1);
      }
      return out + (v.type() == value::kind::ns ? "}>" : "}");
    }
    case value::kind::callable: return "<function " + v.str_ref() + ">";
  }
  return "";
}

std::string repr_impl(const value& v, int depth) {
  if (v.is_markup()) return "Markup(" + repr_string(v.str_ref()) + ")";
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

// json.dumps turns str, int, float, bool and None keys into strings.
std::string json_key(const value& k) {
  switch (k.type()) {
    case value::kind::string: return k.str_ref();
    case value::kind::none: return "null";
    case value::kind::boolean: return k.as_bool() ? "true" : "false";
    case value::kind::integer: return std::to_string(k.as_int());
    case value::kind::floating: {
      const double d = k.as_double();
      return std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d);
    }
    default:
      throw template_error(std::string("tojson: keys must be str, int, float, bool or None, not ") + type_name(k));
  }
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
      std::vector<const std::pair<value, value>*> kvs;
      for (const auto& kv : v.entries()) kvs.push_back(&kv);
      // Python sorts the keys themselves (1 < 10 < 2 would be the text order);
      // keys of types that do not compare fail, as sorted() does.
      if (sort_keys)
        std::stable_sort(kvs.begin(), kvs.end(), [](auto* a, auto* b) { return compare_op("<", a->first, b->first); });
      out += '{';
      for (size_t i = 0; i < kvs.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_string(out, json_key(kvs[i]->first));
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

}  // namespace cortex::chat
