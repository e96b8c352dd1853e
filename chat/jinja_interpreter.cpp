#include "chat/jinja_interpreter.hpp"

#include <memory>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_ops.hpp"

namespace cortex::chat {

namespace {

// raise_exception(msg): carried to the caller unchanged.
struct raised_error : template_error {
  using template_error::template_error;
};
// An error that already names its line.
struct located_error : template_error {
  using template_error::template_error;
};

struct frame {
  std::vector<std::pair<std::string, value>> vars;
  std::shared_ptr<frame> parent;

  const value* lookup(const std::string& name) const {
    for (const frame* f = this; f; f = f->parent.get())
      for (const auto& kv : f->vars)
        if (kv.first == name) return &kv.second;
    return nullptr;
  }
  void set(const std::string& name, value v) {
    for (auto& kv : vars)
      if (kv.first == name) {
        kv.second = std::move(v);
        return;
      }
    vars.emplace_back(name, std::move(v));
  }
};
using frame_ptr = std::shared_ptr<frame>;

enum class flow { normal, brk, cont };

class interpreter {
 public:
  interpreter(const render_env& env) : env_(env) {}

  std::string run(const parsed_template& t, const value& variables) {
    auto globals = std::make_shared<frame>();
    add_globals(*globals);
    auto root = std::make_shared<frame>();
    root->parent = globals;
    if (variables.is_mapping())
      for (const auto& kv : variables.entries())
        if (kv.first.is_string()) root->set(kv.first.str_ref(), kv.second);
    std::string out;
    exec(t.body, root, out);
    return out;
  }

 private:
  void step() {
    if (++steps_ > env_.limits.max_steps)
      throw template_error("the template ran more than " + std::to_string(env_.limits.max_steps) + " steps");
  }

  void append(std::string& out, const std::string& s) {
    out += s;
    if (out.size() > env_.limits.max_output_bytes)
      throw template_error("the rendered text exceeds " + std::to_string(env_.limits.max_output_bytes) + " bytes");
  }

  void add_globals(frame& g) {
    g.set("raise_exception", value::callable("raise_exception", [](call_args& a) -> value {
            throw raised_error(to_str(a.get(0, "message")));
          }));
    g.set("strftime_now", value::callable("strftime_now", [this](call_args& a) -> value {
            const value fmt = a.get(0, "format");
            if (!fmt.is_string()) throw template_error("strftime_now() expects a format string");
            std::tm tm{};
            if (env_.now) {
              tm = env_.now();
            } else {
              const std::time_t t = std::time(nullptr);
              localtime_r(&t, &tm);
            }
            char buf[512];
            const size_t n = std::strftime(buf, sizeof buf, fmt.str_ref().c_str(), &tm);
            return value::string(std::string(buf, n));
          }));
    g.set("namespace", value::callable("namespace", [](call_args& a) -> value {
            value ns = value::make_namespace();
            for (const auto& p : a.positional) {
              if (p.type() != value::kind::dict) throw template_error("namespace() takes a dict or keyword arguments");
              for (const auto& kv : p.entries()) ns.set_key(kv.first, kv.second);
            }
            for (const auto& kv : a.keyword) ns.set(kv.first, kv.second);
            return ns;
          }));
    g.set("dict", value::callable("dict", [](call_args& a) -> value {
            value d = value::dict();
            for (const auto& kv : a.keyword) d.set(kv.first, kv.second);
            return d;
          }));
    g.set("range", value::callable("range", [](call_args& a) -> value {
            for (const auto& p : a.positional)
              if (p.type() != value::kind::integer && p.type() != value::kind::boolean)
                throw template_error(std::string("range() expects integers, not '") + type_name(p) + "'");
            int64_t start = 0, stop = 0, stride = 1;
            if (a.positional.size() == 1) stop = a.positional[0].as_int();
            else if (a.positional.size() >= 2) {
              start = a.positional[0].as_int();
              stop = a.positional[1].as_int();
              if (a.positional.size() >= 3) stride = a.positional[2].as_int();
            } else {
              throw template_error("range() expects 1 to 3 integers");
            }
            if (stride == 0) throw template_error("range() arg 3 must not be zero");
            value_list out;
            for (int64_t i = start; stride > 0 ? i < stop : i > stop; i += stride) {
              if (out.size() >= 1'000'000) throw template_error("range() longer than 1000000 items");
              out.push_back(value::integer(i));
            }
            return value::list(std::move(out));
          }));
  }

