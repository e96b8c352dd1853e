#include "chat/jinja_parser.hpp"

#include <algorithm>

#include "chat/jinja_expr_parser.hpp"

namespace cortex::chat {

namespace {

// The height of an expression tree, found without recursion (its chains
// can be as long as the template).
int expr_height(const expr& root) {
  int height = 0;
  std::vector<std::pair<const expr*, int>> pending = {{&root, 1}};
  while (!pending.empty()) {
    const auto [e, depth] = pending.back();
    pending.pop_back();
    height = std::max(height, depth);
    if (e->target) pending.emplace_back(e->target.get(), depth + 1);
    for (const auto& a : e->args)
      if (a) pending.emplace_back(a.get(), depth + 1);
    for (const auto& kv : e->kwargs)
      if (kv.second) pending.emplace_back(kv.second.get(), depth + 1);
  }
  return height;
}

// Every expression at most max_nesting deep, so that rendering it (a
// recursion over the tree) has bounded depth. The statement tree is
// bounded by the parser's own depth_guard.
void check_expr_heights(const stmt_list& body) {
  for (const auto& s : body) {
    auto check = [&s](const expr_ptr& e) {
      if (e && expr_height(*e) > max_nesting)
        throw parse_error("line " + std::to_string(s->line) + ": expression nested too deeply (more than " +
                          std::to_string(max_nesting) + " levels)");
    };
    check(s->value);
    check(s->target);
    check(s->cond);
    for (const auto& br : s->branches) {
      check(br.first);
      check_expr_heights(br.second);
    }
    for (const auto& p : s->params) check(p.second);
    check_expr_heights(s->body);
    check_expr_heights(s->else_body);
  }
}

// The statements: tags, text and {{ }} output, each expression read by
// expr_parser.
class parser : expr_parser {
 public:
  parser(const std::vector<token>& toks, parsed_template& out) : expr_parser(toks, out) {}

  void run() {
    std::string end;
    out_.body = parse_body({}, end, "");
    check_expr_heights(out_.body);
  }

 private:
  expr_ptr parse_assign_target(bool allow_namespace) {
    depth_guard g(*this);  // ((a, b), c): one level per parenthesis
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
    if (k == "filter") {  // {% filter name(args)|name... %}body{% endfilter %}
      auto s = make_stmt(st::filter_block, line);
      s->value = parse_filter_chain();
      expect(tok::block_end, "'%}'");
      std::string found;
      s->body = parse_body({"endfilter"}, found, "filter", line);
      expect(tok::block_end, "'%}'");
      return s;
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

  int loop_depth_ = 0;
};

}  // namespace

expected<parsed_template> parse_template(const std::vector<token>& tokens) {
  parsed_template out;
  try {
    parser(tokens, out).run();
    return out;
  } catch (const parse_error& e) {
    return fail(errc::malformed, e.what());  // the template text does not parse
  }
}

}  // namespace cortex::chat
