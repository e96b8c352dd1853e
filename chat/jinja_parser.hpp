// Builds the statement tree of a Jinja2 template from its tokens, with
// Jinja2 3.1's grammar and operator precedence (filters and `is` tests bind
// tighter than arithmetic: `x|length - 1` is `(x|length) - 1`).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "chat/jinja_ast.hpp"
#include "chat/jinja_lexer.hpp"
#include "base/expected.hpp"

namespace cortex::chat {

struct parsed_template {
  stmt_list body;
  // Names the template uses, for load-time checks against the builtins.
  std::set<std::string> filters, tests, methods, called_names, macros;
};

// Errors say what is wrong and the line: an unsupported tag ("line 3:
// unsupported tag 'include'"), an unclosed block, a malformed expression,
// nesting deeper than max_nesting.
expected<parsed_template> parse_template(const std::vector<token>& tokens);

// Deep enough for any real template; bounds the parser's and the
// renderer's recursion (and so their stack use).
constexpr int max_nesting = 100;

}  // namespace cortex::chat
