// Filters and tests (see jinja_builtins.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_markup.hpp"
#include "chat/jinja_ops.hpp"

namespace cortex::chat {

namespace {

using filter_fn = value (*)(const value&, const call_args&);
using test_fn = bool (*)(const value&, const call_args&);

std::string arg_str(const call_args& a, size_t pos, const char* name, const std::string& def) {
  const value v = a.get(pos, name);
  return v.is_undefined() ? def : to_str(v);
}

std::string ascii_case(std::string s, bool upper) {
  for (auto& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Dotted attribute path of an item ("a.b"), as Jinja's make_attrgetter.
value attr_path(const value& item, const std::string& path) {
  value cur = item;
  size_t b = 0;
  while (true) {
    const size_t e = path.find('.', b);
    const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    cur = digits ? get_item(cur, value::integer(std::atoll(part.c_str()))) : get_item(cur, value::string(part));
    if (e == std::string::npos) return cur;
    b = e + 1;
  }
}

// Arguments from position `from` on, for a test named inside a filter call.
call_args tail_args(const call_args& a, size_t from) {
  call_args out;
  for (size_t i = from; i < a.positional.size(); ++i) out.positional.push_back(a.positional[i]);
  return out;
}

// select/reject/selectattr/rejectattr. As jinja2's select_or_reject, a
// falsy input (none, undefined, '', [], {}, 0) gives an empty sequence
// before any argument is looked at.
value select_impl(const value& v, const call_args& a, bool by_attr, bool keep) {
  value_list out;
  if (!v.truthy()) return value::list();
  if (by_attr && a.get(0, "attribute").is_undefined()) throw template_error("Missing parameter for attribute name");
  const size_t test_pos = by_attr ? 1 : 0;
  const bool has_test = a.positional.size() > test_pos;
  const std::string attr = by_attr ? arg_str(a, 0, "attribute", "") : "";
  const std::string test = has_test ? to_str(a.positional[test_pos]) : "";
  const call_args targs = tail_args(a, test_pos + 1);
  for (const auto& item : iterate(v)) {
    const value x = by_attr ? attr_path(item, attr) : item;
    const bool pass = has_test ? apply_test(test, x, targs) : x.truthy();
    if (pass == keep) out.push_back(item);
  }
  return value::list(std::move(out));
}

value f_trim(const value& v, const call_args& a) {
  const value chars = a.get(0, "chars");
  const bool has_chars = !chars.is_undefined() && !chars.is_none();
  // Markup.strip escapes its argument: ('<b>'|safe)|trim('<') strips "&lt;".
  const std::string c = !has_chars ? "" : v.is_markup() ? markup_escape(chars).str_ref() : to_str(chars);
  return same_str_kind(v, python_strip(to_str(v), has_chars ? &c : nullptr, true, true));
}
value f_tojson(const value& v, const call_args& a) {
  const value indent = a.get(0, "indent");
  const value sort = a.get(3, "sort_keys");
  const value seps = a.get(2, "separators");
  if (!seps.is_undefined() && !seps.is_none()) throw template_error("tojson: the separators argument is not supported");
  return value::string(to_json(v, indent.is_number() ? static_cast<int>(indent.as_int()) : -1, sort.truthy()));
}
value f_length(const value& v, const call_args&) {
  if (v.is_undefined()) return value::integer(0);
  if (!v.has_length()) throw template_error(std::string("object of type '") + type_name(v) + "' has no len()");
  return value::integer(static_cast<int64_t>(v.length()));
}
value f_items(const value& v, const call_args&) {
  if (v.is_undefined()) return value::list();
  if (!v.is_mapping()) throw template_error(std::string("items: expected a mapping, got '") + type_name(v) + "'");
  value_list out;
  for (const auto& kv : v.entries()) out.push_back(value::tuple({kv.first, kv.second}));
  return value::list(std::move(out));
}
value f_list(const value& v, const call_args&) { return value::list(iterate(v)); }
value f_selectattr(const value& v, const call_args& a) { return select_impl(v, a, true, true); }
value f_rejectattr(const value& v, const call_args& a) { return select_impl(v, a, true, false); }
value f_select(const value& v, const call_args& a) { return select_impl(v, a, false, true); }
value f_reject(const value& v, const call_args& a) { return select_impl(v, a, false, false); }
value f_map(const value& v, const call_args& a) {
  value_list out;
  if (!v.truthy()) return value::list();  // as select_impl: nothing is looked up
  const value attr = a.get(99, "attribute");
  if (!attr.is_undefined()) {
    const value def = a.get(99, "default");
    for (const auto& item : iterate(v)) {
      value x = attr_path(item, to_str(attr));
      out.push_back(x.is_undefined() && !def.is_undefined() ? def : x);
    }
    return value::list(std::move(out));
  }
  if (a.positional.empty()) throw template_error("map: give a filter name or attribute=");
  const std::string filter = to_str(a.positional[0]);
  const call_args fargs = tail_args(a, 1);
  for (const auto& item : iterate(v)) out.push_back(apply_filter(filter, item, fargs));
  return value::list(std::move(out));
}
value f_string(const value& v, const call_args&) { return v.is_markup() ? v : value::string(to_str(v)); }
value f_upper(const value& v, const call_args&) { return same_str_kind(v, ascii_case(to_str(v), true)); }
value f_lower(const value& v, const call_args&) { return same_str_kind(v, ascii_case(to_str(v), false)); }
value f_capitalize(const value& v, const call_args&) {
  std::string s = ascii_case(to_str(v), false);
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return same_str_kind(v, s);
}
// Jinja's title filter: each piece between runs of - ( { [ < and white
// space gets its first character upper-cased and the rest lower-cased.
value f_title(const value& v, const call_args&) {
  std::string s = to_str(v);
  bool start = true;
  for (auto& c : s) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || std::isspace(static_cast<unsigned char>(c));
    if (!sep) c = static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    start = sep;
  }
  return value::string(s);
}
value f_replace(const value& v, const call_args& a) {
  call_args m;
  m.positional = {a.get(0, "old"), a.get(1, "new")};
  const value count = a.get(2, "count");
  if (!count.is_undefined()) m.positional.push_back(count);
  value out;
  call_method(value::string(to_str(v)), "replace", m, out);
  return out;
}
value f_join(const value& v, const call_args& a) {
  const std::string sep = arg_str(a, 0, "d", "");
  const value attr = a.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attr.is_undefined() ? item : attr_path(item, to_str(attr)));
  }
  return value::string(out);
}
value f_default(const value& v, const call_args& a) {
  const bool boolean = a.get(1, "boolean").truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) {
    const value d = a.get(0, "default_value");
    return d.is_undefined() ? value::string("") : d;
  }
  return v;
}
value f_first(const value& v, const call_args&) {
  const auto items = iterate(v);
  return items.empty() ? value::undefined("first: the sequence is empty") : items.front();
}
// last is next(reversed(seq)): reversed() indexes a str, and a Markup's
// items are Markup (first iterates it: plain str).
value f_last(const value& v, const call_args&) {
  const auto items = iterate(v);
  if (items.empty()) return value::undefined("last: the sequence is empty");
  return v.is_markup() ? value::markup(items.back().str_ref()) : items.back();
}
// README "Deviations": integers are 64-bit, an overflow is a render error.
int64_t float_to_int64(double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) throw template_error("int: the number does not fit in 64 bits");
  return static_cast<int64_t>(d);
}
value f_int(const value& v, const call_args& a) {
  if (v.type() == value::kind::floating) return value::integer(float_to_int64(v.as_double()));
  if (v.is_number()) return value::integer(v.as_int());
  const std::string s = python_strip(to_str(v), nullptr, true, true);
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0') return value::integer(i);
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0' && std::isfinite(d)) return value::integer(float_to_int64(d));
  const value def = a.get(0, "default");
  return def.is_undefined() ? value::integer(0) : def;
}
value f_float(const value& v, const call_args& a) {
  if (v.is_number()) return value::floating(v.as_double());
  const std::string s = python_strip(to_str(v), nullptr, true, true);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return value::floating(d);
  const value def = a.get(0, "default");
  return def.is_undefined() ? value::floating(0.0) : def;
}
value f_abs(const value& v, const call_args&) {
  if (v.type() == value::kind::floating) return value::floating(std::fabs(v.as_double()));
  if (v.is_number() && v.as_int() != INT64_MIN) return value::integer(std::llabs(v.as_int()));
  throw template_error(std::string("bad operand type for abs(): '") + type_name(v) + "'");
}
value f_reverse(const value& v, const call_args&) {
  if (v.is_string()) {
    auto cpts = to_cpts(v.str_ref());
    std::reverse(cpts.begin(), cpts.end());
    return same_str_kind(v, from_cpts(cpts, 0, cpts.size()));
  }
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  return value::list(std::move(items));
}
value f_safe(const value& v, const call_args&) { return v.is_markup() ? v : value::markup(to_str(v)); }
value f_escape(const value& v, const call_args&) { return markup_escape(v); }
// jinja2's do_indent: (s + "\n").splitlines(), the lines after the first
// (and the first with first=true) prefixed, empty ones only with blank=true,
// joined by "\n". A Markup stays Markup (its indention is not escaped).
value f_indent(const value& v, const call_args& a) {
  require_defined(v);
  if (!v.is_string())
    throw template_error(std::string("indent: unsupported operand type(s) for +=: '") + type_name(v) + "' and 'str'");
  const value w = a.get(0, "width");
  if (w.is_number() && w.as_int() > 1000) throw template_error("indent: width above 1000");
  const std::string pad = w.is_string() ? w.str_ref() : std::string(w.is_number() ? static_cast<size_t>(std::max<int64_t>(0, w.as_int())) : 4, ' ');
  const bool first = a.get(1, "first").truthy(), blank = a.get(2, "blank").truthy();
  const std::vector<std::string> lines = python_splitlines(v.str_ref() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    if (i == 0 ? first : blank || !lines[i].empty()) out += pad;
    out += lines[i];
  }
  return same_str_kind(v, std::move(out));
}
value f_sort(const value& v, const call_args& a) {
  auto items = iterate(v);
  const bool reverse = a.get(0, "reverse").truthy(), case_sensitive = a.get(1, "case_sensitive").truthy();
  const value attr = a.get(2, "attribute");
  auto key = [&](const value& x) {
    value k = attr.is_undefined() ? x : attr_path(x, to_str(attr));
    return k.is_string() && !case_sensitive ? value::string(ascii_case(k.str_ref(), false)) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const value& x, const value& y) {
    return reverse ? compare_op("<", key(y), key(x)) : compare_op("<", key(x), key(y));
  });
  return value::list(std::move(items));
}

