"""`cortex template` against Python's jinja2 (Debian's python3-jinja2, set up
as transformers sets it up: ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False),
raise_exception) on templates written to stress the semantics the golden
chat cases do not all reach: white-space control, scoping, loops, filters,
filter blocks, Markup, dict keys, tests, methods, formatting and errors.
jinja2 is the reference: every output must be byte for byte the same,
every jinja2 error a cortex error."""

import json
import os
import subprocess
import tempfile
import unittest

from tests.e2e import support

try:
    import jinja2
    import jinja2.ext
    import jinja2.sandbox
except ImportError:  # scripts/setup installs python3-jinja2
    jinja2 = None

CORTEX = os.path.join(support.BIN_DIR, "cortex")

MSGS = [
    {"role": "system", "content": "  Be brief.\n"},
    {"role": "user", "content": "Héllo\u3000 wörld "},
    {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHi!", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": [1.5, None, True]}}}]},
    {"role": "tool", "content": "{\"ok\": true}"},
    {"role": "user", "content": "Thanks 🙂"},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather \"now\"",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}]

# (name, template, extra context)
CASES = [
    ("ws_block_minus", "a  \n  {%- if true -%}  \n b {%- endif %}\n\nc", {}),
    ("ws_lstrip_indented", "x\n    {% for m in messages %}\n    {{ m.role }}\n    {% endfor %}\ny\n", {}),
    ("ws_expr_minus", "{{- 'a' -}}\n\n  {{ 'b' }}  \n{{- 'c' }}", {}),
    ("ws_comment", "a\n  {# c #}\nb {#- c -#} \n c\n{#+ c #}", {}),
    ("ws_plus", "  {%+ if true %}x{%+ endif %}\n  y", {}),
    ("ws_trailing_newlines", "x\n\n\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("ws_raw", "{% raw %}{{ not parsed }}{% endraw %}\n  {% raw -%}  x {%- endraw %}", {}),
    ("scope_if_set", "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}", {}),
    ("scope_for_set", "{% set x = 1 %}{% for m in messages %}{% set x = loop.index %}{{ x }}{% endfor %}{{ x }}", {}),
    ("scope_nested_loops", "{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}"
                           "{{ loop.index }}|{% endfor %}", {}),
    ("scope_namespace", "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                        "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }} {{ ns.s }}", {}),
    ("loop_vars", "{% for m in messages %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
                  "{{ loop.length }}{{ loop.previtem.role if loop.previtem is defined }},{% endfor %}", {}),
    ("loop_filter", "{% for m in messages if m.role != 'system' %}{{ m.role }}{{ loop.last }} {% endfor %}", {}),
    ("loop_else", "{% for m in messages if m.role == 'nobody' %}x{% else %}none{% endfor %}", {}),
    ("loop_controls", "{% for i in range(10) %}{% if i is even %}{% continue %}{% endif %}{% if i > 6 %}{% break %}"
                      "{% endif %}{{ i }}{% endfor %}", {}),
    ("loop_items", "{% for k, v in messages[2].tool_calls[0].function.arguments.items() %}{{ k }}={{ v }};{% endfor %}", {}),
    ("loop_reversed", "{% for m in messages[::-1] %}{{ m.role[:2] }}{% endfor %}", {}),
    ("tojson_tools", "{% for t in tools %}{{ t|tojson }}\n{{ t.function.parameters|tojson(indent=2) }}{% endfor %}", {}),
    ("tojson_values", "{{ messages|tojson }}", {}),
    ("tojson_sorted", "{{ {'b': 1, 'a': {'d': 2, 'c': 3}}|tojson(sort_keys=true) }}", {}),
    ("print_values", "{{ [1, 1.0, 'a', none, true, {'k': (1, 2)}, 1e100, -0.0, 2.5e-7] }} {{ 10 / 4 }} {{ 2 ** 0.5 }}", {}),
    ("print_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\there', 'nl\\n'] }}", {}),
    ("strip_unicode", "[{{ messages[1].content|trim }}][{{ messages[1].content.strip() }}][{{ messages[0].content.rstrip() }}]", {}),
    ("split_think", "{% set c = messages[2].content %}{{ c.split('</think>')[-1].lstrip('\\n') }}|"
                    "{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", {}),
    ("string_methods", "{{ 'a b  c'.split() }}{{ 'a,b'.split(',') }}{{ 'Hello'.upper() }}{{ 'x'.startswith(('y', 'x')) }}"
                       "{{ 'aaa'.replace('a', 'b', 2) }}{{ '-'.join(['1', '2']) }}{{ 'abc'.find('c') }}"
                       "{{ ' x '.strip() ~ '|' }}{{ 'a\\nb'.splitlines() }}{{ 'Ab1'.isalpha() }}", {}),
    ("slicing", "{{ 'héllo wörld'[1:5] }}{{ 'abc'[::-1] }}{{ [1, 2, 3, 4, 5][1:-1:2] }}{{ 'abc'[5:] }}{{ [1][-1] }}", {}),
    ("filters_text", "{{ 'hello world'|title }} {{ 'HeLLo'|capitalize }} {{ 'ab'|upper }} {{ 'A\\nB'|indent(2, true) }} "
                     "{{ 'x'|replace('x', 'yy') }} {{ 3|string ~ 4 }} {{ '%s=%d'|format('a', 3) }}", {}),
    ("filters_lists", "{{ messages|map(attribute='role')|join(',') }} {{ messages|selectattr('role', 'equalto', 'user')|list|length }} "
                      "{{ messages|rejectattr('tool_calls', 'defined')|map(attribute='role')|list }} "
                      "{{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ [1, 2, 2]|unique|list }} "
                      "{{ [1, 5, 3]|max }}{{ [1, 5, 3]|min }}{{ [1, 5, 3]|sum }} {{ [1, 2]|first }}{{ [1, 2]|last }}", {}),
    ("filters_dict", "{{ {'b': 2, 'a': 1}|dictsort }} {{ {'b': 2, 'a': 1}|items|list }} {{ {'a': 1}|length }}", {}),
    ("filters_default", "{{ missing|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ messages[0].nope|d(1) }}", {}),
    ("filters_numbers", "{{ '12'|int + 1 }} {{ 'x'|int(7) }} {{ '1.5'|float }} {{ -3|abs }} {{ 2.675|round(2) }} "
                        "{{ 3.5|round }} {{ 4.5|round }} {{ 1.25|round(1, 'floor') }}", {}),
    ("tests", "{{ messages is sequence }}{{ messages[0] is mapping }}{{ 'a' is string }}{{ 1 is number }}"
              "{{ true is boolean }}{{ none is none }}{{ missing is undefined }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}"
              "{{ 1 is integer }}{{ 1.0 is float }}{{ 'a' is iterable }}{{ enable is false }}{{ enable is not true }}"
              "{{ 2 is gt 1 }}{{ 'abc' is lower }}{{ 2 is in [1, 2] }}", {"enable": False}),
    ("undefined_attrs", "{% for m in messages %}{{ m.tool_calls is defined }}{% if m.tool_calls %}T{% endif %}"
                        "{{ m.tool_calls|length }} {% endfor %}[{{ missing }}]{{ missing is defined }}", {}),
    ("operators", "{{ 7 // 2 }}{{ -7 // 2 }}{{ -7 % 3 }}{{ 7 % -3 }}{{ 2 ** 10 }}{{ 1 + 2 * 3 - 4 / 2 }}{{ 'a' ~ 1 ~ none }}"
                  "{{ 'b' in 'abc' }}{{ 4 not in [1] }}{{ 1 < 2 <= 2 }}{{ 0 or '' or 'z' }}{{ 1 and [] }}"
                  "{{ 'x' if none else 'y' }}{{ not 0 }}{{ [1] * 3 }}{{ 'ab' * 2 }}{{ (1, 2) + (3,) }}", {}),
    ("precedence", "{{ messages|length - 1 }} {{ -2|abs }} {{ not 1 == 2 }} {{ 1 + 2 is odd }} {{ 'a' ~ 'b'|upper }}", {}),
    ("dict_equality", "{{ {'a': 1, 'b': [1, {'c': 2}]} == {'b': [1.0, {'c': 2}], 'a': 1} }}"
                      "{{ messages[1] == messages[-4] }}{{ messages[1] == messages[4] }}{{ [1, 2] == (1, 2) }}", {}),
    ("percent_format", "{{ '%s and %r' % ('a', 'b') }} {{ '%5.2f|%-4d|%03d' % (3.14159, 7, 5) }} {{ '%s' % 'x' }} {{ '100%%' % () }}", {}),
    ("str_format", "{{ '{} {}'.format('a', 1) }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=none) }}", {}),
    ("macro", "{% macro render(m, prefix='> ') %}{{ prefix }}{{ m.role }}: {{ m.content|trim }}\n{% endmacro %}"
              "{% for m in messages %}{{ render(m) }}{{ render(m, prefix='* ') if loop.last }}{% endfor %}", {}),
    ("set_block", "{% set header %}\n  [{{ messages|length }}]\n{% endset %}{{ header }}{{ header|trim }}", {}),
    ("tuple_unpack_set", "{% set a, b = 'xy' %}{{ b }}{{ a }}{% set t = 1, 2 %}{{ t }}", {}),
    ("dict_methods", "{% set d = messages[2].tool_calls[0].function %}{{ d.keys()|list }}{{ d.get('name') }}"
                     "{{ d.get('nope', 'dflt') }}{{ d.get('nope') }}{{ d['arguments']['a'][0] }}", {}),
    ("bos_eos", "{{ bos_token }}{{ messages[1].content }}{{ eos_token }}|{{ bos_token is defined }}", {"bos_token": "<s>"}),
    ("tools_none", "{{ tools is none }}{{ documents is none }}{% if tools %}T{% endif %}{{ add_generation_prompt }}", {"tools": None}),
    ("raise", "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools: ' ~ m.role) }}{% endif %}{% endfor %}", {}),
    ("error_undefined_plus", "{{ missing + 'x' }}", {}),
    ("error_none_plus", "{{ messages[0].nope + 'x' }}", {}),
    ("error_type", "{{ 'a' + 1 }}", {}),
    ("error_not_iterable", "{% for x in 5 %}{% endfor %}", {}),
    ("error_none_attr_of_undefined", "{{ missing.attr }}", {}),
    ("conditional_chains", "{% if messages[0].role == 'user' %}u{% elif messages[0].role == 'system' and messages|length > 2 %}"
                           "s{% else %}o{% endif %}", {}),
    ("chatml_tools", "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}"
                     "{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}"
                     "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}"
                     "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}", {"tools": TOOLS}),
    # Corners: loop scoping, undefined chains, number printing, escapes, split, tests.
    ('more_00', '{% set x = 0 %}{% for i in [1] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}', {}),
    ('more_01', '{% for i in [1,2] %}{% endfor %}[{{ i }}]', {}),
    ('more_02', "{{ 'a' 'b' }}", {}),
    ('more_03', '{{ foo() }}', {}),
    ('more_04', '{{\n  messages[0].role\n}}', {}),
    ('more_05', '{{ messages[0].nope.deeper is defined }}', {}),
    ('more_06', '{{ none.foo is defined }}', {}),
    ('more_07', '{{ x.y.z }}', {'x': {'y': None}}),
    ('more_08', "{{ 'x' }}  {% if true %}a{% endif %}\n  {% if true %}b{% endif %}", {}),
    ('more_09', '\t{% if true %}tab{% endif %}\n \t {%- if true %}x{% endif %}', {}),
    ('more_10', '{% if true %}  \n{% endif %}', {}),
    ('more_11', '{% for m in messages %}{% set role = m.role %}{% endfor %}{{ role }}', {}),
    ('more_12', '{% macro f() %}{{ messages|length }}{% endmacro %}{% set messages = [1] %}{{ f() }}', {}),
    ('more_13', '{% set ns = namespace(a=1) %}{% macro f() %}{% set ns.a = 2 %}{% endmacro %}{{ f() }}{{ ns.a }}', {}),
    ('more_14', "{{ messages[0]['content'] is string }}{{ messages[2]['tool_calls'] is iterable }}", {}),
    ('more_15', "{%- set x = messages | selectattr('role', 'eq', 'user') | list | last %}{{ x.content }}", {}),
    ('more_16', "{{ [1,2,3]|map('string')|join }}", {}),
    ('more_17', "{{ messages|map(attribute='nope')|list }}", {}),
    ('more_18', "{{ messages|map(attribute='nope', default='d')|list }}", {}),
    ('more_19', "{{ 'abc'|list }}{{ {'a':1}|list }}", {}),
    ('more_21', '{{ (1,2)[0] }}{{ [[1,2],[3]]|length }}', {}),
    ('more_22', "{{ 1 == 1.0 }}{{ 'a' < 'b' }}{{ [1,2] < [1,3] }}{{ true + 1 }}", {}),
    ('more_24', '{{ 1e300 * 1e10 }}', {}),
    ('more_25', '{{ -0.0 }} {{ 0.0 == -0.0 }} {{ 1.5e-10 }} {{ 123456789012345678.0 }}', {}),
    ('more_26', '{{ x }}', {'x': 1e+16}),
    ('more_28', "{{ '\\u00e9' }}{{ '\\x41' }}{{ 'a\\\\b' }}{{ 'q\\'s' }}", {}),
    ('more_29', '{{ "don\'t" ~ \'say "no"\' }}', {}),
    ('more_30', '{% if messages %}{% set x = 1 %}{% else %}{% set x = 2 %}{% endif %}{{ x }}', {}),
    ('more_31', '{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}', {}),
    ('more_32', '{% for a, b in [[1, 2, 3]] %}{% endfor %}', {}),
    ('more_33', '{{ messages[0].content[0] }}{{ messages[1].content[-1] }}', {}),
    ('more_35', '{{ messages.0.role }}', {}),
    ('more_36', '{{ loop }}', {}),
    ('more_37', '{% for m in messages %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}', {}),
    ('more_38', "{{ messages[-1].content.replace('🙂', ':)') }}", {}),
    ('more_39', "{{ 'a\\tb c'.split(' ') }}{{ 'a  b'.split(' ') }}{{ ''.split() }}{{ ''.split(',') }}", {}),
    ('more_40', "{{ ' a b '.split(None, 1) }}{{ 'a b c'.rsplit(None, 1) }}", {}),
    ('more_41', "{{ 'x'.strip(none) }}{{ 'abcba'.strip('ab') }}", {}),
    ('more_42', '{{ tools[0].function.description|tojson }}', {'tools': [{'function': {'description': 'a\u2028b\x7f\t'}}]}),
    ('more_43', '{{ d|tojson }}', {'d': {'é': 'ü', 'n': -1.25e-08, 'big': 1e+21}}),
    ('more_44', '{{ [] is sequence }}{{ none is iterable }}{{ 5 is iterable }}{{ {} is sequence }}', {}),
    ('more_45', "{{ 3 is eq 3 }}{{ 'a' is ne 'b' }}{{ none is sameas none }}{{ true is sameas true }}{{ 1 is sameas true }}", {}),
    ('more_46', "{{ 'ABC' is upper }}{{ 'a1' is lower }}", {}),
    ('more_47', '{{ x is callable }}{{ raise_exception is callable }}', {'x': 1}),
    ('more_48', "{{ messages|first|attr('role') }}", {}),
    ('more_49', "{% for m in messages|reverse %}{{ m.role[0] }}{% endfor %}{{ 'abc'|reverse }}", {}),
    ('more_50', '{{ messages|length if messages else 0 }}', {}),
    ('more_51', "{{ 'yes' if x is defined and x else 'no' }}", {'x': 0}),
    ('more_52', "{{ [1, 2] | join(', ') }}{{ ['a', none] | join }}", {}),
    ('more_53', '{{ 5 // 0 }}', {}),
    ('more_54', "{{ {'a': 1}['a'] }}{{ {'a': 1}.a }}", {}),
    ('more_56', "{{ 'b' in {'a': 1} }}{{ 1 in {'a': 1} }}", {}),
    ('more_57', "{{ '%d' % 3.7 }}{{ '%.2e' % 12345.678 }}{{ '%x' % 255 }}", {}),
    ('more_58', "{{ [3, 'a']|sort }}", {}),
    ('more_59', "{{ {'a': [1, 2]}|string }}{{ none|string }}{{ true|string }}", {}),
    ('more_60', '{{ x|trim }}|{{ x|length }}', {'x': '\x85 a \u200b'}),
    ("title_case", "{{ \"they're bill's friends-of (the) [x] {y} <z> 3rd\"|title }}|{{ \"they're bill's 3rd x-y\".title() }}|"
                   "{{ 'hELLO wORLD'|capitalize }}{{ 'hELLO'.capitalize() }}", {}),
    # {% filter %} blocks, markupsafe's Markup (|safe, |escape), dict literals with non-str keys, and
    # select/reject/map of falsy values: the templates of tests/chat/chat_filter_block_test.cpp,
    # chat_markup_test.cpp, chat_dict_keys_test.cpp and chat_template_test.cpp, whose expected strings are
    # jinja2's.
    ('filter_block_00', "{% filter upper %}abc {{ 'x' }}{% endfilter %}", {}),
    ('filter_block_01', '{% filter indent(2) %}a\nb\nc{% endfilter %}', {}),
    ('filter_block_02', '{% filter indent(width=3, first=true) %}a\n\nb{% endfilter %}', {}),
    ('filter_block_03', "{% filter replace('a', 'b') %}aaa{% endfilter %}", {}),
    ('filter_block_04', "{% filter format('<') %}%s!{% endfilter %}", {}),
    ('filter_block_05', '{% filter upper|trim %}  x  {% endfilter %}|', {}),
    ('filter_block_06', "{% filter replace('a', 'b')|upper|replace('B', '-') %}aXa{% endfilter %}", {}),
    ('filter_block_07', '{% filter upper %}{% filter trim %}  x  {% endfilter %}y{% endfilter %}', {}),
    ('filter_block_08', '{% filter upper %}{% for i in range(2) %}{{ i }}a{% endfor %}{% endfilter %}', {}),
    ('filter_block_09', '{% set x = 5 %}{% filter upper %}{% set x = 7 %}{{ x }}{% endfilter %}{{ x }}', {}),
    ('filter_block_10', '{% set ns = namespace(a=1) %}{% filter upper %}{% set ns.a = 2 %}{% endfilter %}{{ ns.a }}', {}),
    ('filter_block_11', '{% for i in [1, 2, 3] %}{% filter upper %}a{{ i }}{% if i == 2 %}{% break %}{% endif %}{% endfilter %}{% endfor %}', {}),
    ('filter_block_12', '{% for i in [1, 2] %}{% filter upper %}{% if i == 1 %}{% continue %}{% endif %}z{% endfilter %}{% endfor %}', {}),
    ('filter_block_13', "{% macro m(t) %}{% filter upper %}{{ t }}{% endfilter %}{% endmacro %}{{ m('in macro') }}", {}),
    ('filter_block_14', '{% set s %}{% filter upper %}x{% endfilter %}y{% endset %}{{ s }}', {}),
    ('filter_block_15', '  {% filter upper %}\n  x\n  {% endfilter %}\ny', {}),
    ('filter_block_16', '{% filter upper -%}\n  x\n{%- endfilter %}', {}),
    ('filter_block_17', '{% filter e %}<a href="x">{% endfilter %}', {}),
    ('filter_block_18', "{% filter default('empty', true) %}{% endfilter %}", {}),
    ('filter_block_19', '{% filter first %}abc{% endfilter %}|{% filter reverse %}abc{% endfilter %}|{% filter title %}hello world{% endfilter %}', {}),
    ('filter_block_20', '{% filter tojson %}a"b{% endfilter %}', {}),
    ('filter_block_21', '{% for m in messages %}\n{% filter indent(4, true) %}\n{{ m.role }}:\n{{ m.content }}\n{% endfilter %}\n{% endfor %}', {}),
    ('filter_block_22', '{% filter length %}aaa{% endfilter %}', {}),
    ('filter_block_23', '{% filter list %}ab{% endfilter %}', {}),
    ('filter_block_24', '{% filter upper %}a{% endfilter %}{% endfilter %}', {}),
    ('filter_block_25', '{% filter upper %}a', {}),
    ('filter_block_26', '{% filter %}a{% endfilter %}', {}),
    ('filter_block_27', '{% filter upper x %}a{% endfilter %}', {}),
    ('filter_block_28', '{% filter "upper" %}a{% endfilter %}', {}),
    ('filter_block_29', '{% filter upper is string %}a{% endfilter %}', {}),
    ('filter_block_30', '{% filter upper %}a{% endfilter upper %}', {}),
    ('markup_00', "{{ '<b>'|safe + '<i>' }}|{{ '<i>' + '<b>'|safe }}|{{ '<b>'|safe + '<i>'|safe }}", {}),
    ('markup_01', "{{ '<b>'|safe ~ '<i>' }}|{{ '<i>' ~ '<b>'|safe }}|{% set m = '<b>'|safe ~ '<' %}{{ m + '&' }}", {}),
    ('markup_02', '{{ \'<b>\'|safe }}|{{ \'<b>\'|e }}|{{ (\'<b>\'|safe)|e }}|{{ \'<b>\'|e|e }}|{{ "\'\\"&"|e }}', {}),
    ('markup_03', "{{ '<b>'|e + '<i>' }}|{{ 5|e + '<' }}|{{ none|e }}|{{ missing|e }}|{{ [1, '<']|e }}", {}),
    ('markup_04', "{% set m = '<b>'|safe %}{{ m|string + '<' }}|{{ (5|string) + '<' }}|{{ m|string is string }}", {}),
    ('markup_05', "{% set m = '<b>'|safe %}{{ m|upper + '<' }}|{{ m|lower + '<' }}|{{ m|capitalize + '<' }}|{{ m|trim + '<' }}|{{ m|indent + '<' }}|{{ m|reverse + '<' }}|{{ m|last + '<' }}|{{ m|d + '<' }}", {}),
    ('markup_06', "{% set m = '<b>'|safe %}{{ m|title + '<' }}|{{ m|replace('b', '&') + '<' }}|{{ [m, '<']|join + '<' }}|{{ m|first + '<' }}|{{ m|tojson + '<' }}|{{ m|list }}", {}),
    ('markup_07', "{% set m = '<b>'|safe %}{{ m|trim('<') + '<' }}|{{ ('%s'|safe)|format('<') }}|{{ ('%s|%r'|safe) % ('<', '<') }}|{{ ('%s'|safe) % m }}|{{ '%s' % m + '<' }}", {}),
    ('markup_08', "{% set m = '<b>'|safe %}{{ m.upper() + '<' }}|{{ m.replace('b', '<') }}|{{ m.strip('<') + '<' }}|{{ m.split('b') }}|{{ m.join(['<', m]) }}|{{ ('{}'|safe).format('<') }}|{{ m.startswith('<') }}", {}),
    ('markup_09', "{% set m = '<b>'|safe %}{{ m[0] + '<' }}|{{ m[1:] + '<' }}|{{ m * 2 + '<' }}|{{ m == '<b>' }}|{{ m is string }}|{{ m|length }}|{{ '<' in m }}|{{ [m] }}|{{ {'k': m} }}", {}),
    ('markup_10', "{% set m = '<b>'|safe %}{{ 'yes' if m else 'no' }}|{{ ''|safe ~ 'x' }}|{{ missing|safe ~ '<' }}|{{ none|safe + '<' }}|{{ [1]|safe + '<' }}", {}),
    ('markup_11', "{% macro f() %}<b>{% endmacro %}{{ f() + '<' }}|{% set s %}<b>{% endset %}{{ s + '<' }}", {}),
    ('markup_12', "{{ '<b>'|safe + 1 }}", {}),
    ('markup_13', "{{ 1 + '<b>'|safe }}", {}),
    ('markup_14', "{{ '<b>'|safe + none }}", {}),
    ('dict_keys_00', "{% set d = {1: 'a', 2: 'b'} %}{{ d }}|{{ d[1] }}|{{ d[2] }}|{{ d['1'] }}|{{ d.1 }}|{{ d|dictsort }}|{{ d.items()|list }}|{{ d|items|list }}", {}),
    ('dict_keys_01', "{% set d = {2: 'b', 1: 'a', 10: 'c'} %}{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|{{ d|dictsort(by='value') }}|{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}", {}),
    ('dict_keys_02', "{% set d = {1: 'a', 1.0: 'b', true: 'c'} %}{{ d }}|{{ {1.5: 'a', none: 1, true: 2, (1, 2): 3, 'x': 4, -1: 5} }}|{{ {u: 1} }}", {}),
    ('dict_keys_03', "{% set d = {1: 'a'} %}{{ d[1.0] }}{{ d[true] }}{{ 1 in d }}{{ 1.0 in d }}{{ '1' in d }}{{ d.get(1) }}{{ d.get(2, 'd') }}{{ d.keys()|list }}{{ d.values()|list }}", {}),
    ('dict_keys_04', "{% set d = {1: 'a', 2: 'b'} %}{% for k in d %}{{ k + 1 }}{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d|list }}|{{ d|length }}|{{ d|string }}", {}),
    ('dict_keys_05', "{{ {1: 'a'} == {1: 'a'} }}{{ {1: 'a'} == {'1': 'a'} }}{{ {1: 'a'} == {1.0: 'a'} }}|{{ {(1, 2): 'a'}[(1, 2)] }}|{{ {1: {2: 'x'}}[1][2] }}|{{ {1: 'a'}[[1]] is defined }}", {}),
    ('dict_keys_06', "{{ {1: 'a'}|tojson }}|{{ {1.5: 'a', true: 'b', none: 'c'}|tojson }}|{{ {10: 'a', 2: 'b'}|tojson(sort_keys=true) }}|{{ {10: 'a', 2: 'b'}|tojson(indent=1) }}", {}),
    ('dict_keys_07', "{% set d = {2: 'b', 1: 'a', 'x': 3} %}{{ d|dictsort }}", {}),
    ('dict_keys_08', "{{ {1: 'a', 'b': 2}|tojson(sort_keys=true) }}", {}),
    ('dict_keys_09', '{{ {(1, 2): 3}|tojson }}', {}),
    ('dict_keys_10', '{{ {[1]: 2} }}', {}),
    ('dict_keys_11', '{{ [1] in {1: 2} }}', {}),
    ('dict_keys_12', "{{ {1: 'a'}.get([1]) }}", {}),
    ('select_falsy_00', "{{ n|select|list }}{{ missing|select|list }}{{ e|reject|list }}{{ l|selectattr('a')|list }}{{ d|rejectattr('a', 'equalto', 1)|list }}{{ 0|map('upper')|list }}{{ false|map(attribute='a')|list }}", {'n': None, 'e': '', 'l': [], 'd': {}}),
    ('select_falsy_01', "{{ n|map('nope')|list }}{{ n|select('nope')|list }}{{ n|selectattr|list }}{{ n|map|list }}|{% for a in n|selectattr('a') %}{{ a }}{% else %}empty{% endfor %}|{{ n|map('upper')|join(',') }}|{{ n|reject|first is undefined }}", {'n': None}),
    ('select_falsy_02', '{{ 5|select|list }}', {}),
    ('select_falsy_03', '{{ [1]|map|list }}', {}),
    ('select_falsy_04', "{{ [{'a': 1}]|selectattr|list }}", {}),
]


