// Dict literals whose keys are not strings ({1: 'a'}, {(1, 2): 'b'}):
// lookup, iteration, dictsort, items(), printing and tojson. Every expected
// string is Python jinja2 3.1.2's output for the same template, which
// tests/e2e/test_chat_template_jinja2.py also compares live.
#include <gtest/gtest.h>

#include "tests/chat/chat_render.hpp"

namespace cortex {
namespace {

using testing::render_fails;
using testing::render_ok;

TEST(chat_dict_keys, int_keys_print_look_up_and_list_as_python_does) {
  EXPECT_EQ(render_ok("{% set d = {1: 'a', 2: 'b'} %}{{ d }}|{{ d[1] }}|{{ d[2] }}|{{ d['1'] }}|{{ d.1 }}|"
                      "{{ d|dictsort }}|{{ d.items()|list }}|{{ d|items|list }}"),
            "{1: 'a', 2: 'b'}|a|b||a|[(1, 'a'), (2, 'b')]|[(1, 'a'), (2, 'b')]|[(1, 'a'), (2, 'b')]");  // jinja2's
  EXPECT_EQ(render_ok("{% set d = {1: 'a', 2: 'b'} %}{% for k in d %}{{ k + 1 }}{% endfor %}|"
                      "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d|list }}|{{ d|length }}|{{ d|string }}"),
            "23|1=a;2=b;|[1, 2]|2|{1: 'a', 2: 'b'}");  // jinja2's
}

TEST(chat_dict_keys, dictsort_orders_numbers_as_numbers) {
  EXPECT_EQ(render_ok("{% set d = {2: 'b', 1: 'a', 10: 'c'} %}{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|"
                      "{{ d|dictsort(by='value') }}|{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}"),
            "[(1, 'a'), (2, 'b'), (10, 'c')]|[(10, 'c'), (2, 'b'), (1, 'a')]|[(1, 'a'), (2, 'b'), (10, 'c')]|"
            "1=a;2=b;10=c;");  // jinja2's
  // jinja2: TypeError: '<' not supported between instances of 'str' and 'int'
  EXPECT_NE(render_fails("{% set d = {2: 'b', 1: 'a', 'x': 3} %}{{ d|dictsort }}").find("'<' not supported"),
            std::string::npos);
}

TEST(chat_dict_keys, equal_keys_are_one_key) {  // 1 == 1.0 == True, as Python's dict sees them
  EXPECT_EQ(render_ok("{% set d = {1: 'a', 1.0: 'b', true: 'c'} %}{{ d }}|"
                      "{{ {1.5: 'a', none: 1, true: 2, (1, 2): 3, 'x': 4, -1: 5} }}|{{ {missing: 1} }}"),
            "{1: 'c'}|{1.5: 'a', None: 1, True: 2, (1, 2): 3, 'x': 4, -1: 5}|{Undefined: 1}");  // jinja2's
  EXPECT_EQ(render_ok("{% set d = {1: 'a'} %}{{ d[1.0] }}{{ d[true] }}{{ 1 in d }}{{ 1.0 in d }}{{ '1' in d }}"
                      "{{ d.get(1) }}{{ d.get(2, 'd') }}{{ d.keys()|list }}{{ d.values()|list }}"),
            "aaTrueTrueFalsead[1]['a']");  // jinja2's
  EXPECT_EQ(render_ok("{{ {1: 'a'} == {1: 'a'} }}{{ {1: 'a'} == {'1': 'a'} }}{{ {1: 'a'} == {1.0: 'a'} }}|"
                      "{{ {(1, 2): 'a'}[(1, 2)] }}|{{ {1: {2: 'x'}}[1][2] }}|{{ {1: 'a'}[[1]] is defined }}"),
            "TrueFalseTrue|a|x|False");  // jinja2's
}

TEST(chat_dict_keys, tojson_writes_keys_as_json_dumps_does) {
  EXPECT_EQ(render_ok("{{ {1: 'a'}|tojson }}|{{ {1.5: 'a', true: 'b', none: 'c'}|tojson }}|"
                      "{{ {10: 'a', 2: 'b'}|tojson(sort_keys=true) }}|{{ {10: 'a', 2: 'b'}|tojson(indent=1) }}"),
            "{\"1\": \"a\"}|{\"1.5\": \"a\", \"true\": \"b\", \"null\": \"c\"}|{\"2\": \"b\", \"10\": \"a\"}|"
            "{\n \"10\": \"a\",\n \"2\": \"b\"\n}");  // jinja2's
  // jinja2: TypeError for each
  EXPECT_NE(render_fails("{{ {1: 'a', 'b': 2}|tojson(sort_keys=true) }}").find("'<' not supported"), std::string::npos);
  EXPECT_NE(render_fails("{{ {(1, 2): 3}|tojson }}").find("keys must be str, int, float, bool or None, not tuple"),
            std::string::npos);
}

TEST(chat_dict_keys, unhashable_keys_are_errors) {  // jinja2: TypeError: unhashable type: 'list'
  EXPECT_NE(render_fails("{{ {[1]: 2} }}").find("unhashable type: 'list'"), std::string::npos);
  EXPECT_NE(render_fails("{{ [1] in {1: 2} }}").find("unhashable type: 'list'"), std::string::npos);
  EXPECT_NE(render_fails("{{ {1: 'a'}.get([1]) }}").find("unhashable type: 'list'"), std::string::npos);
  EXPECT_NE(render_fails("{{ {(1, [2]): 3} }}").find("unhashable type: 'list'"), std::string::npos);
}

}  // namespace
}  // namespace cortex
