// The expression half of the parser (see jinja_expr_parser.hpp).
#include "chat/jinja_expr_parser.hpp"

namespace cortex::chat {

void expr_parser::fail(const std::string& msg, int line) const {
  throw parse_error("line " + std::to_string(line < 0 ? cur().line : line) + ": " + msg);
}

std::string expr_parser::describe(const token& t) {
  switch (t.type) {
    case tok::text: return "template text";
    case tok::var_begin: return "'{{'";
    case tok::var_end: return "'}}'";
    case tok::block_begin: return "'{%'";
    case tok::block_end: return "'%}'";
    case tok::eof: return "the end of the template";
    case tok::string: return "a string";
    case tok::integer:
    case tok::floating: return "number " + t.text;
    default: return "'" + t.text + "'";
  }
}
void expr_parser::expect_op(const char* op) {
  if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe(cur()));
  next();
}
std::string expr_parser::expect_name() {
  if (cur().type != tok::name) fail("expected a name, found " + describe(cur()));
  return next().text;
}
void expr_parser::expect(tok type, const char* what) {
  if (cur().type != type) fail(std::string("expected ") + what + ", found " + describe(cur()));
  next();
}


expr_ptr expr_parser::node(ex kind, int line) {
  auto e = std::make_unique<expr>();
  e->kind = kind;
  e->line = line;
  return e;
}
expr_ptr expr_parser::unary_node(ex kind, int line, expr_ptr a) {
  auto e = node(kind, line);
  e->args.push_back(std::move(a));
  return e;
}
expr_ptr expr_parser::binary_node(ex kind, std::string op, expr_ptr a, expr_ptr b) {
  auto e = node(kind, a->line);
  e->name = std::move(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

expr_ptr expr_parser::parse_tuple(bool with_condexpr) {
  const int line = cur().line;
  expr_ptr first = parse_expression(with_condexpr);
  if (!is_op(",")) return first;
  auto t = node(ex::tuple, line);
  t->args.push_back(std::move(first));
  while (is_op(",")) {
    next();
    if (cur().type == tok::block_end || cur().type == tok::var_end || is_op(")") || is_name("in")) break;
    t->args.push_back(parse_expression(with_condexpr));
  }
  return t;
}

expr_ptr expr_parser::parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

expr_ptr expr_parser::parse_condexpr() {
  expr_ptr e = parse_or();
  while (is_name("if")) {
    const int line = next().line;
    auto c = node(ex::cond, line);
    c->args.push_back(parse_or());
    c->args.push_back(std::move(e));
    if (is_name("else")) {
      next();
      depth_guard g(*this);  // a else b if c else ...: one level per else
      c->args.push_back(parse_condexpr());
    } else {
      c->args.push_back(nullptr);
    }
    e = std::move(c);
  }
  return e;
}

expr_ptr expr_parser::parse_or() {
  expr_ptr e = parse_and();
  while (is_name("or")) {
    next();
    e = binary_node(ex::or_, "or", std::move(e), parse_and());
  }
  return e;
}
expr_ptr expr_parser::parse_and() {
  expr_ptr e = parse_not();
  while (is_name("and")) {
    next();
    e = binary_node(ex::and_, "and", std::move(e), parse_not());
  }
  return e;
}
expr_ptr expr_parser::parse_not() {
  if (is_name("not")) {
    depth_guard g(*this);
    const int line = next().line;
    return unary_node(ex::not_, line, parse_not());
  }
  return parse_compare();
}
expr_ptr expr_parser::parse_compare() {
  expr_ptr first = parse_math1();
  expr_ptr cmp;
  while (true) {
    std::string op;
    if (cur().type == tok::op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
                                  cur().text == "<=" || cur().text == ">=")) {
      op = next().text;
    } else if (is_name("in")) {
      next();
      op = "in";
    } else if (is_name("not") && peek().type == tok::name && peek().text == "in") {
      next();
      next();
      op = "not in";
    } else {
      break;
    }
    if (!cmp) {
      cmp = node(ex::compare, first->line);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}
expr_ptr expr_parser::parse_binary_level(int level) {
  static const std::vector<std::vector<std::string>> levels = {{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
  if (level == 4) return parse_unary(true);
  expr_ptr e = parse_binary_level(level + 1);
  while (cur().type == tok::op) {
    bool match = false;
    for (const auto& op : levels[static_cast<size_t>(level)]) match = match || cur().text == op;
    if (!match) break;
    std::string op = next().text;
    e = binary_node(ex::binary, op, std::move(e), parse_binary_level(level + 1));
  }
  return e;
}
expr_ptr expr_parser::parse_math1() { return parse_binary_level(0); }

expr_ptr expr_parser::parse_unary(bool with_filter) {
  depth_guard g(*this);
  expr_ptr e;
  if (is_op("-") || is_op("+")) {
    const token& t = next();
    e = unary_node(t.text == "-" ? ex::neg : ex::pos, t.line, parse_unary(false));
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

expr_ptr expr_parser::parse_primary() {
  const token& t = cur();
  switch (t.type) {
    case tok::name: {
      next();
      auto e = node(ex::literal, t.line);
      if (t.text == "true" || t.text == "True") e->lit = value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->lit = value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->lit = value::none();
      else {
        e->kind = ex::name;
        e->name = t.text;
      }
      return e;
    }
    case tok::string: {
      auto e = node(ex::literal, t.line);
      std::string s;
      while (cur().type == tok::string) s += next().text;
      e->lit = value::string(std::move(s));
      return e;
    }
    case tok::integer:
    case tok::floating: {
      next();
      auto e = node(ex::literal, t.line);
      e->lit = t.type == tok::integer ? value::integer(t.ival) : value::floating(t.fval);
      return e;
    }
    case tok::op:
      if (t.text == "(") {
        next();
        if (is_op(")")) {
          next();
          return node(ex::tuple, t.line);
        }
        expr_ptr e = parse_tuple(true);
        expect_op(")");
        return e;
      }
      if (t.text == "[") {
        next();
        auto e = node(ex::list, t.line);
        while (!is_op("]")) {
          e->args.push_back(parse_expression());
          if (!is_op(",")) break;
          next();
        }
        expect_op("]");
        return e;
      }
      if (t.text == "{") {
        next();
        auto e = node(ex::dict, t.line);
        while (!is_op("}")) {
          e->args.push_back(parse_expression());
          expect_op(":");
          e->args.push_back(parse_expression());
          if (!is_op(",")) break;
          next();
        }
        expect_op("}");
        return e;
      }
      break;
    default: break;
  }
  fail("expected an expression, found " + describe(t));
}

expr_ptr expr_parser::parse_postfix(expr_ptr e) {
  while (true) {
    if (is_op(".")) {
      const int line = next().line;
      if (cur().type == tok::integer) {
        auto g = node(ex::getitem, line);
        auto idx = node(ex::literal, line);
        idx->lit = value::integer(next().ival);
        g->target = std::move(e);
        g->args.push_back(std::move(idx));
        e = std::move(g);
      } else {
        auto g = node(ex::getattr, line);
        g->name = expect_name();
        g->target = std::move(e);
        e = std::move(g);
      }
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

expr_ptr expr_parser::parse_subscript(expr_ptr target) {
  const int line = next().line;  // '['
  expr_ptr parts[3];
  bool is_slice = false;
  if (!is_op(":")) parts[0] = parse_expression();
  for (int i = 1; i < 3 && is_op(":"); ++i) {
    next();
    is_slice = true;
    if (!is_op(":") && !is_op("]")) parts[i] = parse_expression();
  }
  expect_op("]");
  auto e = node(is_slice ? ex::slice : ex::getitem, line);
  e->target = std::move(target);
  if (is_slice) {
    for (auto& p : parts) e->args.push_back(std::move(p));
  } else {
    e->args.push_back(std::move(parts[0]));
  }
  return e;
}

void expr_parser::parse_call_args(expr& e) {
  expect_op("(");
  while (!is_op(")")) {
    if (is_op("*") || is_op("**")) fail("'*args' and '**kwargs' in calls are not supported");
    if (cur().type == tok::name && peek().type == tok::op && peek().text == "=") {
      std::string key = next().text;
      next();
      e.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!e.kwargs.empty()) fail("positional argument after a keyword argument");
      e.args.push_back(parse_expression());
    }
    if (!is_op(",")) break;
    next();
  }
  expect_op(")");
}

expr_ptr expr_parser::parse_call(expr_ptr callee) {
  auto e = node(ex::call, callee->line);
  if (callee->kind == ex::getattr) out_.methods.insert(callee->name);
  if (callee->kind == ex::name) out_.called_names.insert(callee->name);
  e->target = std::move(callee);
  parse_call_args(*e);
  return e;
}

std::string expr_parser::dotted_name() {
  std::string name = expect_name();
  while (is_op(".")) {
    next();
    name += "." + expect_name();
  }
  return name;
}

expr_ptr expr_parser::parse_filter(expr_ptr target, int line) {
  auto f = node(ex::filter, line);
  f->name = dotted_name();
  out_.filters.insert(f->name);
  f->target = std::move(target);
  if (is_op("(")) parse_call_args(*f);
  return f;
}

expr_ptr expr_parser::parse_filter_chain() {
  expr_ptr e = parse_filter(nullptr, cur().line);
  while (is_op("|")) {
    const int line = next().line;
    e = parse_filter(std::move(e), line);
  }
  return e;
}

expr_ptr expr_parser::parse_filter_expr(expr_ptr e) {
  while (true) {
    if (is_op("|")) {
      const int line = next().line;
      e = parse_filter(std::move(e), line);
    } else if (is_name("is")) {
      const int line = next().line;
      bool negated = false;
      if (is_name("not")) {
        next();
        negated = true;
      }
      auto t = node(ex::test, line);
      t->name = dotted_name();
      out_.tests.insert(t->name);
      t->target = std::move(e);
      if (is_op("(")) {
        parse_call_args(*t);
      } else if ((cur().type == tok::name || cur().type == tok::string || cur().type == tok::integer ||
                  cur().type == tok::floating || is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
        t->args.push_back(parse_postfix(parse_primary()));
      }
      e = negated ? unary_node(ex::not_, line, std::move(t)) : std::move(t);
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

}  // namespace cortex::chat
