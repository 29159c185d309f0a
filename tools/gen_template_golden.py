#!/usr/bin/env python3
"""Golden outputs for strata's chat-template renderer (tests/test_template.c).

Renders every template in tests/data/templates/ on every conversation below with jinja2,
configured the way Hugging Face transformers does (chat_template_utils._compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), tojson =
json.dumps(ensure_ascii=False, sort_keys=False), globals raise_exception, strftime_now,
namespace, dict. strftime_now reads a FIXED clock (NOW, UTC) so outputs are reproducible; the
C side gets the same clock through jinja_render_chat_at(..., NOW) / `strata template --now`.

Writes:
  tests/data/templates/smollm2.jinja                (from the SmolLM2 GGUF, when present)
  tests/data/template_cases/conv/NAME.json          one conversation each
  tests/data/template_cases/expected/TEMPLATE.json  {conv: {"expect": "ok", "output": ...}
                                                     | {"expect": "raise", "message": ...}
                                                     | {"expect": "error", "message": ...}}
  tests/data/template_cases/expr_cases.json         expression-language cases with expected output

"raise" is raise_exception() (jinja2.exceptions.TemplateError exactly): the C error message must
match. "error" is any other exception (undefined attribute, sandbox SecurityError, TypeError):
the C side must fail cleanly; the message is only informative.

Usage: python3 tools/gen_template_golden.py [--copy-templates]
  --copy-templates   (re)copy ../shared/chat-templates/*.jinja into tests/data/templates/
tests/data/templates/gemma3.jinja is the published Gemma 3 instruction template, the same text
src/engine/chat_builtin.c embeds for Gemma 3 GGUFs that carry none (not re-copied here).
"""
import json
import os
import shutil
import sys
from datetime import datetime, timezone

import jinja2
import jinja2.ext
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TDIR = os.path.join(ROOT, "tests", "data", "templates")
CDIR = os.path.join(ROOT, "tests", "data", "template_cases")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "chat-templates")
NOW = 1721995200  # 2024-07-26 12:00:00 UTC
BOS, EOS = "<s>", "</s>"

# Templates that cannot be in the golden set (see docs/TEMPLATES.md).
EXCLUDED = {
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": "uses the filter from_json, which jinja2 does not define "
                                                 "(compile error in Python too)",
}


def make_env():
    # Mirrors transformers.utils.chat_template_utils._compile_jinja_template (5.x).
    class AssistantTracker(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

        def _generation_support(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, tz=timezone.utc).strftime(fmt)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                    "Please rename the attribute.")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


# ---- conversations ------------------------------------------------------------------------
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
            },
            "required": ["location"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for"},
                           "max_results": {"type": "integer", "description": "At most this many"}},
            "required": ["query"],
        },
    },
}
SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! Who are you?"}
A1 = {"role": "assistant", "content": "I am an AI assistant. How can I help?"}
U2 = {"role": "user", "content": "What is the capital of France?"}
CALL = {"role": "assistant", "content": "",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}

