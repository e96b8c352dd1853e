// markupsafe's Markup (2.1, what jinja2 3.1 uses) in an environment without
// autoescape, as transformers renders chat templates: |safe and |escape
// make one, it prints as is, and the operations Markup overrides escape the
// plain strings they take in. Everything else (`~`, macros, block set,
// str methods on a plain str, |join, |replace, |title) gives a plain str.
#pragma once

#include <string>

#include "chat/jinja_value.hpp"

namespace cortex::chat {

// & < > ' " as &amp; &lt; &gt; &#39; &#34;: markupsafe's escape of a str.
std::string html_escape(const std::string& s);
// markupsafe.escape(v): v itself when it is Markup, else a Markup of
// html_escape(str(v)) (undefined: "", None: "None").
value markup_escape(const value& v);
// A str of text s that is a Markup when `like` is: what Markup's
// __getitem__, __mul__ and str methods, and the filters that call them on
// soft_str(v) (upper, lower, capitalize, trim, indent, format, reverse), give.
value same_str_kind(const value& like, std::string s);
// Markup + str and str + Markup: the plain side escaped, a Markup result.
// REQUIRES: both are strings, one a Markup.
value markup_concat(const value& a, const value& b);
// m.name(args) for a Markup m, as Markup defines its methods: strip,
// lstrip, rstrip, upper, lower, title, capitalize, replace escape their
// str arguments and give Markup; split, rsplit, splitlines give lists of
// Markup; join escapes the items and format the arguments it inserts, both
// giving Markup; the others answer as str's do. false when str has no
// method of that name.
bool call_markup_method(const value& m, const std::string& name, const call_args& args, value& out);

}  // namespace cortex::chat
