// The filters, tests and methods a chat template may use, with Jinja2 3.1's
// and Python's semantics (plus transformers' tojson). Names outside these
// lists are reported as warnings when a template is parsed and fail the
// render that reaches them. All functions throw template_error on bad use.
#pragma once

#include <string>

#include "chat/jinja_value.hpp"

namespace cortex::chat {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);
bool is_known_method(const std::string& name);

// v | name(args). Throws for an unknown filter.
value apply_filter(const std::string& name, const value& v, const call_args& args);
// v is name(args). Throws for an unknown test.
bool apply_test(const std::string& name, const value& v, const call_args& args);
// obj.name(args) for str and dict methods; false when obj's type has no
// method of that name.
bool call_method(const value& obj, const std::string& name, const call_args& args, value& out);

}  // namespace cortex::chat