  call_args eval_args(const expr& e, const frame_ptr& f) {
    call_args a;
    for (const auto& p : e.args) a.positional.push_back(eval(*p, f));
    for (const auto& kv : e.kwargs) a.keyword.emplace_back(kv.first, eval(*kv.second, f));
    return a;
  }

  value eval(const expr& e, const frame_ptr& f) {
    switch (e.kind) {
      case ex::literal: return e.lit;
      case ex::name: {
        if (const value* v = f->lookup(e.name)) return *v;
        return value::undefined("'" + e.name + "' is undefined");
      }
      case ex::list:
      case ex::tuple: {
        value_list items;
        for (const auto& a : e.args) items.push_back(eval(*a, f));
        return e.kind == ex::tuple ? value::tuple(std::move(items)) : value::list(std::move(items));
      }
      case ex::dict: {
        value d = value::dict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const value k = eval(*e.args[i], f);
          require_hashable(k);
          d.set_key(k, eval(*e.args[i + 1], f));
        }
        return d;
      }
      case ex::getattr: return get_attr(eval(*e.target, f), e.name);
      case ex::getitem: return get_item(eval(*e.target, f), eval(*e.args[0], f));
      case ex::slice: {
        value parts[3];
        for (size_t i = 0; i < 3; ++i)
          if (e.args[i]) parts[i] = eval(*e.args[i], f);
        return get_slice(eval(*e.target, f), parts[0], parts[1], parts[2]);
      }
      case ex::call: return eval_call(e, f);
      case ex::filter: {
        const value v = eval(*e.target, f);
        return apply_filter(e.name, v, eval_args(e, f));
      }
      case ex::test: {
        const value v = eval(*e.target, f);
        return value::boolean(apply_test(e.name, v, eval_args(e, f)));
      }
      case ex::not_: return value::boolean(!eval(*e.args[0], f).truthy());
      case ex::neg:
      case ex::pos: {
        const value v = eval(*e.args[0], f);
        if (!v.is_number()) {
          require_defined(v);
          throw template_error(std::string("bad operand type for unary ") + (e.kind == ex::neg ? "-" : "+") + ": '" +
                               type_name(v) + "'");
        }
        if (e.kind == ex::pos) return v;
        return v.type() == value::kind::floating ? value::floating(-v.as_double())
                                                 : binary_op("-", value::integer(0), v);
      }
      case ex::binary: return binary_op(e.name, eval(*e.args[0], f), eval(*e.args[1], f));
      case ex::compare: {
        value left = eval(*e.args[0], f);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          value right = eval(*e.args[i + 1], f);
          if (!compare_op(e.ops[i], left, right)) return value::boolean(false);
          left = std::move(right);
        }
        return value::boolean(true);
      }
      case ex::and_: {
        value a = eval(*e.args[0], f);
        return a.truthy() ? eval(*e.args[1], f) : a;
      }
      case ex::or_: {
        value a = eval(*e.args[0], f);
        return a.truthy() ? a : eval(*e.args[1], f);
      }
      case ex::cond:
        if (eval(*e.args[0], f).truthy()) return eval(*e.args[1], f);
        return e.args[2] ? eval(*e.args[2], f) : value::undefined("the conditional expression had no else");
    }
    return value();
  }

