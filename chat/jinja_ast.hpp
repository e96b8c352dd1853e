// The parsed form of a chat template: expression and statement trees built
// once by jinja_parser and walked by jinja_interpreter on every render.
// Immutable after parsing (shared by concurrent renders).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.hpp"

namespace cortex::chat {

struct expr;
using expr_ptr = std::unique_ptr<expr>;

enum class ex : uint8_t {
  literal,   // lit
  name,      // name
  list,      // args = items
  tuple,     // args = items (a list at run time)
  dict,      // args = key0, value0, key1, value1, ...
  getattr,   // target.name
  getitem,   // target[args[0]]
  slice,     // target[args[0]:args[1]:args[2]], each may be null
  call,      // target(args, kwargs)
  filter,    // target | name(args, kwargs); target null: the text of a filter block
  test,      // target is name(args)
  not_,      // not args[0]
  neg,       // -args[0]
  pos,       // +args[0]
  binary,    // args[0] name args[1]: + - * / // % ** ~
  compare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained as in Python)
  and_,      // args[0] and args[1]
  or_,       // args[0] or args[1]
  cond,      // args[1] if args[0] else args[2] (args[2] null: undefined)
};

struct expr {
  ex kind = ex::literal;
  int line = 0;
  value lit;
  std::string name;
  expr_ptr target;
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
  std::vector<std::string> ops;

  expr() = default;
  expr(const expr&) = delete;
  expr& operator=(const expr&) = delete;
  // Frees the tree below without recursion: the parser reads a chain such
  // as a + b + c + ... or x|f|g|... in a loop, and builds a tree as deep as
  // the chain is long (parse_template rejects one deeper than max_nesting,
  // after building it).
  ~expr() {
    std::vector<expr_ptr> pending;
    auto take_children = [&pending](expr& e) {
      if (e.target) pending.push_back(std::move(e.target));
      for (auto& a : e.args)
        if (a) pending.push_back(std::move(a));
      for (auto& kv : e.kwargs)
        if (kv.second) pending.push_back(std::move(kv.second));
    };
    take_children(*this);
    while (!pending.empty()) {
      expr_ptr e = std::move(pending.back());
      pending.pop_back();
      take_children(*e);
    }  // each e is freed childless
  }
};

struct stmt;
using stmt_ptr = std::unique_ptr<stmt>;
using stmt_list = std::vector<stmt_ptr>;

enum class st : uint8_t {
  text,        // text
  output,      // {{ value }}
  if_,         // branches: (cond, body)..., a null cond is the else
  for_,        // for target in value [if cond]: body {% else %} else_body
  set,         // set target = value (target: name, tuple of names, or ns.attr)
  set_block,   // {% set target %}body{% endset %}
  break_,
  continue_,
  macro,       // name(params with defaults): body
  generation,  // {% generation %}body{% endgeneration %} (transformers' extension): renders body
  filter_block,  // {% filter value %}body{% endfilter %}: body rendered in its own scope, then
                 // passed through value, a filter chain whose innermost target is null
};

struct stmt {
  st kind = st::text;
  int line = 0;
  std::string text;
  expr_ptr value;
  expr_ptr target;
  expr_ptr cond;
  std::vector<std::pair<expr_ptr, stmt_list>> branches;
  stmt_list body;
  stmt_list else_body;
  std::string name;
  std::vector<std::pair<std::string, expr_ptr>> params;  // expr null: no default
};

}  // namespace cortex::chat
