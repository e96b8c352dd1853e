#include "chat/jinja_markup.hpp"

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_ops.hpp"

namespace cortex::chat {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

value same_str_kind(const value& like, std::string s) {
  return like.is_markup() ? value::markup(std::move(s)) : value::string(std::move(s));
}

value markup_escape(const value& v) { return v.is_markup() ? v : value::markup(html_escape(to_str(v))); }

value markup_concat(const value& a, const value& b) {
  std::string out = markup_escape(a).str_ref() + markup_escape(b).str_ref();
  if (out.size() > max_value_bytes)
    throw template_error("a string the template builds exceeds " + std::to_string(max_value_bytes) + " bytes");
  return value::markup(std::move(out));
}

namespace {

// markupsafe's _escape_argspec: str arguments escaped, others as they are.
call_args escape_str_args(const call_args& a) {
  call_args out = a;
  for (auto& p : out.positional)
    if (p.is_string()) p = markup_escape(p);
  for (auto& kv : out.keyword)
    if (kv.second.is_string()) kv.second = markup_escape(kv.second);
  return out;
}

// What format inserts: Markup as it is, anything else str()'d and escaped.
call_args escape_all_args(const call_args& a) {
  call_args out = a;
  for (auto& p : out.positional) p = markup_escape(p);
  for (auto& kv : out.keyword) kv.second = markup_escape(kv.second);
  return out;
}

value as_markup(const value& v) {
  if (v.is_string()) return value::markup(v.str_ref());
  if (!v.is_list()) return v;
  value_list items;
  for (const auto& item : v.items()) items.push_back(as_markup(item));
  return value::list(std::move(items));
}

}  // namespace

bool call_markup_method(const value& m, const std::string& name, const call_args& args, value& out) {
  call_args plain_args = args;
  bool gives_markup = true;
  if (name == "strip" || name == "lstrip" || name == "rstrip" || name == "upper" || name == "lower" ||
      name == "title" || name == "capitalize" || name == "replace") {
    plain_args = escape_str_args(args);
  } else if (name == "join") {
    value_list items;
    for (const auto& item : iterate(args.get(0, "iterable"))) items.push_back(markup_escape(item));
    plain_args = call_args{};
    plain_args.positional.push_back(value::list(std::move(items)));
  } else if (name == "format") {
    plain_args = escape_all_args(args);
  } else if (name != "split" && name != "rsplit" && name != "splitlines") {
    gives_markup = false;
  }
  if (!call_method(value::string(m.str_ref()), name, plain_args, out)) return false;
  if (gives_markup) out = as_markup(out);
  return true;
}

}  // namespace cortex::chat