def jinja_env():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def context_of(inp):
    """The variables transformers passes for the CLI's input object."""
    ctx = {"messages": inp.get("messages", []), "add_generation_prompt": inp.get("add_generation_prompt", True),
           "tools": inp.get("tools"), "documents": inp.get("documents")}
    for key in ("bos_token", "eos_token"):
        if inp.get(key) is not None:
            ctx[key] = inp[key]
    for key, val in inp.items():
        if key not in ("messages", "add_generation_prompt", "bos_token", "eos_token"):
            ctx[key] = val
    return ctx


@unittest.skipIf(jinja2 is None, "python3-jinja2 is not installed (scripts/setup installs it)")
class TemplateAgainstJinja2Test(unittest.TestCase):
    def test_same_output_or_both_fail(self):
        env = jinja_env()
        with tempfile.TemporaryDirectory() as tmp:
            for name, text, extra in CASES:
                with self.subTest(case=name):
                    inp = {"messages": MSGS}
                    inp.update(extra)
                    try:
                        want = env.from_string(text).render(**context_of(inp))
                        want_error = None
                    except Exception as e:  # noqa: BLE001 - any jinja2 failure must be a cortex failure
                        want, want_error = None, e
                    tpath = os.path.join(tmp, name + ".jinja")
                    with open(tpath, "w", encoding="utf-8", newline="") as f:
                        f.write(text)
                    ipath = os.path.join(tmp, name + ".json")
                    with open(ipath, "w", encoding="utf-8") as f:
                        json.dump(inp, f, ensure_ascii=False)
                    r = subprocess.run([CORTEX, "template", "--template", tpath, "--input", ipath],
                                       capture_output=True, timeout=60)
                    if want_error is None:
                        self.assertEqual(r.returncode, 0, r.stderr.decode())
                        self.assertEqual(r.stdout.decode("utf-8"), want)
                    else:
                        self.assertEqual(r.returncode, 1, "jinja2 failed (%s) but cortex printed %r" %
                                         (want_error, r.stdout.decode()))
                        if type(want_error) is jinja2.exceptions.TemplateError:  # raise_exception
                            self.assertIn(str(want_error), r.stderr.decode())


if __name__ == "__main__":
    unittest.main()