CONVERSATIONS = {
    "system_user": {"messages": [SYS, U1], "add_generation_prompt": True},
    "user_only": {"messages": [U1], "add_generation_prompt": True},
    "multi_turn": {"messages": [SYS, U1, A1, U2], "add_generation_prompt": True},
    "multi_turn_no_system": {"messages": [U1, A1, U2], "add_generation_prompt": True},
    "no_generation_prompt": {"messages": [SYS, U1, A1], "add_generation_prompt": False},
    "assistant_prefix": {"messages": [U1, {"role": "assistant", "content": "Sure, here is"}],
                         "add_generation_prompt": False},
    "non_ascii": {"messages": [
        {"role": "system", "content": "Réponds en français. 日本語もOK. Emoji: 🙂"},
        {"role": "user", "content": "  Ça va?\n\tLine two with \"quotes\", 'apostrophes' and a \\ backslash.  "},
        {"role": "assistant", "content": "Très bien — merci! ∑ ≈ ∞"},
        {"role": "user", "content": "Привет, κόσμε!"}], "add_generation_prompt": True},
    "tools_available": {"messages": [SYS, {"role": "user", "content": "What's the weather in Paris?"}],
                        "tools": [WEATHER_TOOL, SEARCH_TOOL], "add_generation_prompt": True},
    "tools_no_system": {"messages": [{"role": "user", "content": "What's the weather in Paris?"}],
                        "tools": [WEATHER_TOOL], "add_generation_prompt": True},
    "tool_call_and_result": {"messages": [{"role": "user", "content": "What's the weather in Paris?"}, CALL, RESULT],
                             "tools": [WEATHER_TOOL], "add_generation_prompt": True},
    "tool_call_string_args": {"messages": [
        {"role": "user", "content": "Search for llamas"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "search", "arguments": "{\"query\": \"llamas\", \"max_results\": 3}"}}]},
        {"role": "tool", "tool_call_id": "call_9", "name": "search", "content": "Llamas are camelids."},
        {"role": "assistant", "content": "Llamas are camelids from South America."},
        {"role": "user", "content": "Thanks!"}], "tools": [SEARCH_TOOL], "add_generation_prompt": True},
    "thinking_off": {"messages": [U1, A1, U2], "add_generation_prompt": True, "vars": {"enable_thinking": False}},
    "thinking_on_reasoning": {"messages": [
        U1, {"role": "assistant", "content": "I am an assistant.", "reasoning_content": "The user greets me."}, U2],
        "add_generation_prompt": True, "vars": {"enable_thinking": True}},
    "whitespace_content": {"messages": [
        {"role": "system", "content": "\n  Be brief.  \n"},
        {"role": "user", "content": "line1\nline2\n\n"},
        {"role": "assistant", "content": "  ok  "},
        {"role": "user", "content": ""}], "add_generation_prompt": True},
    "parallel_tool_calls": {"messages": [
        SYS, {"role": "user", "content": "Weather in Paris and Rome, and search for gelato."},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Rome", "unit": "celsius"}}},
            {"id": "call_c", "type": "function", "function": {"name": "search", "arguments": {"query": "gelato", "max_results": 2}}}]},
        {"role": "tool", "tool_call_id": "call_a", "name": "get_weather", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "name": "get_weather", "content": "24C"},
        {"role": "tool", "tool_call_id": "call_c", "name": "search", "content": "Gelato is Italian ice cream."},
        {"role": "assistant", "content": "Paris 18C, Rome 24C. Gelato is Italian ice cream."},
        {"role": "user", "content": "Thanks"}], "tools": [WEATHER_TOOL, SEARCH_TOOL], "add_generation_prompt": True},
    "content_parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "You describe things."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe a cat."}, {"type": "text", "text": "Briefly."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A small furry animal."}]},
        {"role": "user", "content": [{"type": "text", "text": "And a dog?"}]}], "add_generation_prompt": True},
    "roles_not_alternating": {"messages": [U1, U2], "add_generation_prompt": True},
    "assistant_first": {"messages": [A1, U1], "add_generation_prompt": True},
}

# ---- expression-language cases -------------------------------------------------------------
EXPR_VARS = {"s": "Hello, World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, "x", None, True]},
             "people": [{"name": "Ann", "age": 31, "role": "user"}, {"name": "bob", "age": 25, "role": "assistant"},
                        {"name": "Cy", "age": 40, "role": "user", "tag": "x"}],
             "u": "Ünïcödé ✓ 日本", "empty": "", "none": None, "t": True, "ws": "  a  b\tc\n"}
