// Python str and dict methods a template may call (see jinja_builtins.hpp).
#include <cctype>
#include <set>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_markup.hpp"
#include "chat/jinja_ops.hpp"

namespace cortex::chat {

namespace {

const std::set<std::string>& string_methods() {
  static const std::set<std::string> m = {"strip",  "lstrip", "rstrip",     "split",   "rsplit", "startswith",
                                          "endswith", "upper", "lower",     "title",   "capitalize", "replace",
                                          "find",   "rfind",  "count",      "join",    "splitlines", "isdigit",
                                          "isalpha", "isspace", "format"};
  return m;
}
const std::set<std::string>& dict_methods() {
  static const std::set<std::string> m = {"items", "keys", "values", "get"};
  return m;
}

std::string need_str(const value& v, const char* method) {
  if (!v.is_string()) throw template_error(std::string(method) + "() argument must be str, not " + type_name(v));
  return v.str_ref();
}

bool is_set(const value& v) { return !v.is_undefined() && !v.is_none(); }

// Python str.split / str.rsplit.
value split(const std::string& s, const value& sep_v, const value& max_v, bool from_right) {
  int64_t maxsplit = is_set(max_v) ? max_v.as_int() : -1;
  std::vector<std::string> parts;
  if (!is_set(sep_v)) {  // runs of white space, no empty parts
    const auto cpts = to_cpts(s);
    std::vector<std::pair<size_t, size_t>> words;
    for (size_t i = 0; i < cpts.size();) {
      while (i < cpts.size() && is_python_space(cpts[i])) ++i;
      if (i == cpts.size()) break;
      size_t j = i;
      while (j < cpts.size() && !is_python_space(cpts[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit) {
      // The unsplit remainder keeps its white space on the far side.
      const auto k = static_cast<size_t>(maxsplit);
      if (from_right) {
        const size_t keep_from = words.size() - k;
        std::vector<std::pair<size_t, size_t>> merged = {{0, words[keep_from - 1].second}};
        merged.insert(merged.end(), words.begin() + static_cast<long>(keep_from), words.end());
        words = merged;
      } else {
        words[k] = {words[k].first, cpts.size()};
        words.resize(k + 1);
      }
    }
    value_list out;
    for (auto& w : words) out.push_back(value::string(from_cpts(cpts, w.first, w.second)));
    return value::list(std::move(out));
  }
  const std::string sep = need_str(sep_v, "split");
  if (sep.empty()) throw template_error("empty separator");
  if (!from_right) {
    size_t b = 0;
    while (maxsplit != 0) {
      const size_t e = s.find(sep, b);
      if (e == std::string::npos) break;
      parts.push_back(s.substr(b, e - b));
      b = e + sep.size();
      if (maxsplit > 0) --maxsplit;
    }
    parts.push_back(s.substr(b));
  } else {
    size_t e = s.size();
    while (maxsplit != 0 && e >= sep.size()) {
      const size_t p = s.rfind(sep, e - sep.size());
      if (p == std::string::npos) break;
      parts.insert(parts.begin(), s.substr(p + sep.size(), e - p - sep.size()));
      e = p;
      if (maxsplit > 0) --maxsplit;
    }
    parts.insert(parts.begin(), s.substr(0, e));
  }
  value_list out;
  for (auto& p : parts) out.push_back(value::string(std::move(p)));
  return value::list(std::move(out));
}

bool affix_match(const std::string& s, const value& arg, bool prefix) {
  auto one = [&](const value& a) {
    const std::string x = need_str(a, prefix ? "startswith" : "endswith");
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (arg.is_list()) {
    for (const auto& a : arg.items())
      if (one(a)) return true;
    return false;
  }
  return one(arg);
}

// str.format with "{}", "{0}" and "{name}" fields (no format specs).
std::string format(const std::string& fmt, const call_args& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t e = fmt.find('}', i);
    if (e == std::string::npos) throw template_error("format: single '{' encountered in format string");
    const std::string field = fmt.substr(i + 1, e - i - 1);
    value v;
    if (field.empty()) v = a.get(auto_index++, "");
    else if (std::isdigit(static_cast<unsigned char>(field[0]))) v = a.get(static_cast<size_t>(std::stoul(field)), "");
    else v = a.get(static_cast<size_t>(-1), field.c_str());
    if (v.is_undefined()) throw template_error("format: no argument for field '{" + field + "}'");
    out += to_str(v);
    i = e;
  }
  return out;
}

bool string_method(const std::string& s, const std::string& name, const call_args& a, value& out) {
  auto strip = [&](bool l, bool r) {
    const value chars = a.get(0, "chars");
    const std::string c = is_set(chars) ? need_str(chars, name.c_str()) : "";
    return value::string(python_strip(s, is_set(chars) ? &c : nullptr, l, r));
  };
  if (name == "strip") out = strip(true, true);
  else if (name == "lstrip") out = strip(true, false);
  else if (name == "rstrip") out = strip(false, true);
  else if (name == "split" || name == "rsplit") out = split(s, a.get(0, "sep"), a.get(1, "maxsplit"), name == "rsplit");
  else if (name == "startswith" || name == "endswith") out = value::boolean(affix_match(s, a.get(0, "prefix"), name == "startswith"));
  else if (name == "title") {  // Python: a letter after a non-letter starts a word
    std::string r = s;
    bool prev_alpha = false;
    for (auto& c : r) {
      const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
      if (alpha) c = static_cast<char>(prev_alpha ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
      prev_alpha = alpha;
    }
    out = value::string(r);
  } else if (name == "upper" || name == "lower" || name == "capitalize") {
    call_args none;
    out = apply_filter(name, value::string(s), none);
  } else if (name == "replace") {
    const std::string from = need_str(a.get(0, "old"), "replace"), to = need_str(a.get(1, "new"), "replace");
    const value count_v = a.get(2, "count");
    int64_t count = is_set(count_v) ? count_v.as_int() : -1;
    std::string r;
    if (from.empty()) {  // Python inserts `to` between code points and at both ends
      const auto cpts = to_cpts(s);
      for (size_t i = 0; i <= cpts.size(); ++i) {
        if (count != 0) {
          r += to;
          if (count > 0) --count;
        }
        if (i < cpts.size()) r += from_cpts(cpts, i, i + 1);
      }
    } else {
      size_t b = 0;
      while (count != 0) {
        const size_t e = s.find(from, b);
        if (e == std::string::npos) break;
        r += s.substr(b, e - b) + to;
        b = e + from.size();
        if (count > 0) --count;
      }
      r += s.substr(b);
    }
    out = value::string(r);
  } else if (name == "find" || name == "rfind") {
    const std::string sub = need_str(a.get(0, "sub"), name.c_str());
    const size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
    out = value::integer(p == std::string::npos ? -1 : static_cast<int64_t>(value::string(s.substr(0, p)).length()));
  } else if (name == "count") {
    const std::string sub = need_str(a.get(0, "sub"), "count");
    int64_t n = 0;
    if (sub.empty()) n = static_cast<int64_t>(value::string(s).length()) + 1;
    else
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    out = value::integer(n);
  } else if (name == "join") {
    std::string r;
    bool first = true;
    for (const auto& item : iterate(a.get(0, "iterable"))) {
      if (!first) r += s;
      first = false;
      r += need_str(item, "join");
    }
    out = value::string(r);
  } else if (name == "splitlines") {
    value_list lines;
    for (auto& line : python_splitlines(s)) lines.push_back(value::string(std::move(line)));
    out = value::list(std::move(lines));
  } else if (name == "isdigit" || name == "isalpha" || name == "isspace") {
    bool all = !s.empty();
    for (uint32_t c : to_cpts(s)) {
      if (name == "isspace") all = all && is_python_space(c);
      else if (name == "isdigit") all = all && c < 0x80 && std::isdigit(static_cast<int>(c));
      else all = all && c < 0x80 && std::isalpha(static_cast<int>(c));
    }
    out = value::boolean(all);
  } else if (name == "format") {
    out = value::string(format(s, a));
  } else {
    return false;
  }
  return true;
}

bool dict_method(const value& d, const std::string& name, const call_args& a, value& out) {
  value_list items;
  if (name == "items") {
    for (const auto& kv : d.entries()) items.push_back(value::tuple({kv.first, kv.second}));
  } else if (name == "keys") {
    for (const auto& kv : d.entries()) items.push_back(kv.first);
  } else if (name == "values") {
    for (const auto& kv : d.entries()) items.push_back(kv.second);
  } else if (name == "get") {
    const value key = a.get(0, "key");
    require_hashable(key);
    const value* v = d.find_key(key);
    const value def = a.get(1, "default");
    out = v ? *v : def.is_undefined() ? value::none() : def;
    return true;
  } else {
    return false;
  }
  out = value::list(std::move(items));
  return true;
}

}  // namespace

bool is_known_method(const std::string& name) {
  return string_methods().count(name) != 0 || dict_methods().count(name) != 0;
}

bool call_method(const value& obj, const std::string& name, const call_args& args, value& out) {
  if (obj.is_markup() && string_methods().count(name)) return call_markup_method(obj, name, args, out);
  if (obj.is_string() && string_methods().count(name)) return string_method(obj.str_ref(), name, args, out);
  if (obj.type() == value::kind::dict && dict_methods().count(name)) return dict_method(obj, name, args, out);
  return false;
}

}  // namespace cortex::chat
