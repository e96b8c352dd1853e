// Jinja2 3.1's expression grammar and operator precedence over the tokens
// of one template: the half of the parser that reads expressions, shared
// by the statement parser in jinja_parser.cpp, which derives from it.
// Internal to chat/. Every parse_* consumes the expression's tokens and
// throws parse_error ("line N: what") on malformed input.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "chat/jinja_ast.hpp"
#include "chat/jinja_lexer.hpp"
#include "chat/jinja_parser.hpp"

namespace cortex::chat {

struct parse_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class expr_parser {
 public:
  // REQUIRES: toks ends with an eof token. The names the expressions use
  // (filters, tests, methods, called functions) are added to `out`.
  expr_parser(const std::vector<token>& toks, parsed_template& out) : t_(toks), out_(out) {}

  // a, b, ... (a tuple when there is a comma) or one expression.
  expr_ptr parse_tuple(bool with_condexpr);
  expr_ptr parse_expression(bool with_condexpr = true);
  // name(args)|name(args)...: the filter of a {% filter %} block, whose
  // innermost target is null (the block's rendered text).
  expr_ptr parse_filter_chain();

 protected:
  [[noreturn]] void fail(const std::string& msg, int line = -1) const;
  const token& cur() const { return t_[pos_]; }
  const token& peek(size_t n = 1) const { return t_[std::min(pos_ + n, t_.size() - 1)]; }
  const token& next() {
    const token& t = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == tok::op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == tok::name && cur().text == n; }
  static std::string describe(const token& t);
  void expect_op(const char* op);
  std::string expect_name();
  void expect(tok type, const char* what);
  expr_ptr node(ex kind, int line);

  // Bounds the recursion of both halves of the parser (max_nesting).
  struct depth_guard {
    explicit depth_guard(expr_parser& p) : p_(p) {
      if (++p_.depth_ > max_nesting) p_.fail("template nested too deeply (more than " + std::to_string(max_nesting) + " levels)");
    }
    ~depth_guard() { --p_.depth_; }
    expr_parser& p_;
  };

  const std::vector<token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  parsed_template& out_;

 private:
  expr_ptr unary_node(ex kind, int line, expr_ptr a);
  expr_ptr binary_node(ex kind, std::string op, expr_ptr a, expr_ptr b);
  expr_ptr parse_condexpr();
  expr_ptr parse_or();
  expr_ptr parse_and();
  expr_ptr parse_not();
  expr_ptr parse_compare();
  expr_ptr parse_binary_level(int level);
  expr_ptr parse_math1();
  expr_ptr parse_unary(bool with_filter);
  expr_ptr parse_primary();
  expr_ptr parse_postfix(expr_ptr e);
  expr_ptr parse_subscript(expr_ptr target);
  void parse_call_args(expr& e);
  expr_ptr parse_call(expr_ptr callee);
  std::string dotted_name();
  // name[(args)] applied to target (after its '|').
  expr_ptr parse_filter(expr_ptr target, int line);
  expr_ptr parse_filter_expr(expr_ptr e);
};

}  // namespace cortex::chat
