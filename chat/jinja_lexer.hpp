// Splits a Jinja2 template into tokens the way Jinja2 3.1's lexer does with
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False:
// newlines normalized to "\n", one trailing newline dropped, `{%- -%}`
// `{{- -}}` `{#- -#}` strip all white space on their side, `{%+` keeps it,
// comments vanish, `{% raw %}` bodies are text. Text tokens come out with
// the white space already removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.hpp"

namespace cortex::chat {

enum class tok : uint8_t {
  text,         // literal template text
  var_begin,    // {{
  var_end,      // }}
  block_begin,  // {%
  block_end,    // %}
  name,
  string,       // text = the decoded string
  integer,      // ival
  floating,     // fval
  op,           // text = the operator: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  eof,
};

struct token {
  tok type = tok::eof;
  std::string text;
  int line = 1;
  int64_t ival = 0;
  double fval = 0;
};

// Errors name the line: an unclosed tag, comment or string, a stray character.
expected<std::vector<token>> lex_template(const std::string& source);

}  // namespace cortex::chat
