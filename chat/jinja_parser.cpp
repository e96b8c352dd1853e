#include "chat/jinja_parser.hpp"

#include <stdexcept>

namespace cortex::chat {

namespace {

struct parse_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class parser {
 public:
  explicit parser(const std::vector<token>& toks) : t_(toks) {}

  parsed_template run() {
    std::string end;
    out_.body = parse_body({}, end, "");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg, int line = -1) const {
    throw parse_error("line " + std::to_string(line < 0 ? cur().line : line) + ": " + msg);
  }
  const token& cur() const { return t_[pos_]; }
  const token& peek(size_t n = 1) const { return t_[std::min(pos_ + n, t_.size() - 1)]; }
  const token& next() {
    const token& t = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == tok::op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == tok::name && cur().text == n; }
  static std::string describe(const token& t) {
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
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe(cur()));
    next();
  }
  std::string expect_name() {
    if (cur().type != tok::name) fail("expected a name, found " + describe(cur()));
    return next().text;
  }
  void expect(tok type, const char* what) {
    if (cur().type != type) fail(std::string("expected ") + what + ", found " + describe(cur()));
    next();
  }

  struct depth_guard {
    explicit depth_guard(parser& p) : p_(p) {
      if (++p_.depth_ > max_nesting) p_.fail("template nested too deeply (more than " + std::to_string(max_nesting) + " levels)");
    }
    ~depth_guard() { --p_.depth_; }
    parser& p_;
  };