value f_dictsort(const value& v, const call_args& a) {
  if (!v.is_mapping()) throw template_error("dictsort: expected a mapping");
  const bool case_sensitive = a.get(0, "case_sensitive").truthy();
  const bool by_value = to_str(a.get(1, "by")) == "value";
  const bool reverse = a.get(2, "reverse").truthy();
  value_list items;
  for (const auto& kv : v.entries()) items.push_back(value::tuple({kv.first, kv.second}));
  auto key = [&](const value& t) {
    const value& k = t.items()[by_value ? 1 : 0];
    return k.is_string() && !case_sensitive ? value::string(ascii_case(k.str_ref(), false)) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const value& x, const value& y) {
    return reverse ? compare_op("<", key(y), key(x)) : compare_op("<", key(x), key(y));
  });
  return value::list(std::move(items));
}
value f_unique(const value& v, const call_args&) {
  value_list out;
  for (const auto& item : iterate(v)) {
    bool seen = false;
    for (const auto& o : out) seen = seen || equals(o, item);
    if (!seen) out.push_back(item);
  }
  return value::list(std::move(out));
}
value extreme(const value& v, bool want_max) {
  const auto items = iterate(v);
  if (items.empty()) return value::undefined("no items to compare (empty sequence)");
  value best = items[0];
  for (const auto& x : items)
    if (compare_op(want_max ? ">" : "<", x, best)) best = x;
  return best;
}
value f_max(const value& v, const call_args&) { return extreme(v, true); }
value f_min(const value& v, const call_args&) { return extreme(v, false); }
value f_sum(const value& v, const call_args& a) {
  value total = a.get(1, "start");
  if (total.is_undefined()) total = value::integer(0);
  for (const auto& x : iterate(v)) total = binary_op("+", total, x);
  return total;
}
value f_round(const value& v, const call_args& a) {
  if (!v.is_number()) throw template_error(std::string("round: expected a number, not '") + type_name(v) + "'");
  const value p = a.get(0, "precision");
  const std::string method = a.get(1, "method").is_undefined() ? "common" : to_str(a.get(1, "method"));
  const int digits = p.is_number() ? static_cast<int>(p.as_int()) : 0;
  if (method == "common" && digits >= 0 && digits <= 100) {
    // Python's round(x, n): the exact binary value rounded half-to-even, as
    // glibc's printf rounds it.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v.as_double());
    return value::floating(std::strtod(buf, nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(digits));
  const double x = v.as_double() * scale;  // Jinja's ceil/floor: math.ceil(x * 10**n) / 10**n
  const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return value::floating(r / scale);
}
// Attributes only, never items: a dict's keys are not attributes (a namespace's are).
value f_attr(const value& v, const call_args& a) {
  const std::string name = to_str(a.get(0, "name"));
  return v.type() == value::kind::ns ? get_attr(v, name) : value::undefined(std::string("'") + type_name(v) + " object' has no attribute '" + name + "'");
}
value f_format(const value& v, const call_args& a) {
  return same_str_kind(v, percent_format(to_str(v), a.positional, v.is_markup()));
}

const std::map<std::string, filter_fn>& filters() {
  static const std::map<std::string, filter_fn> m = {
      {"trim", f_trim},       {"tojson", f_tojson},       {"length", f_length},         {"count", f_length},
      {"items", f_items},     {"list", f_list},           {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr},
      {"select", f_select},   {"reject", f_reject},       {"map", f_map},               {"string", f_string},
      {"upper", f_upper},     {"lower", f_lower},         {"capitalize", f_capitalize}, {"title", f_title},
      {"replace", f_replace}, {"join", f_join},           {"default", f_default},       {"d", f_default},
      {"first", f_first},     {"last", f_last},           {"int", f_int},               {"float", f_float},
      {"abs", f_abs},         {"reverse", f_reverse},     {"safe", f_safe},             {"escape", f_escape},
      {"e", f_escape},        {"indent", f_indent},       {"sort", f_sort},             {"dictsort", f_dictsort},
      {"unique", f_unique},   {"max", f_max},             {"min", f_min},               {"sum", f_sum},
      {"round", f_round},     {"format", f_format},           {"attr", f_attr},
  };
  return m;
}

// ---- tests ----
value arg0(const call_args& a) {
  if (a.positional.empty()) throw template_error("this test needs an argument");
  return a.positional[0];
}
bool t_defined(const value& v, const call_args&) { return !v.is_undefined(); }
bool t_undefined(const value& v, const call_args&) { return v.is_undefined(); }
bool t_none(const value& v, const call_args&) { return v.is_none(); }
bool t_string(const value& v, const call_args&) { return v.is_string(); }
bool t_mapping(const value& v, const call_args&) { return v.type() == value::kind::dict; }
bool t_iterable(const value& v, const call_args&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.type() == value::kind::dict;
}
bool t_sequence(const value& v, const call_args& a) { return t_iterable(v, a); }
bool t_number(const value& v, const call_args&) { return v.is_number(); }
bool t_integer(const value& v, const call_args&) { return v.type() == value::kind::integer; }
bool t_float(const value& v, const call_args&) { return v.type() == value::kind::floating; }
bool t_boolean(const value& v, const call_args&) { return v.type() == value::kind::boolean; }
bool t_true(const value& v, const call_args&) { return v.type() == value::kind::boolean && v.as_bool(); }
bool t_false(const value& v, const call_args&) { return v.type() == value::kind::boolean && !v.as_bool(); }
bool t_callable(const value& v, const call_args&) { return v.type() == value::kind::callable; }
bool t_odd(const value& v, const call_args&) { return binary_op("%", v, value::integer(2)).as_int() == 1; }
bool t_even(const value& v, const call_args&) { return binary_op("%", v, value::integer(2)).as_int() == 0; }
bool t_divisibleby(const value& v, const call_args& a) { return binary_op("%", v, arg0(a)).as_double() == 0; }
bool t_eq(const value& v, const call_args& a) { return compare_op("==", v, arg0(a)); }
bool t_ne(const value& v, const call_args& a) { return compare_op("!=", v, arg0(a)); }
bool t_lt(const value& v, const call_args& a) { return compare_op("<", v, arg0(a)); }
bool t_le(const value& v, const call_args& a) { return compare_op("<=", v, arg0(a)); }
bool t_gt(const value& v, const call_args& a) { return compare_op(">", v, arg0(a)); }
bool t_ge(const value& v, const call_args& a) { return compare_op(">=", v, arg0(a)); }
bool t_in(const value& v, const call_args& a) { return compare_op("in", v, arg0(a)); }
bool t_sameas(const value& v, const call_args& a) {
  const value o = arg0(a);
  if (v.type() != o.type()) return false;
  if (v.is_none() || v.is_undefined()) return true;
  if (v.type() == value::kind::boolean) return v.as_bool() == o.as_bool();
  if (v.is_mapping()) return &v.entries() == &o.entries();
  if (v.is_list()) return &v.items() == &o.items();
  return false;
}
bool t_lower(const value& v, const call_args&) { return v.is_string() && ascii_case(v.str_ref(), false) == v.str_ref(); }
bool t_upper(const value& v, const call_args&) { return v.is_string() && ascii_case(v.str_ref(), true) == v.str_ref(); }

const std::map<std::string, test_fn>& tests() {
  static const std::map<std::string, test_fn> m = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},       {"string", t_string},
      {"mapping", t_mapping}, {"iterable", t_iterable},   {"sequence", t_sequence}, {"number", t_number},
      {"integer", t_integer}, {"float", t_float},         {"boolean", t_boolean}, {"true", t_true},
      {"false", t_false},     {"callable", t_callable},   {"odd", t_odd},         {"even", t_even},
      {"divisibleby", t_divisibleby}, {"eq", t_eq},       {"equalto", t_eq},      {"==", t_eq},
      {"ne", t_ne},           {"!=", t_ne},               {"lt", t_lt},           {"lessthan", t_lt},
      {"<", t_lt},            {"le", t_le},               {"<=", t_le},           {"gt", t_gt},
      {"greaterthan", t_gt},  {">", t_gt},                {"ge", t_ge},           {">=", t_ge},
      {"in", t_in},           {"sameas", t_sameas},       {"lower", t_lower},     {"upper", t_upper},
  };
  return m;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }
bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

value apply_filter(const std::string& name, const value& v, const call_args& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw template_error("unknown filter '" + name + "'");
  return it->second(v, args);
}

bool apply_test(const std::string& name, const value& v, const call_args& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) throw template_error("unknown test '" + name + "'");
  return it->second(v, args);
}

}  // namespace cortex::chat