  value eval_call(const expr& e, const frame_ptr& f) {
    const expr& callee = *e.target;
    if (callee.kind == ex::getattr) {
      const value obj = eval(*callee.target, f);
      require_defined(obj);
      call_args a = eval_args(e, f);
      value out;
      if (call_method(obj, callee.name, a, out)) return out;
      const value* member = obj.find(callee.name);
      if (member && member->type() == value::kind::callable) return member->fn()(a);
      if (obj.is_list() && (callee.name == "append" || callee.name == "pop" || callee.name == "extend"))
        throw template_error("list." + callee.name + "() is not allowed: templates render in an immutable sandbox");
      throw template_error(std::string("unknown method '") + callee.name + "' of " + type_name(obj) + " object");
    }
    const value fn = eval(callee, f);
    if (fn.type() != value::kind::callable) {
      require_defined(fn);
      throw template_error(std::string("'") + type_name(fn) + "' object is not callable");
    }
    call_args a = eval_args(e, f);
    return fn.fn()(a);
  }

  // Binds a for/set target: a name, a tuple of names (unpacking), ns.attr.
  void assign(const expr& target, const value& v, const frame_ptr& f) {
    if (target.kind == ex::name) {
      f->set(target.name, v);
    } else if (target.kind == ex::getattr) {
      const value* ns = f->lookup(target.target->name);
      if (!ns || ns->type() != value::kind::ns)
        throw template_error("cannot assign attribute on non-namespace object '" + target.target->name + "'");
      value copy = *ns;  // shares the namespace's storage
      copy.set(target.name, v);
    } else {  // tuple
      const value_list items = iterate(v);
      if (items.size() != target.args.size())
        throw template_error("cannot unpack " + std::to_string(items.size()) + " values into " +
                             std::to_string(target.args.size()) + " names");
      for (size_t i = 0; i < items.size(); ++i) assign(*target.args[i], items[i], f);
    }
  }

  flow exec(const stmt_list& body, const frame_ptr& f, std::string& out) {
    for (const auto& s : body) {
      step();
      flow r;
      try {
        r = exec_one(*s, f, out);
      } catch (const raised_error&) {
        throw;
      } catch (const located_error&) {
        throw;
      } catch (const template_error& err) {
        throw located_error("line " + std::to_string(s->line) + ": " + err.what());
      }
      if (r != flow::normal) return r;
    }
    return flow::normal;
  }

  flow exec_one(const stmt& s, const frame_ptr& f, std::string& out) {
    switch (s.kind) {
      case st::text: append(out, s.text); return flow::normal;
      case st::output: append(out, to_str(eval(*s.value, f))); return flow::normal;
      case st::if_:
        for (const auto& br : s.branches)
          if (!br.first || eval(*br.first, f).truthy()) return exec(br.second, f, out);
        return flow::normal;
      case st::for_: exec_for(s, f, out); return flow::normal;
      case st::set: assign(*s.target, eval(*s.value, f), f); return flow::normal;
      case st::set_block: {
        std::string captured;
        exec(s.body, f, captured);
        assign(*s.target, value::string(std::move(captured)), f);
        return flow::normal;
      }
      case st::break_: return flow::brk;
      case st::continue_: return flow::cont;
      case st::macro: define_macro(s, f); return flow::normal;
      case st::generation: return exec(s.body, f, out);
      case st::filter_block: return exec_filter_block(s, f, out);
    }
    return flow::normal;
  }

  // As jinja2: the body renders in an inner scope (its sets stay inside),
  // a break or continue in it drops its text, and the filter must give a
  // str (jinja2 joins the output pieces with "".join).
  flow exec_filter_block(const stmt& s, const frame_ptr& f, std::string& out) {
    auto scope = std::make_shared<frame>();
    scope->parent = f;
    std::string body;
    const flow r = exec(s.body, scope, body);
    if (r != flow::normal) return r;
    const value v = apply_filter_chain(*s.value, value::string(std::move(body)), scope);
    if (!v.is_string())
      throw template_error(std::string("the {% filter %} block's filter '") + s.value->name +
                           "' returned a value of type '" + type_name(v) + "', not a string");
    append(out, v.str_ref());
    return flow::normal;
  }