EXPR_CASES = [
    "{{ 1 + 2 }}|{{ 7 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}",
    "{{ 1.0 }}|{{ 0.1 + 0.2 }}|{{ 1e16 }}|{{ 1e-5 }}|{{ 1.5e300 * 10 }}|{{ 3.0 * 2 }}|{{ 10 / 5 }}|{{ 2.5 // 1 }}",
    "{{ none }}|{{ true }}|{{ false }}|{{ undefined_var }}|{{ [1, 'a', none, true, 2.0] }}|{{ {'k': 'v', 'n': [1]} }}",
    "{{ ('a',) }}|{{ ('a', 1) }}|{{ \"it's\" }}|{{ ['it\\'s', \"q\\\"\", 'back\\\\slash', 'nl\\n'] }}",
    "{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] * 2 + [3] }}|{{ 'x' + 'y' }}",
    "{{ s|length }}|{{ u|length }}|{{ l|length }}|{{ d|length }}|{{ s|count }}|{{ undefined_var|length }}",
    "{{ s|upper }}|{{ s|lower }}|{{ 'hello wORLD-foo(bar'|title }}|{{ 'hELLO'|capitalize }}|{{ u|upper }}",
    "{{ ws|trim }}|{{ '--a--'|trim('-') }}|{{ s.strip('Hd') }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'xxaxx'.rstrip('x') }}",
    "{{ ws.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b c d'.split(' ', 1) }}|{{ '  a b  '.split(None, 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}",
    "{{ s.startswith('Hell') }}|{{ s.endswith(('x', 'ld')) }}|{{ s.replace('l', 'L') }}|{{ s.replace('l', '', 2) }}|{{ s.find('o') }}|{{ s.count('l') }}",
    "{{ s[0] }}|{{ s[-1] }}|{{ s[1:4] }}|{{ s[::-1] }}|{{ s[-5:] }}|{{ l[::2] }}|{{ l[1:] }}|{{ u[1:4] }}|{{ u[::-1] }}|{{ l[-1] }}|{{ l[10] }}",
    "{{ l|first }}|{{ l|last }}|{{ l|sort }}|{{ l|sort(reverse=true) }}|{{ l|reverse|list }}|{{ l|min }}|{{ l|max }}|{{ l|sum }}",
    "{{ l|join(', ') }}|{{ people|map(attribute='name')|join('/') }}|{{ people|map(attribute='name')|map('upper')|list }}",
    "{{ people|selectattr('role', 'equalto', 'user')|map(attribute='name')|list }}|{{ people|rejectattr('tag')|list|length }}|{{ people|selectattr('tag', 'defined')|list|length }}",
    "{{ [1, 2, 3, 4]|select('odd')|list }}|{{ [1, 2, 3, 4]|reject('even')|list }}|{{ ['a', 'A', 'b', 'a']|unique|list }}|{{ people|sort(attribute='age')|map(attribute='name')|list }}",
    "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ u|tojson }}|{{ {'x': 1.0, 'y': none, 'z': 'q\"\\n'}|tojson }}|{{ people[0]|tojson(indent=4) }}",
    "{{ d|items|list }}|{{ d.items()|list }}|{{ d.keys()|list }}|{{ d.get('b') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz') }}|{{ d|dictsort }}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for x in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %}",
    "{% for x in l if x > 1 %}{{ x }}:{{ loop.index }}:{{ loop.length }} {% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}",
    "{% for x in l %}{% if loop.previtem is defined %}{{ loop.previtem }}<{% endif %}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}|{% for x in l %}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "{% for x in range(10) %}{% if x == 5 %}{% break %}{% endif %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}|{{ range(3)|list }}|{{ range(1, 10, 3)|list }}",
    "{% set ns = namespace(count=0, found=false) %}{% for x in l %}{% set ns.count = ns.count + x %}{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }}{{ ns.found }}",
    "{% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}|{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
    "{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Yo') }} {{ greet('Cy', 'Hey') }}",
    "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inside {{ n }}{% endcall %}|{% macro rec(k) %}{% if k > 0 %}{{ k }}{{ rec(k - 1) }}{% endif %}{% endmacro %}{{ rec(4) }}",
    "{% set block %}  captured {{ n }}  {% endset %}[{{ block }}]|{% filter upper %}shout {{ s }}{% endfilter %}",
    "{{ n is odd }}|{{ n is even }}|{{ n is divisibleby 7 }}|{{ n is number }}|{{ f is float }}|{{ n is integer }}|{{ s is string }}|{{ d is mapping }}|{{ l is iterable }}|{{ l is sequence }}|{{ none is none }}|{{ t is boolean }}|{{ t is true }}|{{ false is false }}",
    "{{ undefined_var is defined }}|{{ undefined_var is undefined }}|{{ d.a is defined }}|{{ d.zz is defined }}|{{ n is not none }}|{{ 'x' in s }}|{{ 'W' in s }}|{{ 2 in l }}|{{ 'b' in d }}|{{ 'q' not in d }}",
    "{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'a' < 'b' }}|{{ [1, 2] < [1, 3] }}|{{ 1 == 1.0 }}|{{ none == none }}|{{ 'a' != 'b' }}|{{ not n }}|{{ n and s }}|{{ empty or 'fallback' }}|{{ none or 0 }}",
    "{{ 'yes' if t else 'no' }}|{{ 'yes' if none else 'no' }}|{{ ('yes' if none) is defined }}|{{ undefined_var|default('dv') }}|{{ empty|default('dv') }}|{{ empty|default('dv', true) }}|{{ none|d('x', boolean=true) }}",
    "{{ '42'|int + 1 }}|{{ '3.9'|int }}|{{ 'x'|int }}|{{ 'x'|int(-1) }}|{{ 3.9|int }}|{{ '2.5'|float }}|{{ n|float }}|{{ n|string ~ 'x' }}|{{ -3|abs }}|{{ 2.567|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.1|round(0, 'ceil') }}",
    "{{ 'line1\nline2\n\nline4'|indent(2) }}|{{ 'a\nb'|indent(4, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ '<a href=\"x\">&\\'</a>'|e }}|{{ s|replace('o', '0') }}|{{ 'abc'|list }}",
    "{{ '{} and {}'.format('x', 2) }}|{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '{name}!'.format(name='N') }}|{{ ', '.join(['a', 'b']) }}|{{ 'Hello World'.title() }}|{{ '12'.isdigit() }}",
    "{{ dict(a=1, b='x') }}|{{ dict(a=1)|tojson }}|{% set m = {'z': 1, 'a': 2} %}{{ m|tojson }}|{{ m|dictsort(reverse=true) }}|{{ {'a': {'b': {'c': 1}}}.a.b.c }}|{{ {'a': {'b': 1}}['a']['b'] }}",
    "{%- if n > 5 -%}\n   big\n{%- elif n > 2 -%}\n  mid\n{%- else -%}\n  small\n{%- endif -%}\n|{# comment #}|{{- ' trimmed ' -}}  |",
    "a\n  {% if true %}\n    in\n  {% endif %}\nb\n{% for x in l %}\n  - {{ x }}\n{% endfor %}\n{%+ if true %}kept{% endif %}\n  {#- c -#}  \nend\n",
    "{% raw %}{{ not rendered }}{% endraw %}|{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}|{{ strftime_now('%Y-%m-%d %H:%M %b %d') }}",
    "{{ raise_exception('custom failure: ' ~ n) }}",
    "{{ s.nope() }}",
    "{{ undefined_var.attr }}",
    "{{ l.append(4) }}",
    "{{ 1 + 'a' }}",
    "{{ 'a' + 1 }}",
    "{{ 1 / 0 }}",
    "{{ s|nofilter }}",
    "{% for x in %}{% endfor %}",
    "{{ n|int(default=0) }}|{{ u|tojson(ensure_ascii=true) }}|{{ l|tojson(separators=(',', ':')) }}|{{ d|tojson(sort_keys=true) }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }} {% endfor %}|{{ people|map(attribute='missing', default='M')|list }}",
    "{{ [1, [2, [3]]] }}|{{ 'a' in ['a'] }}|{{ l|map('string')|join }}|{{ 'A-B'.lower().split('-') }}|{{ s.split(', ')[1] }}|{{ (s ~ '!')[:-1] }}",
    "{{ -n }}|{{ +f }}|{{ -2 ** 2 }}|{{ (-2) ** 2 }}|{{ 2 * 3 + 4 }}|{{ 2 * (3 + 4) }}|{{ 10 - 2 - 3 }}|{{ 2 ** 3 ** 2 }}|{{ 1 ~ 2 ~ 3 }}|{{ 2 + 3 ~ 4 }}",
    "{{ 1 ~ 2 + 3 }}",
    # jinja2's frame scoping: a name first stored in a frame starts undefined there
    "{% for i in [1] %}[{{ s }}]{% endfor %}{% set s = 1 %}",
    "{% macro m() %}[{{ s }}]{% endmacro %}{{ m() }}{% set s = 1 %}{{ m() }}",
    "{% for i in [1] %}{% for j in [1] %}[{{ s }}]{% endfor %}{% set s = 2 %}{% endfor %}|{% for i in [1] %}[{{ n }}]{% endfor %}{% if false %}{% set n = 1 %}{% endif %}",
    "{{ s }}{% set s = 1 %}{{ s }}|{% set y = n %}{% for i in [1] %}[{{ n }}]{% endfor %}{% set n = 1 %}{{ y }}|{% set f = 5 %}{% for i in [1, 2] %}{{ f }}{% set f = i %}{{ f }}{% endfor %}",
    "{{ ['é', '\x01', '\u200b', 'tab\there', \"both'\\\"\"] }}|{{ namespace(a=1).a }}|{{ [1] == [1.0] }}|{{ {'a': 1} == {'a': 1} }}|{{ (1, 2) == [1, 2] }}",
    "{{ 1e100 }}|{{ 123456789012345678.0 }}|{{ 0.0001 }}|{{ 0.00001234 }}|{{ -0.0 }}|{{ 7 // 2.0 }}|{{ -7 % 2.5 }}|{{ 1/3 }}|{{ 2/3 * 3 }}|{{ 100.0 * 1.1 }}",
    "{{ 'abc'|center(9) }}|{{ none|string }}|{{ none|tojson }}|{{ true|tojson }}|{{ 'a\tb\x01\x7f'|tojson }}|{{ [[], {}, [{}]]|tojson(indent=2) }}|{{ 3.0|tojson }}|{{ 1e20|tojson }}",
    "{{ l[5:0:-2] }}|{{ [1, 2, 3][1:-1] }}|{{ 'abcdef'[-100:100:2] }}|{{ 'ab' * -1 }}|{{ 5 is divisibleby(3) }}|{{ 'Ab' is upper }}|{{ 'AB' is upper }}|{{ 'ab1' is lower }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}",
    "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(b=2) }}",
    "{% macro f(a, b) %}{{ a }}-{{ b }}-{{ varargs }}-{{ kwargs }}{% endmacro %}{{ f(1) }}|{% macro g() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ g(1, 2, x=3) }}",
    "{{ [3, 'a']|sort }}",
    "{% for m in people %}{{ m.name }}{{ ', ' if not loop.last }}{% endfor %}|{{ people|selectattr('age', 'gt', 30)|map(attribute='name')|join(',') }}|{{ people|map(attribute='age')|max }}|{{ people|sum(attribute='age') }}",
    "{{ s.split(',')|map('trim')|list }}|{{ 'a.b.c'.split('.')[-1] }}|{{ '<tool_call>x</tool_call>'.split('<tool_call>')[1].split('</tool_call>')[0] }}|{{ 'x'.join(['1', '2', '3']) }}",
    "{%- set content = '<think>\nreasoning\n</think>\n\nanswer' -%}{{ content.split('</think>')[-1].lstrip('\n') }}|{{ content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') }}",
    "{{ d['a'][1] }}|{{ d.a.1 }}|{{ d['missing'] is defined }}|{{ (d.missing or 'fb') }}|{{ none is not none }}|{{ l|length > 2 }}|{{ (l|length) > 2 and l[0] == 3 }}",
    "{{ 'Hello' ~ ' ' ~ 'World' | upper }}|{{ ('Hello' ~ ' world') | upper }}|{{ -1 | abs }}|{{ - 1 | abs }}|{{ not true == false }}",
    "{% set x %}{% for i in range(3) %}{{ i }}{% endfor %}{% endset %}{{ x|length }}|{% set y | upper %}abc{% endset %}{{ y }}",
    # select / reject / selectattr / rejectattr / map on none (or any falsy value) yield nothing, as
    # functionary's template relies on when no tools are given; iterating none itself is an error
    "{{ none|selectattr('type', 'equalto', 'function')|list }}|{{ none|selectattr('x')|list|length }}|{{ none|rejectattr('x')|list }}|{{ none|select|list }}|{{ none|reject('none')|list }}",
    "{{ none|map(attribute='x')|list }}|{{ none|map('upper')|list }}|{{ (none|selectattr('x')|list) == [] }}|[{{ none|selectattr('x')|first }}]|{{ undefined_var|selectattr('x')|list }}",
    "{{ false|select|list }}|{{ 0|select|list }}|{{ ''|map('upper')|list }}|{% for t in none|selectattr('type') %}{{ t }}{% else %}no tools{% endfor %}|{% for x in undefined_var %}x{% else %}e{% endfor %}",
    "{% for x in none %}{{ x }}{% else %}empty{% endfor %}",
    "{{ none|list }}",
    "{{ none|join(',') }}",
]