  expr_ptr node(ex kind, int line) {
    auto e = std::make_unique<expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  expr_ptr unary_node(ex kind, int line, expr_ptr a) {
    auto e = node(kind, line);
    e->args.push_back(std::move(a));
    return e;
  }
  expr_ptr binary_node(ex kind, std::string op, expr_ptr a, expr_ptr b) {
    auto e = node(kind, a->line);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  // ---- expressions ----
  expr_ptr parse_tuple(bool with_condexpr) {
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

  expr_ptr parse_expression(bool with_condexpr = true) { return with_condexpr ? parse_condexpr() : parse_or(); }

  expr_ptr parse_condexpr() {
    expr_ptr e = parse_or();
    while (is_name("if")) {
      const int line = next().line;
      auto c = node(ex::cond, line);
      c->args.push_back(parse_or());
      c->args.push_back(std::move(e));
      if (is_name("else")) {
        next();
        c->args.push_back(parse_condexpr());
      } else {
        c->args.push_back(nullptr);
      }
      e = std::move(c);
    }
    return e;
  }

  expr_ptr parse_or() {
    expr_ptr e = parse_and();
    while (is_name("or")) {
      next();
      e = binary_node(ex::or_, "or", std::move(e), parse_and());
    }
    return e;
  }
  expr_ptr parse_and() {
    expr_ptr e = parse_not();
    while (is_name("and")) {
      next();
      e = binary_node(ex::and_, "and", std::move(e), parse_not());
    }
    return e;
  }
  expr_ptr parse_not() {
    if (is_name("not")) {
      depth_guard g(*this);
      const int line = next().line;
      return unary_node(ex::not_, line, parse_not());
    }
    return parse_compare();
  }
  expr_ptr parse_compare() {
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
  expr_ptr parse_binary_level(int level) {
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
  expr_ptr parse_math1() { return parse_binary_level(0); }

  expr_ptr parse_unary(bool with_filter) {
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

  expr_ptr parse_primary() {
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

  expr_ptr parse_postfix(expr_ptr e) {
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

  expr_ptr parse_subscript(expr_ptr target) {
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

  void parse_call_args(expr& e) {
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

  expr_ptr parse_call(expr_ptr callee) {
    auto e = node(ex::call, callee->line);
    if (callee->kind == ex::getattr) out_.methods.insert(callee->name);
    if (callee->kind == ex::name) out_.called_names.insert(callee->name);
    e->target = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
      next();
      name += "." + expect_name();
    }
    return name;
  }

  expr_ptr parse_filter_expr(expr_ptr e) {
    while (true) {
      if (is_op("|")) {
        const int line = next().line;
        auto f = node(ex::filter, line);
        f->name = dotted_name();
        out_.filters.insert(f->name);
        f->target = std::move(e);
        if (is_op("(")) parse_call_args(*f);
        e = std::move(f);
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

  // ---- statements ----
  expr_ptr parse_assign_target(bool allow_namespace) {
    const int line = cur().line;
    auto one = [&]() -> expr_ptr {
      if (is_op("(")) {
        next();
        auto inner = parse_assign_target(false);
        expect_op(")");
        return inner;
      }
      auto n = node(ex::name, cur().line);
      n->name = expect_name();
      if (allow_namespace && is_op(".")) {
        next();
        auto g = node(ex::getattr, n->line);
        g->name = expect_name();
        g->target = std::move(n);
        return g;
      }
      return n;
    };
    expr_ptr first = one();
    if (!is_op(",")) return first;
    auto t = node(ex::tuple, line);
    t->args.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (is_op("=") || is_name("in") || is_op(")")) break;
      t->args.push_back(one());
    }
    return t;
  }

  stmt_ptr make_stmt(st kind, int line) {
    auto s = std::make_unique<stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  // Statements until one of `ends` opens a block tag; `found` gets that
  // keyword (consumed; the rest of its tag is the caller's). `opener`
  // names the enclosing block for the error at the end of the template.
  stmt_list parse_body(const std::vector<std::string>& ends, std::string& found, const std::string& opener,
                       int open_line = 0) {
    depth_guard g(*this);
    stmt_list body;
    while (true) {
      const token& t = cur();
      if (t.type == tok::eof) {
        if (ends.empty()) return body;
        fail("unclosed '{% " + opener + " %}' opened at line " + std::to_string(open_line) + ": expected '{% " +
             ends.back() + " %}' before the end of the template");
      }
      if (t.type == tok::text) {
        auto s = make_stmt(st::text, t.line);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == tok::var_begin) {
        auto s = make_stmt(st::output, next().line);
        s->value = parse_tuple(true);
        expect(tok::var_end, "'}}'");
        body.push_back(std::move(s));
      } else if (t.type == tok::block_begin) {
        next();
        if (cur().type != tok::name) fail("expected a tag name after '{%', found " + describe(cur()));
        for (const auto& e : ends)
          if (cur().text == e) {
            found = next().text;
            return body;
          }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  stmt_ptr parse_statement() {
    const token& kw = next();
    const int line = kw.line;
    const std::string& k = kw.text;
    if (k == "if") return parse_if(line);
    if (k == "for") return parse_for(line);
    if (k == "set") return parse_set(line);
    if (k == "macro") return parse_macro(line);
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) fail("'" + k + "' outside a for loop", line);
      expect(tok::block_end, "'%}'");
      return make_stmt(k == "break" ? st::break_ : st::continue_, line);
    }
    if (k == "generation") {
      expect(tok::block_end, "'%}'");
      auto s = make_stmt(st::generation, line);
      std::string found;
      s->body = parse_body({"endgeneration"}, found, "generation", line);
      expect(tok::block_end, "'%}'");
      return s;
    }
    if (k.rfind("end", 0) == 0 || k == "else" || k == "elif")
      fail("unexpected '{% " + k + " %}' (no open block it could close)", line);
    fail("unsupported tag '" + k + "'", line);
  }

  stmt_ptr parse_if(int line) {
    auto s = make_stmt(st::if_, line);
    expr_ptr cond = parse_tuple(false);
    while (true) {
      expect(tok::block_end, "'%}'");
      std::string found;
      stmt_list body = parse_body({"elif", "else", "endif"}, found, "if", line);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (found == "elif") {
        cond = parse_tuple(false);
        continue;
      }
      if (found == "else") {
        expect(tok::block_end, "'%}'");
        body = parse_body({"endif"}, found, "if", line);
        s->branches.emplace_back(nullptr, std::move(body));
      }
      expect(tok::block_end, "'%}'");
      return s;
    }
  }

  stmt_ptr parse_for(int line) {
    auto s = make_stmt(st::for_, line);
    s->target = parse_assign_target(false);
    if (!is_name("in")) fail("expected 'in' in the for loop, found " + describe(cur()));
    next();
    s->value = parse_tuple(false);
    if (is_name("if")) {
      next();
      s->cond = parse_expression();
    }
    if (is_name("recursive")) fail("recursive for loops are not supported");
    expect(tok::block_end, "'%}'");
    std::string found;
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"}, found, "for", line);
    --loop_depth_;
    if (found == "else") {
      expect(tok::block_end, "'%}'");
      s->else_body = parse_body({"endfor"}, found, "for", line);
    }
    expect(tok::block_end, "'%}'");
    return s;
  }

  stmt_ptr parse_set(int line) {
    expr_ptr target = parse_assign_target(true);
    if (is_op("=")) {
      next();
      auto s = make_stmt(st::set, line);
      s->target = std::move(target);
      s->value = parse_tuple(true);
      expect(tok::block_end, "'%}'");
      return s;
    }
    if (target->kind != ex::name) fail("a block '{% set %}' assigns one name", line);
    expect(tok::block_end, "'=' or '%}'");
    auto s = make_stmt(st::set_block, line);
    s->target = std::move(target);
    std::string found;
    s->body = parse_body({"endset"}, found, "set", line);
    expect(tok::block_end, "'%}'");
    return s;
  }

  stmt_ptr parse_macro(int line) {
    auto s = make_stmt(st::macro, line);
    s->name = expect_name();
    out_.macros.insert(s->name);
    expect_op("(");
    while (!is_op(")")) {
      std::string p = expect_name();
      expr_ptr def;
      if (is_op("=")) {
        next();
        def = parse_expression();
      }
      s->params.emplace_back(std::move(p), std::move(def));
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
    expect(tok::block_end, "'%}'");
    std::string found;
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"}, found, "macro", line);
    loop_depth_ = saved_loops;
    if (cur().type == tok::name) next();  // {% endmacro name %}
    expect(tok::block_end, "'%}'");
    return s;
  }

  const std::vector<token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  parsed_template out_;
};

}  // namespace

expected<parsed_template> parse_template(const std::vector<token>& tokens) {
  try {
    return parser(tokens).run();
  } catch (const parse_error& e) {
    return fail(errc::malformed, e.what());  // the template text does not parse
  }
}

}  // namespace cortex::chat
