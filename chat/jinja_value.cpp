#include "chat/jinja_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/unicode.hpp"

namespace cortex::chat {

namespace {

// Frees lists and dicts without recursion. A template can nest a value as
// deep as its loop runs ({% set ns.x = [ns.x] %}); freeing the outer list
// would free the next from inside its destructor, and so on, one stack
// frame each. Here a container whose last reference goes is queued, and
// the outermost free on the thread empties the queue in a loop (a free
// nested in it only queues).
struct container_reaper {
  std::vector<value_list*> lists;
  std::vector<value_dict*> dicts;
  bool running = false;
};
thread_local container_reaper reaper;

void reap() {
  if (reaper.running) return;
  reaper.running = true;
  while (!reaper.lists.empty() || !reaper.dicts.empty()) {
    if (!reaper.lists.empty()) {
      value_list* l = reaper.lists.back();
      reaper.lists.pop_back();
      delete l;
    } else {
      value_dict* d = reaper.dicts.back();
      reaper.dicts.pop_back();
      delete d;
    }
  }
  reaper.running = false;
}

void free_list(value_list* l) {
  reaper.lists.push_back(l);
  reap();
}
void free_dict(value_dict* d) {
  reaper.dicts.push_back(d);
  reap();
}

}  // namespace

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
value value::markup(std::string s) {
  value v = string(std::move(s));
  v.markup_ = true;
  return v;
}
value value::list(value_list items) {
  value v;
  v.kind_ = kind::list;
  v.list_ = std::shared_ptr<value_list>(new value_list(std::move(items)), free_list);
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
  v.dict_ = std::shared_ptr<value_dict>(new value_dict(std::move(items)), free_dict);
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
      for (auto it = j.begin(); it != j.end(); ++it)
        items.emplace_back(value::string(it.key()), json_to_value(it.value(), depth + 1));
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
    if (kv.first.is_string() && kv.first.str_ref() == key) return &kv.second;
  return nullptr;
}

const value* value::find_key(const value& key) const {
  if (key.is_string()) return find(key.str_ref());
  for (const auto& kv : *dict_)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}

void value::set(const std::string& key, value v) {
  for (auto& kv : *dict_)
    if (kv.first.is_string() && kv.first.str_ref() == key) {
      kv.second = std::move(v);
      return;
    }
  dict_->emplace_back(value::string(key), std::move(v));
}

void value::set_key(const value& key, value v) {
  for (auto& kv : *dict_)
    if (equals(kv.first, key)) {
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

const char* type_name(const value& v) {
  switch (v.type()) {
    case value::kind::undefined: return "Undefined";
    case value::kind::none: return "NoneType";
    case value::kind::boolean: return "bool";
    case value::kind::integer: return "int";
    case value::kind::floating: return "float";
    case value::kind::string: return v.is_markup() ? "Markup" : "str";
    case value::kind::list: return v.is_tuple() ? "tuple" : "list";
    case value::kind::dict: return "dict";
    case value::kind::ns: return "Namespace";
    case value::kind::callable: return "function";
  }
  return "?";
}

namespace {

bool equals_at(const value& a, const value& b, int depth) {
  if (depth > max_compare_depth) throw template_error("maximum recursion depth exceeded in comparison");
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
      if (&a.items() == &b.items()) return true;  // one object: Python compares items by identity first
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!equals_at(a.items()[i], b.items()[i], depth + 1)) return false;
      return true;
    }
    case value::kind::dict: {
      if (&a.entries() == &b.entries()) return true;
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& kv : a.entries()) {
        const value* other = b.find_key(kv.first);
        if (!other || !equals_at(kv.second, *other, depth + 1)) return false;
      }
      return true;
    }
    case value::kind::ns: return &a.entries() == &b.entries();  // identity, as Python's object ==
    default: return false;
  }
}

void require_hashable_at(const value& v, int depth) {
  if (depth > max_compare_depth) throw template_error("maximum recursion depth exceeded while hashing");
  if (v.type() == value::kind::dict || (v.is_list() && !v.is_tuple()))
    throw template_error(std::string("unhashable type: '") + type_name(v) + "'");
  if (v.is_tuple())
    for (const auto& item : v.items()) require_hashable_at(item, depth + 1);
}

}  // namespace

bool equals(const value& a, const value& b) { return equals_at(a, b, 0); }
void require_hashable(const value& v) { require_hashable_at(v, 0); }

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

std::vector<std::string> python_splitlines(const std::string& s) {
  std::vector<std::string> lines;
  const auto cpts = to_cpts(s);
  size_t b = 0;
  for (size_t i = 0; i < cpts.size(); ++i) {
    const uint32_t c = cpts[i];
    const bool brk = (c >= 0x0A && c <= 0x0D) || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    lines.push_back(from_cpts(cpts, b, i));
    if (c == '\r' && i + 1 < cpts.size() && cpts[i + 1] == '\n') ++i;
    b = i + 1;
  }
  if (b < cpts.size()) lines.push_back(from_cpts(cpts, b, cpts.size()));
  return lines;
}

}  // namespace cortex::chat
