// The values a chat template computes with: Python's types as Jinja2 sees
// them (None, bool, int, float, str, list, dict), markupsafe's Markup (a str
// marked safe), Jinja's undefined, a namespace() object and callables. Lists, dicts and namespaces are shared
// by reference (copying a value is cheap; a namespace assignment is seen
// through every copy, as in Python). Strings are UTF-8; lengths, indexes
// and slices count code points, as Python's str does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cortex::chat {

// A render-time failure. Internal to chat/: chat_template::render
// catches it and returns its message; nothing throws across that API.
struct template_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class value;
using value_list = std::vector<value>;
// Entries in insertion order (JSON input order is kept, as Python's dict
// does). A key is any hashable value: str (every key from JSON), int,
// float, bool, None, tuple (dict literals). Keys Python's == calls equal
// (1, 1.0, True; a str and a Markup of the same text) are one key.
using value_dict = std::vector<std::pair<value, value>>;
struct call_args;
using native_fn = std::function<value(call_args&)>;

class value {
 public:
  enum class kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };

  value() = default;  // undefined
  static value undefined(std::string name = {});
  static value none();
  static value boolean(bool b);
  static value integer(int64_t i);
  static value floating(double f);
  static value string(std::string s);
  // markupsafe's Markup, what |safe and |escape return: a str whose text is
  // HTML-safe already. It prints as is and is == to the same plain text;
  // `+`, `%` and its methods HTML-escape the plain strings they combine
  // with it (jinja_markup.hpp).
  static value markup(std::string s);
  static value list(value_list items = {});
  // A Python tuple: a list that prints as (a, b) and is never == a list.
  static value tuple(value_list items);
  static value dict(value_dict items = {});
  static value make_namespace(value_dict items = {});
  static value callable(std::string name, native_fn fn);
  // JSON null is None. ordered_json keeps object keys in input order (what
  // templates see); nlohmann::json has them sorted. Throws template_error
  // for input nested deeper than max_json_depth.
  static value from_json(const nlohmann::ordered_json& j);
  static value from_json(const nlohmann::json& j);

  kind type() const { return kind_; }
  bool is_undefined() const { return kind_ == kind::undefined; }
  bool is_none() const { return kind_ == kind::none; }
  bool is_string() const { return kind_ == kind::string; }  // str and Markup
  bool is_markup() const { return markup_; }
  bool is_number() const { return kind_ == kind::integer || kind_ == kind::floating || kind_ == kind::boolean; }
  bool is_list() const { return kind_ == kind::list; }  // lists and tuples
  bool is_tuple() const { return tuple_; }
  bool is_mapping() const { return kind_ == kind::dict || kind_ == kind::ns; }

  bool as_bool() const { return b_; }
  // Floats truncate toward zero; those int64 cannot hold saturate and NaN
  // gives 0 (casting them is undefined behaviour).
  int64_t as_int() const { return kind_ == kind::floating ? float_to_int(f_) : i_; }
  static int64_t float_to_int(double f) {
    if (f != f) return 0;
    if (f >= 9223372036854775808.0) return INT64_MAX;  // 2^63
    if (f < -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(f);
  }
  double as_double() const { return kind_ == kind::floating ? f_ : static_cast<double>(i_); }
  const std::string& str_ref() const { return s_; }  // string text, or the undefined's name
  const value_list& items() const { return *list_; }
  value_list& items() { return *list_; }
  const value_dict& entries() const { return *dict_; }
  value_dict& entries() { return *dict_; }
  const native_fn& fn() const { return *fn_; }

  // Python truthiness; undefined is false.
  bool truthy() const;
  // Entry of a dict/namespace under a str key, or nullptr.
  const value* find(const std::string& key) const;
  // Entry under a key equal to `key` as Python's dict compares keys, or
  // nullptr. REQUIRES: mapping.
  const value* find_key(const value& key) const;
  // Sets or appends an entry of a dict/namespace (an equal key keeps its
  // first spelling: {1: 'a', 1.0: 'b'} is {1: 'b'}).
  void set(const std::string& key, value v);
  void set_key(const value& key, value v);
  // len(): code points of a string, items of a list or dict; REQUIRES sized.
  bool has_length() const;
  size_t length() const;

 private:
  kind kind_ = kind::undefined;
  bool b_ = false;
  bool tuple_ = false;
  bool markup_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<value_list> list_;
  std::shared_ptr<value_dict> dict_;
  std::shared_ptr<native_fn> fn_;
};

constexpr int max_json_depth = 128;
// ==, <, in and dict keys compare values nested at most this deep; deeper
// is an error, as Python's RecursionError (values a loop nests can be
// deeper: they are freed without recursion).
constexpr int max_compare_depth = 500;
// No string or list a template builds may exceed this (bounds memory when
// a template doubles a string in a loop).
constexpr size_t max_value_bytes = 16u << 20;

// Arguments of a call: positional then keyword, in call order.
struct call_args {
  std::vector<value> positional;
  std::vector<std::pair<std::string, value>> keyword;
  // The argument by position or keyword, or undefined.
  value get(size_t pos, const char* name) const;
};

// Throws Python's "unhashable type: 'list'" unless v can be a dict key
// (lists, dicts and tuples holding them cannot).
void require_hashable(const value& v);

// The printing functions below live in jinja_print.cpp.
// Python str(x) as Jinja prints it ("" for undefined, None, True, 1.5, [..]).
std::string to_str(const value& v);
// Python repr(x) (strings quoted the way Python quotes them, Markup('...')).
std::string to_repr(const value& v);
// json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=...): separators
// ", " and ": " without indent, "," and ": " with it (indent < 0 = none).
// Dict keys print as json.dumps prints them ("1", "true", "null"; a tuple
// key is an error). Throws template_error for undefined or non-JSON values.
std::string to_json(const value& v, int indent = -1, bool sort_keys = false);
// Python's float repr: shortest text that reads back the same (1.0, 1e+16).
std::string python_float_repr(double d);
// Python ==: numbers by value, containers by content (dicts ignore order).
bool equals(const value& a, const value& b);
const char* type_name(const value& v);

// Code points of UTF-8 text, and the reverse.
std::vector<uint32_t> to_cpts(const std::string& s);
std::string from_cpts(const std::vector<uint32_t>& cpts, size_t begin, size_t end);
// str.isspace() for one code point (Unicode White_Space plus U+001C..U+001F).
bool is_python_space(uint32_t cpt);
// str.strip/lstrip/rstrip: with chars == nullptr, Python whitespace.
std::string python_strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.splitlines(): breaks at \n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085,
// U+2028, U+2029; no empty last line for a trailing break.
std::vector<std::string> python_splitlines(const std::string& s);

}  // namespace cortex::chat
