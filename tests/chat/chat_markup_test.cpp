// markupsafe's Markup, the type behind |safe and |escape: it prints as is,
// `+` with it escapes the plain str, `~` gives a plain str (jinja2 joins
// with str() when autoescape is off, as transformers renders). Every
// expected string is Python jinja2 3.1.2's (markupsafe 2.1.2) output for
// the same template, which tests/e2e/test_chat_template_jinja2.py also
// compares live.
#include <gtest/gtest.h>

#include "tests/chat/chat_render.hpp"

namespace cortex {
namespace {

using testing::render_fails;
using testing::render_ok;

TEST(chat_markup, plus_escapes_the_plain_side) {
  EXPECT_EQ(render_ok("{{ '<b>'|safe + '<i>' }}|{{ '<i>' + '<b>'|safe }}|{{ '<b>'|safe + '<i>'|safe }}"),
            "<b>&lt;i&gt;|&lt;i&gt;<b>|<b><i>");  // jinja2's
  EXPECT_EQ(render_ok("{{ '<b>'|e + '<i>' }}|{{ 5|e + '<' }}|{{ none|e }}|{{ missing|e }}|{{ [1, '<']|e }}"),
            "&lt;b&gt;&lt;i&gt;|5&lt;|None||[1, &#39;&lt;&#39;]");  // jinja2's
}

TEST(chat_markup, tilde_and_macros_give_plain_strings) {
  EXPECT_EQ(render_ok("{{ '<b>'|safe ~ '<i>' }}|{{ '<i>' ~ '<b>'|safe }}|{% set m = '<b>'|safe ~ '<' %}{{ m + '&' }}"),
            "<b><i>|<i><b>|<b><&");  // jinja2's
  EXPECT_EQ(render_ok("{% macro f() %}<b>{% endmacro %}{{ f() + '<' }}|{% set s %}<b>{% endset %}{{ s + '<' }}"),
            "<b><|<b><");  // jinja2's
}

TEST(chat_markup, safe_prints_as_is_and_escape_leaves_markup_alone) {
  EXPECT_EQ(render_ok("{{ '<b>'|safe }}|{{ '<b>'|e }}|{{ ('<b>'|safe)|e }}|{{ '<b>'|e|e }}|{{ \"'\\\"&\"|e }}"),
            "<b>|&lt;b&gt;|<b>|&lt;b&gt;|&#39;&#34;&amp;");  // jinja2's
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ 'yes' if m else 'no' }}|{{ ''|safe ~ 'x' }}|{{ missing|safe ~ '<' }}|"
                      "{{ none|safe + '<' }}|{{ [1]|safe + '<' }}"),
            "yes|x|<|None&lt;|[1]&lt;");  // jinja2's
}

TEST(chat_markup, string_keeps_markup) {
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m|string + '<' }}|{{ (5|string) + '<' }}|{{ m|string is string }}"),
            "<b>&lt;|5<|True");  // jinja2's
}

// Filters that call str's methods on soft_str(v) keep Markup; those that
// build a new str (title, replace, join, first, tojson) do not.
TEST(chat_markup, filters_keep_or_drop_markup_as_jinja2_does) {
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m|upper + '<' }}|{{ m|lower + '<' }}|{{ m|capitalize + '<' }}|"
                      "{{ m|trim + '<' }}|{{ m|indent + '<' }}|{{ m|reverse + '<' }}|{{ m|last + '<' }}|{{ m|d + '<' }}"),
            "<B>&lt;|<b>&lt;|<b>&lt;|<b>&lt;|<b>&lt;|>b<&lt;|>&lt;|<b>&lt;");  // jinja2's
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m|title + '<' }}|{{ m|replace('b', '&') + '<' }}|"
                      "{{ [m, '<']|join + '<' }}|{{ m|first + '<' }}|{{ m|tojson + '<' }}|{{ m|list }}"),
            "<B><|<&><|<b><<|<<|\"<b>\"<|['<', 'b', '>']");  // jinja2's
}

TEST(chat_markup, formatting_escapes_what_it_inserts) {
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m|trim('<') + '<' }}|{{ ('%s'|safe)|format('<') }}|"
                      "{{ ('%s|%r'|safe) % ('<', '<') }}|{{ ('%s'|safe) % m }}|{{ '%s' % m + '<' }}"),
            "<b>&lt;|&lt;|&lt;|&#39;&lt;&#39;|<b>|<b><");  // jinja2's
}

TEST(chat_markup, methods_escape_their_arguments) {
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m.upper() + '<' }}|{{ m.replace('b', '<') }}|{{ m.strip('<') + '<' }}|"
                      "{{ m.split('b') }}|{{ m.join(['<', m]) }}|{{ ('{}'|safe).format('<') }}|{{ m.startswith('<') }}"),
            "<B>&lt;|<&lt;>|<b>&lt;|[Markup('<'), Markup('>')]|&lt;<b><b>|&lt;|True");  // jinja2's
}

TEST(chat_markup, is_a_str_that_indexes_repeats_compares_and_prints_as_markup) {
  EXPECT_EQ(render_ok("{% set m = '<b>'|safe %}{{ m[0] + '<' }}|{{ m[1:] + '<' }}|{{ m * 2 + '<' }}|{{ m == '<b>' }}|"
                      "{{ m is string }}|{{ m|length }}|{{ '<' in m }}|{{ [m] }}|{{ {'k': m} }}"),
            "<&lt;|b>&lt;|<b><b>&lt;|True|True|3|True|[Markup('<b>')]|{'k': Markup('<b>')}");  // jinja2's
}

TEST(chat_markup, plus_with_a_non_string_is_an_error) {  // jinja2: TypeError for each
  EXPECT_NE(render_fails("{{ '<b>'|safe + 1 }}").find("'Markup' and 'int'"), std::string::npos);
  EXPECT_NE(render_fails("{{ 1 + '<b>'|safe }}").find("'int' and 'Markup'"), std::string::npos);
  EXPECT_NE(render_fails("{{ '<b>'|safe + none }}").find("'Markup' and 'NoneType'"), std::string::npos);
}

}  // namespace
}  // namespace cortex