  value apply_filter_chain(const expr& e, value v, const frame_ptr& f) {
    if (e.target) v = apply_filter_chain(*e.target, std::move(v), f);
    return apply_filter(e.name, v, eval_args(e, f));
  }

  void exec_for(const stmt& s, const frame_ptr& f, std::string& out) {
    value_list items = iterate(eval(*s.value, f));
    if (s.cond) {
      value_list kept;
      for (auto& item : items) {
        step();
        auto scope = std::make_shared<frame>();
        scope->parent = f;
        assign(*s.target, item, scope);
        if (eval(*s.cond, scope).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      auto scope = std::make_shared<frame>();
      scope->parent = f;
      exec(s.else_body, scope, out);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step();
      auto scope = std::make_shared<frame>();
      scope->parent = f;
      const auto idx = static_cast<size_t>(i);
      value loop = value::dict();
      loop.set("index", value::integer(i + 1));
      loop.set("index0", value::integer(i));
      loop.set("revindex", value::integer(n - i));
      loop.set("revindex0", value::integer(n - i - 1));
      loop.set("first", value::boolean(i == 0));
      loop.set("last", value::boolean(i == n - 1));
      loop.set("length", value::integer(n));
      loop.set("depth", value::integer(1));
      loop.set("depth0", value::integer(0));
      loop.set("previtem", i > 0 ? items[idx - 1] : value::undefined("there is no previous item"));
      loop.set("nextitem", i + 1 < n ? items[idx + 1] : value::undefined("there is no next item"));
      loop.set("cycle", value::callable("loop.cycle", [i](call_args& a) -> value {
                 if (a.positional.empty()) throw template_error("loop.cycle() needs at least one item");
                 return a.positional[static_cast<size_t>(i) % a.positional.size()];
               }));
      scope->set("loop", loop);
      assign(*s.target, items[idx], scope);
      if (exec(s.body, scope, out) == flow::brk) break;
    }
  }

  void define_macro(const stmt& s, const frame_ptr& f) {
    const stmt* def = &s;
    std::weak_ptr<frame> weak = f;  // the macro lives in f: a strong ref would be a cycle
    f->set(s.name, value::callable(s.name, [this, def, weak](call_args& a) -> value {
             auto scope = std::make_shared<frame>();
             scope->parent = weak.lock();
             if (a.positional.size() > def->params.size())
               throw template_error("macro '" + def->name + "' takes " + std::to_string(def->params.size()) +
                                    " arguments, " + std::to_string(a.positional.size()) + " given");
             for (size_t i = 0; i < def->params.size(); ++i) {
               const auto& p = def->params[i];
               value v = a.get(i < a.positional.size() ? i : static_cast<size_t>(-1), p.first.c_str());
               if (v.is_undefined() && p.second) v = eval(*p.second, scope);
               if (v.is_undefined()) v = value::undefined("'" + p.first + "' is undefined");
               scope->set(p.first, v);
             }
             if (++call_depth_ > env_.limits.max_call_depth) {
               --call_depth_;
               throw template_error("macro calls nested deeper than " + std::to_string(env_.limits.max_call_depth));
             }
             std::string out;
             try {
               exec(def->body, scope, out);
             } catch (...) {
               --call_depth_;
               throw;
             }
             --call_depth_;
             return value::string(std::move(out));
           }));
  }

  const render_env& env_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace

expected<std::string> render_parsed(const parsed_template& t, const value& variables, const render_env& env) {
  try {
    return interpreter(env).run(t, variables);
  } catch (const template_error& e) {
    return fail(errc::invalid_param, e.what());  // the request broke a rule of the template (raise_exception, types)
  } catch (const std::bad_alloc&) {
    return fail(errc::internal, "out of memory while rendering the template");
  } catch (const std::exception& e) {  // e.g. length_error from a huge width: still an error, not a crash
    return fail(errc::invalid_param, std::string("rendering failed: ") + e.what());
  }
}

}  // namespace cortex::chat
