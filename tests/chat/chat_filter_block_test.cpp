// {% filter %} blocks: the body rendered, then passed through a filter
// chain. Every expected string is Python jinja2 3.1.2's output for the same
// template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols), and each template is also compared with jinja2 live by
// tests/e2e/test_chat_template_jinja2.py.
#include <gtest/gtest.h>

#include "chat/chat_template.hpp"
#include "tests/chat/chat_render.hpp"

namespace cortex {
namespace {

using testing::parse_fails;
using testing::render_fails;
using testing::render_ok;

TEST(chat_filter_block, applies_the_filter_to_the_rendered_body) {
  EXPECT_EQ(render_ok("{% filter upper %}abc {{ 'x' }}{% endfilter %}"), "ABC X");  // jinja2's
  EXPECT_EQ(render_ok("{% filter upper %}{% for i in range(2) %}{{ i }}a{% endfor %}{% endfilter %}"),
            "0A1A");  // jinja2's
  EXPECT_EQ(render_ok("{% filter e %}<a href=\"x\">{% endfilter %}"), "&lt;a href=&#34;x&#34;&gt;");  // jinja2's
  EXPECT_EQ(render_ok("{% filter tojson %}a\"b{% endfilter %}"), "\"a\\\"b\"");                       // jinja2's
  EXPECT_EQ(render_ok("{% filter default('empty', true) %}{% endfilter %}"), "empty");                 // jinja2's
  EXPECT_EQ(render_ok("{% filter first %}abc{% endfilter %}|{% filter reverse %}abc{% endfilter %}|"
                      "{% filter title %}hello world{% endfilter %}"),
            "a|cba|Hello World");  // jinja2's
}

TEST(chat_filter_block, filters_take_arguments) {
  EXPECT_EQ(render_ok("{% filter indent(2) %}a\nb\nc{% endfilter %}"), "a\n  b\n  c");              // jinja2's
  EXPECT_EQ(render_ok("{% filter indent(width=3, first=true) %}a\n\nb{% endfilter %}"), "   a\n\n   b");  // jinja2's
  EXPECT_EQ(render_ok("{% filter replace('a', 'b') %}aaa{% endfilter %}"), "bbb");                   // jinja2's
  EXPECT_EQ(render_ok("{% filter format('<') %}%s!{% endfilter %}"), "<!");                          // jinja2's
}

TEST(chat_filter_block, chains_and_nested_blocks) {
  EXPECT_EQ(render_ok("{% filter upper|trim %}  x  {% endfilter %}|"), "X|");  // jinja2's
  EXPECT_EQ(render_ok("{% filter replace('a', 'b')|upper|replace('B', '-') %}aXa{% endfilter %}"), "-X-");  // jinja2's
  EXPECT_EQ(render_ok("{% filter upper %}{% filter trim %}  x  {% endfilter %}y{% endfilter %}"), "XY");   // jinja2's
}

TEST(chat_filter_block, the_body_has_its_own_scope) {
  EXPECT_EQ(render_ok("{% set x = 5 %}{% filter upper %}{% set x = 7 %}{{ x }}{% endfilter %}{{ x }}"), "75");  // jinja2's
  EXPECT_EQ(render_ok("{% set ns = namespace(a=1) %}{% filter upper %}{% set ns.a = 2 %}{% endfilter %}{{ ns.a }}"),
            "2");  // jinja2's
}

TEST(chat_filter_block, break_and_continue_drop_the_unfinished_block) {
  EXPECT_EQ(render_ok("{% for i in [1, 2, 3] %}{% filter upper %}a{{ i }}{% if i == 2 %}{% break %}{% endif %}"
                      "{% endfilter %}{% endfor %}"),
            "A1");  // jinja2's
  EXPECT_EQ(render_ok("{% for i in [1, 2] %}{% filter upper %}{% if i == 1 %}{% continue %}{% endif %}z"
                      "{% endfilter %}{% endfor %}"),
            "Z");  // jinja2's
}

TEST(chat_filter_block, inside_macros_and_block_sets) {
  EXPECT_EQ(render_ok("{% macro m(t) %}{% filter upper %}{{ t }}{% endfilter %}{% endmacro %}{{ m('in macro') }}"),
            "IN MACRO");  // jinja2's
  EXPECT_EQ(render_ok("{% set s %}{% filter upper %}x{% endfilter %}y{% endset %}{{ s }}"), "Xy");  // jinja2's
}

TEST(chat_filter_block, white_space_rules_apply_to_its_tags) {
  EXPECT_EQ(render_ok("  {% filter upper %}\n  x\n  {% endfilter %}\ny"), "  X\ny");  // jinja2's
  EXPECT_EQ(render_ok("{% filter upper -%}\n  x\n{%- endfilter %}"), "X");            // jinja2's
  EXPECT_EQ(render_ok("{% for m in messages %}\n{% filter indent(4, true) %}\n{{ m.role }}:\n{{ m.content }}\n"
                      "{% endfilter %}\n{% endfor %}",
                      R"({"messages": [{"role": "user", "content": "Hi\nthere"}, {"role": "assistant", "content": "Hello"}]})"),
            "    user:\n    Hi\n    there\n    assistant:\n    Hello\n");  // jinja2's
}

// jinja2 joins the output pieces with "".join: a filter that returns no
// str fails the render (TypeError: sequence item 0: expected str instance).
TEST(chat_filter_block, a_filter_that_returns_no_string_is_an_error) {
  EXPECT_NE(render_fails("{% filter length %}aaa{% endfilter %}").find("returned a value of type 'int'"), std::string::npos);
  EXPECT_NE(render_fails("{% filter list %}ab{% endfilter %}").find("'list', not a string"), std::string::npos);
  EXPECT_NE(render_fails("\n{% filter nope(1) %}a{% endfilter %}").find("line 2: unknown filter 'nope'"), std::string::npos);
}

TEST(chat_filter_block, malformed_blocks_fail_to_parse) {  // jinja2: TemplateSyntaxError for each
  EXPECT_NE(parse_fails("x\n{% filter upper %}a").find("line 2: unclosed '{% filter %}'"), std::string::npos);
  EXPECT_NE(parse_fails("{% filter upper %}a{% endfilter %}{% endfilter %}").find("unexpected '{% endfilter %}'"),
            std::string::npos);
  EXPECT_NE(parse_fails("{% filter %}a{% endfilter %}").find("expected a name"), std::string::npos);
  EXPECT_NE(parse_fails("{% filter \"upper\" %}a{% endfilter %}").find("expected a name"), std::string::npos);
  EXPECT_NE(parse_fails("{% filter upper x %}a{% endfilter %}").find("expected '%}', found 'x'"), std::string::npos);
  EXPECT_NE(parse_fails("{% filter upper is string %}a{% endfilter %}").find("found 'is'"), std::string::npos);
  EXPECT_NE(parse_fails("{% filter upper %}a{% endfilter upper %}").find("found 'upper'"), std::string::npos);
}

TEST(chat_filter_block, unknown_filters_warn_at_load) {
  auto t = chat_template::parse("{% if false %}{% filter frobnicate %}x{% endfilter %}{% endif %}");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->warnings().size(), 1u);
  EXPECT_NE(t->warnings()[0].find("unknown filter 'frobnicate'"), std::string::npos);
}

}  // namespace
}  // namespace cortex
