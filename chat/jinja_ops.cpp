#include "chat/jinja_ops.hpp"

#include <cmath>
#include <cstdio>

#include "chat/jinja_markup.hpp"

namespace cortex::chat {

namespace {

[[noreturn]] void type_error(const std::string& msg) { throw template_error(msg); }

std::string missing_attr(const value& obj, const std::string& name) {
  return std::string("'") + type_name(obj) + " object' has no attribute '" + name + "'";
}

// Python's slice.indices(): clamps start/stop for the step's direction.
void slice_indices(int64_t len, const value& start, const value& stop, const value& step, int64_t& b, int64_t& e,
                   int64_t& s) {
  auto is_set = [](const value& v) { return !v.is_undefined() && !v.is_none(); };
  for (const value* v : {&start, &stop, &step})
    if (is_set(*v) && v->type() != value::kind::integer && v->type() != value::kind::boolean)
      type_error("slice indices must be integers or None");
  s = is_set(step) ? step.as_int() : 1;
  if (s == 0) type_error("slice step cannot be zero");
  auto clamp = [&](const value& v, int64_t def) {
    if (!is_set(v)) return def;
    int64_t i = v.as_int();
    if (i < 0) {
      i += len;
      if (i < 0) i = s < 0 ? -1 : 0;
    } else if (i >= len) {
      i = s < 0 ? len - 1 : len;
    }
    return i;
  };
  b = clamp(start, s < 0 ? len - 1 : 0);
  e = clamp(stop, s < 0 ? -1 : len);
}

// op(x, y, &r) is a __builtin_*_overflow; Python ints do not overflow, ours fail.
template <class Op>
int64_t checked(Op op, int64_t x, int64_t y) {
  int64_t r = 0;
  if (op(x, y, &r)) type_error("integer overflow in the template's arithmetic");
  return r;
}
bool add_ovf(int64_t x, int64_t y, int64_t* r) { return __builtin_add_overflow(x, y, r); }
bool sub_ovf(int64_t x, int64_t y, int64_t* r) { return __builtin_sub_overflow(x, y, r); }
bool mul_ovf(int64_t x, int64_t y, int64_t* r) { return __builtin_mul_overflow(x, y, r); }

int three_way(const value& a, const value& b, const std::string& op, int depth = 0) {
  if (depth > max_compare_depth) type_error("maximum recursion depth exceeded in comparison");
  if (a.is_number() && b.is_number()) {
    if (a.type() != value::kind::floating && b.type() != value::kind::floating)
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str_ref().compare(b.str_ref());  // UTF-8 byte order = code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return three_way(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  require_defined(a);
  require_defined(b);
  type_error("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

value capped(std::string s) {
  if (s.size() > max_value_bytes)
    type_error("a string the template builds exceeds " + std::to_string(max_value_bytes) + " bytes");
  return value::string(std::move(s));
}

}  // namespace

void require_defined(const value& v) {
  if (v.is_undefined()) throw template_error(v.str_ref().empty() ? "undefined value used" : v.str_ref());
}

value get_attr(const value& obj, const std::string& name) {
  require_defined(obj);
  if (obj.is_mapping()) {
    if (const value* v = obj.find(name)) return *v;
  }
  return value::undefined(missing_attr(obj, name));
}

value get_item(const value& obj, const value& key) {
  require_defined(obj);
  if (obj.is_mapping()) {
    // An unhashable key finds nothing: jinja2's getitem turns the TypeError into undefined.
    if (const value* v = obj.find_key(key)) return *v;
    return value::undefined(missing_attr(obj, to_str(key)));
  }
  const bool int_key = key.type() == value::kind::integer || key.type() == value::kind::boolean;
  if (obj.is_list() && int_key) {
    int64_t i = key.as_int();
    const auto n = static_cast<int64_t>(obj.items().size());
    if (i < 0) i += n;
    if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
    return value::undefined(std::string("list object has no element ") + std::to_string(key.as_int()));
  }
  if (obj.is_string() && int_key) {
    const auto cpts = to_cpts(obj.str_ref());
    int64_t i = key.as_int();
    const auto n = static_cast<int64_t>(cpts.size());
    if (i < 0) i += n;
    if (i >= 0 && i < n) return same_str_kind(obj, from_cpts(cpts, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    return value::undefined(std::string("str object has no element ") + std::to_string(key.as_int()));
  }
  if (key.is_string()) return get_attr(obj, key.str_ref());
  return value::undefined(missing_attr(obj, to_str(key)));
}

value get_slice(const value& obj, const value& start, const value& stop, const value& step) {
  require_defined(obj);
  int64_t b, e, s;
  if (obj.is_list()) {
    slice_indices(static_cast<int64_t>(obj.items().size()), start, stop, step, b, e, s);
    value_list out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(obj.items()[static_cast<size_t>(i)]);
    return value::list(std::move(out));
  }
  if (obj.is_string()) {
    const auto cpts = to_cpts(obj.str_ref());
    slice_indices(static_cast<int64_t>(cpts.size()), start, stop, step, b, e, s);
    std::vector<uint32_t> out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(cpts[static_cast<size_t>(i)]);
    return same_str_kind(obj, from_cpts(out, 0, out.size()));
  }
  type_error(std::string("'") + type_name(obj) + "' object is not subscriptable");
}

value_list iterate(const value& v) {
  switch (v.type()) {
    case value::kind::undefined: return {};
    case value::kind::list: return v.items();
    case value::kind::dict: {
      value_list keys;
      for (const auto& kv : v.entries()) keys.push_back(kv.first);
      return keys;
    }
    case value::kind::string: {
      value_list chars;
      const auto cpts = to_cpts(v.str_ref());
      for (size_t i = 0; i < cpts.size(); ++i) chars.push_back(value::string(from_cpts(cpts, i, i + 1)));
      return chars;
    }
    default: type_error(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

value binary_op(const std::string& op, const value& a, const value& b) {
  if (op == "~") return capped(to_str(a) + to_str(b));
  require_defined(a);
  require_defined(b);
  const bool ints = a.is_number() && b.is_number() && a.type() != value::kind::floating &&
                    b.type() != value::kind::floating;
  const bool nums = a.is_number() && b.is_number();
  const int64_t x = a.as_int(), y = b.as_int();
  if (op == "+") {
    if (ints) return value::integer(checked(add_ovf, x, y));
    if (nums) return value::floating(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() || b.is_markup()) return markup_concat(a, b);
      return capped(a.str_ref() + b.str_ref());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      if (a.items().size() + b.items().size() > max_value_bytes / 16) type_error("a list the template builds is too long");
      value_list out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.is_tuple() ? value::tuple(std::move(out)) : value::list(std::move(out));
    }
  } else if (op == "-") {
    if (ints) return value::integer(checked(sub_ovf, x, y));
    if (nums) return value::floating(a.as_double() - b.as_double());
  } else if (op == "*") {
    if (ints) return value::integer(checked(mul_ovf, x, y));
    if (nums) return value::floating(a.as_double() * b.as_double());
    const value* s = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const value* n = s == &a ? &b : &a;
    if (s && n->is_number() && n->type() != value::kind::floating) {
      const int64_t times = n->as_int();
      const size_t unit = s->is_string() ? s->str_ref().size() : s->items().size();
      const size_t limit = max_value_bytes / (s->is_string() ? 1 : 16);
      if (times > 0 && unit > 0 && static_cast<uint64_t>(times) > limit / unit)
        type_error("a repeated string or list exceeds " + std::to_string(max_value_bytes) + " bytes");
      if (unit == 0 || times <= 0) return s->is_string() ? same_str_kind(*s, "") : value::list();
      if (s->is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += s->str_ref();
        return same_str_kind(*s, std::move(out));
      }
      value_list out;
      for (int64_t i = 0; i < times; ++i) out.insert(out.end(), s->items().begin(), s->items().end());
      return value::list(std::move(out));
    }
  } else if (op == "/") {
    if (nums) {
      if (b.as_double() == 0) type_error("division by zero");
      return value::floating(a.as_double() / b.as_double());
    }
  } else if (op == "%" && a.is_string()) {
    // Markup % x escapes what it inserts and stays Markup; str % Markup is a str.
    value out = capped(percent_format(a.str_ref(), b.is_tuple() ? b.items() : value_list{b}, a.is_markup()));
    return a.is_markup() ? value::markup(out.str_ref()) : out;
  } else if (op == "//" || op == "%") {
    if (ints) {
      if (y == 0) type_error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) type_error("integer overflow in the template's arithmetic");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        m += y;
      }
      return value::integer(op == "//" ? q : m);
    }
    if (nums) {
      const double dy = b.as_double();
      if (dy == 0) type_error("float division or modulo by zero");
      const double q = std::floor(a.as_double() / dy);
      return value::floating(op == "//" ? q : a.as_double() - q * dy);
    }
  } else if (op == "**") {
    if (ints && y >= 0) {  // by squaring: O(log y) steps, overflow is an error
      int64_t acc = 1, base = x;
      for (int64_t e = y; e > 0; e >>= 1) {
        if (e & 1) acc = checked(mul_ovf, acc, base);
        if (e > 1) base = checked(mul_ovf, base, base);
      }
      return value::integer(acc);
    }
    if (nums) return value::floating(std::pow(a.as_double(), b.as_double()));
  }
  type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

std::string percent_format(const std::string& fmt, const value_list& args, bool escape_args) {
  std::string out;
  size_t next_arg = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < fmt.size() && std::string("-+ 0#.123456789").find(fmt[j]) != std::string::npos) spec += fmt[j++];
    if (j >= fmt.size()) type_error("incomplete format");
    const char conv = fmt[j];
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (spec.size() > 8) type_error("format specification too long");
    if (next_arg >= args.size()) type_error("not enough arguments for format string");
    const value& v = args[next_arg++];
    char buf[512];
    if (conv == 's' || conv == 'r') {
      std::string text = conv == 's' ? to_str(v) : to_repr(v);
      if (escape_args && (conv == 'r' || !v.is_markup())) text = html_escape(text);
      if (spec == "%") {
        out += text;
        continue;
      }
      std::snprintf(buf, sizeof buf, (spec + "s").c_str(), text.c_str());
    } else if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
      if (!v.is_number()) type_error(std::string("%") + conv + " format: a number is required, not " + type_name(v));
      const char* len = conv == 'd' || conv == 'i' ? "lld" : conv == 'x' ? "llx" : conv == 'X' ? "llX" : "llo";
      std::snprintf(buf, sizeof buf, (spec + len).c_str(), static_cast<long long>(v.as_int()));
    } else if (conv == 'f' || conv == 'e' || conv == 'g') {
      if (!v.is_number()) type_error(std::string("%f format: a real number is required, not ") + type_name(v));
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_double());
    } else {
      type_error(std::string("unsupported format character '") + conv + "'");
    }
    out += buf;
  }
  if (next_arg < args.size()) type_error("not all arguments converted during string formatting");
  return out;
}

bool compare_op(const std::string& op, const value& a, const value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string()) {
        require_defined(a);
        type_error(std::string("'in <string>' requires string as left operand, not ") + type_name(a));
      }
      found = b.str_ref().find(a.str_ref()) != std::string::npos;
    } else if (b.is_list()) {
      for (const auto& item : b.items()) found = found || equals(a, item);
    } else if (b.is_mapping()) {
      require_hashable(a);
      found = b.find_key(a) != nullptr;
    } else if (!b.is_undefined()) {
      type_error(std::string("argument of type '") + type_name(b) + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  const int c = three_way(a, b, op);
  if (op == "<") return c < 0;
  if (op == ">") return c > 0;
  if (op == "<=") return c <= 0;
  return c >= 0;  // ">="
}

}  // namespace cortex::chat