def render_case(env, src, ctx):
    try:
        tmpl = env.from_string(src)
        return {"expect": "ok", "output": tmpl.render(**ctx)}
    except jinja2.exceptions.TemplateError as e:
        kind = "raise" if type(e) is jinja2.exceptions.TemplateError else "error"
        return {"expect": kind, "message": str(e), "exception": type(e).__name__}
    except Exception as e:  # TypeError, ZeroDivisionError, ... from Python itself
        return {"expect": "error", "message": str(e), "exception": type(e).__name__}


def main():
    env = make_env()
    os.makedirs(TDIR, exist_ok=True)
    os.makedirs(os.path.join(CDIR, "conv"), exist_ok=True)
    os.makedirs(os.path.join(CDIR, "expected"), exist_ok=True)
    if "--copy-templates" in sys.argv:
        for name in sorted(os.listdir(SHARED)):
            if name.endswith(".jinja"):
                shutil.copyfile(os.path.join(SHARED, name), os.path.join(TDIR, name))
        model = os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf")
        if os.path.exists(model):
            from gguf import GGUFReader
            r = GGUFReader(model)
            f = r.fields["tokenizer.chat_template"]
            with open(os.path.join(TDIR, "smollm2.jinja"), "w", encoding="utf-8", newline="") as fh:
                fh.write(bytes(f.parts[f.data[0]]).decode("utf-8"))
    for name, conv in CONVERSATIONS.items():
        with open(os.path.join(CDIR, "conv", name + ".json"), "w", encoding="utf-8") as fh:
            json.dump(conv, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    counts = {"ok": 0, "raise": 0, "error": 0}
    for tname in sorted(os.listdir(TDIR)):
        if not tname.endswith(".jinja") or tname in EXCLUDED:
            continue
        with open(os.path.join(TDIR, tname), encoding="utf-8", newline="") as fh:
            src = fh.read()
        out = {}
        for cname, conv in CONVERSATIONS.items():
            ctx = {"messages": conv["messages"], "tools": conv.get("tools"),
                   "add_generation_prompt": conv["add_generation_prompt"], "bos_token": BOS, "eos_token": EOS}
            ctx.update(conv.get("vars", {}))
            r = render_case(env, src, json.loads(json.dumps(ctx)))
            out[cname] = r
            counts[r["expect"]] += 1
        with open(os.path.join(CDIR, "expected", tname[:-6] + ".json"), "w", encoding="utf-8") as fh:
            json.dump(out, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    expr = []
    for src in EXPR_CASES:
        r = render_case(env, src, dict(EXPR_VARS))
        r["template"] = src
        expr.append(r)
    with open(os.path.join(CDIR, "expr_cases.json"), "w", encoding="utf-8") as fh:
        json.dump({"vars": EXPR_VARS, "now": NOW, "cases": expr}, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    with open(os.path.join(CDIR, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump({"now": NOW, "bos_token": BOS, "eos_token": EOS, "jinja2": jinja2.__version__,
                   "excluded": EXCLUDED}, fh, indent=1)
        fh.write("\n")
    print(f"template x conversation: {counts}; expression cases: {len(expr)}")


if __name__ == "__main__":
    main()
