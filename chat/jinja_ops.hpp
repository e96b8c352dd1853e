// Python/Jinja2 semantics of the operations on values: attribute and item
// lookup, iteration, slicing, arithmetic and comparison. Every function
// throws template_error with Python's wording on a type error or on the use
// of an undefined value where Jinja2's default Undefined raises.
#pragma once

#include <string>

#include "chat/jinja_value.hpp"

namespace cortex::chat {

// x.name: a dict/namespace entry, else undefined (raises on undefined x).
value get_attr(const value& obj, const std::string& name);
// x[key]: dict entry, list/str element (negative counts from the end);
// undefined when missing (raises on undefined x).
value get_item(const value& obj, const value& key);
// x[start:stop:step] on a str or list (null-like = undefined arguments).
value get_slice(const value& obj, const value& start, const value& stop, const value& step);
// The items a for loop sees: list items, dict keys, string characters;
// undefined iterates as empty. Raises for None, numbers.
value_list iterate(const value& v);
// + - * / // % ** and ~ (op is the operator text). `~` always gives a
// plain str (jinja2's str_join), `+` with a Markup operand a Markup.
value binary_op(const std::string& op, const value& a, const value& b);
// == != < > <= >= in, "not in".
bool compare_op(const std::string& op, const value& a, const value& b);
// Python's printf-style `fmt % args` (%s %r %d %i %f %% with optional
// width/precision): the `%` operator on a string and the format filter.
// escape_args: Markup's `%`, which HTML-escapes what %s and %r insert
// (a Markup argument of %s as it is).
std::string percent_format(const std::string& fmt, const value_list& args, bool escape_args = false);
// Raises with the undefined value's message when v is undefined.
void require_defined(const value& v);

}  // namespace cortex::chat
