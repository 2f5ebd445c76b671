#!/usr/bin/env python3
"""Generates test/chat/manifest.json and test/chat/expected/*.txt: chat-template cases
rendered by Python jinja2 exactly the way Hugging Face's apply_chat_template renders them
(transformers' utils/chat_template_utils.py): ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True and the loopcontrols extension; HF's tojson
(json.dumps(ensure_ascii=False, ...)); raise_exception; strftime_now (fixed here to
2024-07-26 12:00 so that outputs are reproducible). Variables passed: messages, tools
(None when absent), documents=None, add_generation_prompt, then the other inputs.

The C++ tests (test/unit/test_chat_template.cpp) only read the generated files, so CI needs
no jinja2. Regenerate after editing CASES:  python3 test/chat/make_expected.py
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata", "templates"))
FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)


class GenerationTag(jinja2.ext.Extension):
    """HF's AssistantTracker: {% generation %}...{% endgeneration %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(template_text, inputs):
    kwargs = dict(inputs)
    messages = kwargs.pop("messages")
    tools = kwargs.pop("tools", None)
    add_generation_prompt = kwargs.pop("add_generation_prompt", False)
    return make_env().from_string(template_text).render(
        messages=messages, tools=tools, documents=None, add_generation_prompt=add_generation_prompt, **kwargs)


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
LIGHT_TOOL = {"type": "function", "function": {
    "name": "set_light", "description": "Turn a light on or off.",
    "parameters": {"type": "object", "properties": {
        "room": {"type": "string"}, "on": {"type": "boolean"}, "brightness": {"type": "number", "minimum": 0.0, "maximum": 1.5}},
        "required": ["room", "on"]}}}
TOOLS = [WEATHER_TOOL, LIGHT_TOOL]

USER = {"role": "user", "content": "What's the weather in Zürich?"}
CALL = {"role": "assistant", "content": "", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}
CALL_STR = {"role": "assistant", "content": "Let me check.", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]}
RESULT = {"role": "tool", "content": "{\"temperature\": 21.5, \"sky\": \"sunny\"}"}
ANSWER = {"role": "assistant", "content": "It is 21.5 °C and sunny in Zürich."}

Q3 = "Qwen-Qwen3-0.6B.jinja"
Q25 = "Qwen-Qwen2.5-7B-Instruct.jinja"
QWQ = "Qwen-QwQ-32B.jinja"
L31 = "meta-llama-Llama-3.1-8B-Instruct.jinja"
L32 = "meta-llama-Llama-3.2-3B-Instruct.jinja"
R1 = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
SMOL = "SmolLM2-Instruct.jinja"
BOS = "<|begin_of_text|>"

# name -> (template file or None, inline template or None, inputs)
CASES = {}


def file_case(name, template_file, **inputs):
    CASES[name] = {"template_file": template_file, "inputs": inputs}


def inline_case(name, template, **inputs):
    inputs.setdefault("messages", [])
    CASES[name] = {"template": template, "inputs": inputs}


# ---- real templates: tools, system messages, reasoning, tool role, enable_thinking ----------
file_case("qwen3_tools_user", Q3, messages=[USER], tools=TOOLS, add_generation_prompt=True)
file_case("qwen3_tools_system_user", Q3, messages=[{"role": "system", "content": "You control a smart home."}, USER],
          tools=TOOLS, add_generation_prompt=True)
file_case("qwen3_tool_flow", Q3, messages=[USER, dict(CALL, reasoning_content="The user wants the weather."), RESULT,
                                           {"role": "tool", "content": "{\"humidity\": 40}"}, ANSWER,
                                           {"role": "user", "content": "And tomorrow?"}],
          tools=TOOLS, add_generation_prompt=True)
file_case("qwen3_tool_call_string_arguments", Q3, messages=[USER, CALL_STR, RESULT], tools=TOOLS, add_generation_prompt=True)
file_case("qwen3_several_system_messages", Q3, messages=[
    {"role": "system", "content": "First system."}, {"role": "user", "content": "Hi"},
    {"role": "system", "content": "Second system."}, {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Bye"}], add_generation_prompt=True)
file_case("qwen3_enable_thinking_false_history", Q3, messages=[
    {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}, {"role": "user", "content": "3+3?"}],
          add_generation_prompt=True, enable_thinking=False)
file_case("qwen3_enable_thinking_true", Q3, messages=[{"role": "user", "content": "Hi"}], add_generation_prompt=True,
          enable_thinking=True)
file_case("qwen3_reasoning_in_history", Q3, messages=[
    {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "add them"},
    {"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "6", "reasoning_content": "\nadd again\n"}])
file_case("qwen3_tool_response_as_user_text", Q3, messages=[
    {"role": "user", "content": "Weather?"}, CALL,
    {"role": "user", "content": "<tool_response>\n{\"t\": 1}\n</tool_response>"}], tools=TOOLS, add_generation_prompt=True)
file_case("qwen3_unicode_and_specials", Q3, messages=[
    {"role": "user", "content": "Grüße 👋 — \"quotes\" and 'single' \\ backslash\ttab"}], add_generation_prompt=True)
file_case("qwen25_tools_user", Q25, messages=[USER], tools=TOOLS, add_generation_prompt=True)
file_case("qwen25_tool_flow", Q25, messages=[{"role": "system", "content": "Be terse."}, USER, CALL, RESULT, ANSWER],
          tools=TOOLS, add_generation_prompt=False)
file_case("qwq_tool_flow_with_think", QWQ, messages=[
    USER, dict(CALL, content="<think>\nneed weather\n</think>\n\nChecking."), RESULT,
    {"role": "assistant", "content": "<think>\nfine\n</think>\n\nSunny."}, {"role": "user", "content": "Thanks"}],
          tools=TOOLS, add_generation_prompt=True)
file_case("llama31_tools_in_user_message", L31, messages=[{"role": "system", "content": "  Be helpful.  "}, USER],
          tools=TOOLS, add_generation_prompt=True, bos_token=BOS)
file_case("llama31_tool_call_and_result", L31, messages=[
    USER, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]},
    {"role": "tool", "content": {"temperature": 21.5, "sky": "sunny"}}, ANSWER], tools=TOOLS, add_generation_prompt=True,
          bos_token=BOS)
file_case("llama31_builtin_tools", L31, messages=[
    {"role": "user", "content": "Search the news"},
    {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "brave_search", "arguments": {"query": "news today"}}}]},
    {"role": "ipython", "content": "no results"}], builtin_tools=["brave_search", "wolfram_alpha", "code_interpreter"],
          tools=TOOLS, add_generation_prompt=True, bos_token=BOS)
file_case("llama31_tools_in_system", L31, messages=[USER], tools=TOOLS, tools_in_user_message=False,
          add_generation_prompt=True, bos_token=BOS)
file_case("llama31_custom_date", L31, messages=[USER], date_string="01 Jan 2025", add_generation_prompt=True, bos_token=BOS)
file_case("llama32_tools_strftime", L32, messages=[{"role": "system", "content": "Sys"}, USER], tools=[WEATHER_TOOL],
          add_generation_prompt=True, bos_token=BOS)
file_case("deepseek_r1_tool_calls", R1, messages=[
    {"role": "system", "content": "You are helpful."}, USER,
    {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}},
        {"type": "function", "function": {"name": "set_light", "arguments": "{\"room\": \"kitchen\", \"on\": true}"}}]},
    RESULT, {"role": "tool", "content": "ok"}, ANSWER, {"role": "user", "content": "Thanks"}],
          add_generation_prompt=True, bos_token="<｜begin▁of▁sentence｜>")
file_case("deepseek_r1_think_history", R1, messages=[
    {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>\nsum\n</think>\n\n4"},
    {"role": "user", "content": "3+3?"}], add_generation_prompt=True, bos_token="<｜begin▁of▁sentence｜>")
file_case("smollm2_several_system", SMOL, messages=[
    {"role": "system", "content": "S1"}, {"role": "user", "content": "U"}, {"role": "system", "content": "S2"}],
          add_generation_prompt=True)

# ---- the Jinja subset, feature by feature --------------------------------------------------
inline_case("loop_variables", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
            "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}|{{ loop.nextitem }}"
            "{{ loop.cycle('odd', 'even') }};{% endfor %}")
inline_case("loop_else_filter_controls", "{% for x in [] %}x{% else %}empty{% endfor %}|"
            "{% for x in range(10) if x is odd %}{% if x > 7 %}{% break %}{% endif %}{% if x == 3 %}{% continue %}{% endif %}"
            "{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}")
inline_case("loop_recursive", "{% for item in tree recursive %}[{{ loop.depth }}{{ item.name }}"
            "{% if item.children %}{{ loop(item.children) }}{% endif %}]{% endfor %}",
            tree=[{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}])
inline_case("loop_unpacking_and_dicts", "{% for k, v in {'x': 1, 'y': [2, 3]}.items() %}{{ k }}={{ v }};{% endfor %}"
            "{% for k in {'p': 1, 'q': 2} %}{{ k }}{% endfor %}{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"
            "{% for c in 'héllo' %}{{ c }}.{% endfor %}")
inline_case("scoping_and_namespace", "{% set x = 'outer' %}{% for i in [1, 2] %}{% set x = 'inner' ~ i %}{{ x }} {% endfor %}"
            "{{ x }} {% set ns = namespace(count=0, items=[]) %}{% for i in range(4) %}{% set ns.count = ns.count + i %}"
            "{% set ns.items = ns.items + [i * i] %}{% endfor %}{{ ns.count }} {{ ns.items }}"
            "{% if true %}{% set leaked = 'yes' %}{% endif %} {{ leaked }}")
inline_case("macros", "{% macro greet(name, greeting='Hello', punct='!') -%}{{ greeting }}, {{ name }}{{ punct }}"
            "{%- if varargs %} {{ varargs }}{% endif %}{% if kwargs %} {{ kwargs }}{% endif %}{%- endmacro %}"
            "{{ greet('Ann') }}|{{ greet('Bob', punct='?') }}|{{ greet('Cy', 'Hi', '.', 1, 2) }}|{{ greet('Di', extra=3) }}"
            "{% macro wrap(tag) %}<{{ tag }}>{{ caller('inner') }}</{{ tag }}>{% endmacro %}"
            "|{% call(x) wrap('b') %}[{{ x }}]{% endcall %}")
inline_case("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1) | int) }}{% endif %}{% endmacro %}"
            "{{ fact(10) }}")
inline_case("set_block_filter_block", "{% set body %}  Some Text  {% endset %}[{{ body }}]{% set up | upper | trim %} shout {% endset %}"
            "[{{ up }}]{% filter upper %}quiet {{ 'words' }}{% endfilter %}")
inline_case("with_block", "{% with a = 1, b = 'two' %}{{ a }}{{ b }}{% set c = 3 %}{{ c }}{% endwith %}[{{ a }}{{ c }}]")
inline_case("filters_strings", "{{ '  pad  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'hello world' | title }}|"
            "{{ 'hELLO wORLD' | capitalize }}|{{ 'MiXeD' | lower }}{{ 'MiXeD' | upper }}|{{ 'a-b c(d' | title }}|"
            "{{ 'aaa' | replace('a', 'b', 2) }}|{{ 'abc' | replace('', '-') }}|{{ 'one two  three' | wordcount }}|"
            "{{ 'abc' | reverse }}|{{ 'x' | center(7) }}.|{{ '<a href=\"x\">&\\'</a>' | e }}|{{ 'text' | length }}|{{ 'Zürich' | count }}")
inline_case("filters_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}")
inline_case("filters_numbers", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ '0x1A' | int(0, 16) }} "
            "{{ 3.9 | int }} {{ '2.5' | float }} {{ 'y' | float }} {{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} "
            "{{ 3.14159 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(0, 'floor') }} {{ 7 | round }} "
            "{{ [1, 2, 3.5] | sum }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ '%s-%05.1f-%d%%' | format('a', 3.14159, 7) }}")
inline_case("filters_sequences", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} "
            "{{ [3, 1, 2] | sort(reverse=true) }} {{ ['a', 'A', 'b', 'a'] | unique | list }} {{ [1, 2, 3] | reverse | list }} "
            "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | list }} {{ [1, 2, 3, 4, 5] | batch(2) | list }} "
            "{{ [1, 2, 3] | batch(2, 0) | list }} {{ {'b': 2, 'a': 1} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) }} "
            "{{ [1, 2] | join }} {{ ['x', 'y'] | join(', ') }} {{ {'a': 1} | items | list }} {{ users | map(attribute='name') | join('/') }} "
            "{{ users | map(attribute='age', default=0) | list }} {{ ['a', 'b'] | map('upper') | list }} {{ users | sort(attribute='name') | map(attribute='name') | list }}",
            users=[{"name": "zed", "age": 30}, {"name": "amy"}])
inline_case("filters_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} "
            "{{ msgs | rejectattr('role', 'equalto', 'user') | list | length }} {{ msgs | selectattr('tool_calls', 'defined') | list | length }} "
            "{{ msgs | selectattr('tool_calls') | list | length }} {{ [1, 2, 3, 4] | select('even') | list }} "
            "{{ [1, 2, 3, 4] | reject('odd') | list }} {{ [1, 5, 10] | select('gt', 3) | list }} {{ [0, '', none, 'x'] | select | list }} "
            "{{ ['code_interpreter', 'brave'] | reject('equalto', 'code_interpreter') | join(', ') }} "
            "{{ msgs | selectattr('role', 'in', ['system', 'tool']) | list | length }}",
            msgs=[{"role": "system", "content": "s"}, {"role": "user", "content": "u1"},
                  {"role": "assistant", "content": "", "tool_calls": []}, {"role": "user", "content": "u2"}])
inline_case("filters_default", "{{ missing | default('dflt') }} {{ missing | d('d2') }} {{ '' | default('empty', true) }} "
            "{{ '' | default('empty') }}| {{ none | default('n') }} {{ false | default('f', boolean=true) }}")
inline_case("tojson_variants", "{{ data | tojson }}\n{{ data | tojson(indent=2) }}\n{{ data | tojson(indent=2, sort_keys=true) }}\n"
            "{{ data | tojson(separators=(',', ':')) }}\n{{ data | tojson(ensure_ascii=true) }}\n{{ [] | tojson(indent=4) }}{{ {} | tojson(indent=4) }}\n"
            "{{ 'a\"b\\\\c\\n\\u0001' | tojson }} {{ none | tojson }} {{ 1.0 | tojson }} {{ 1e20 | tojson }} {{ (1, 2) | tojson }}",
            data={"name": "Zürich 👋", "n": 3, "f": 2.5, "big": 1e16, "small": 1e-5, "t": True, "z": None,
                  "list": [1, "two", [3]], "nested": {"b": 1, "a": {}}, "empty": []})
inline_case("tests", "{% for v in [none, true, 1, 1.5, 'x', [1], {'a': 1}] %}"
            "{{ v is none }}{{ v is boolean }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}"
            "{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}{{ v is true }}{{ v is false }};{% endfor %}"
            "{{ x is defined }}{{ x is undefined }}{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 2 is in [1, 2] }}"
            "{{ 'a' is equalto 'a' }}{{ 1 is eq 2 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 3 is gt 2 }}{{ 3 is lessthan 2 }}"
            "{{ none is sameas none }}{{ x is not defined }}{{ range is callable }}")
inline_case("operators", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
            "{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 'ab' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] * 3 }} {{ [1] + [2] }} "
            "{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' in 'cat' }} {{ 'z' not in ['a'] }} "
            "{{ 'k' in {'k': 1} }} {{ 0 or 'x' }} {{ 'y' and 'z' }} {{ [] or none }} {{ not 0 }} {{ 'yes' if 1 else 'no' }} "
            "[{{ 'shown' if false }}] {{ 1 if none is none else 2 }} {{ 0.1 + 0.2 }} {{ 10 * 0.1 }} {{ 1 - 1.5 }}")
inline_case("printing_python_values", "{{ none }} {{ true }} {{ false }} {{ [1, 'a', none, true, 1.5, [\"q'\"]] }} "
            "{{ {'k': 'v', 'n': none} }} {{ (1,) }} {{ (1, 'b') }} {{ 1e16 }} {{ 1e-5 }} {{ 123456789.0 }} {{ 0.0001 }} "
            "{{ 1.5e300 * 1e10 }} {{ -0.0 }} {{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'tab\\t', 'é'] }} {{ missing }}|{{ namespace(a=1) }}")
inline_case("string_methods", "{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} "
            "{{ '--x--'.strip('-') }} {{ '  x '.lstrip() }}|{{ ' x  '.rstrip() }}| {{ 'hello'.startswith('he') }} "
            "{{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('lo') }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} "
            "{{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'hello'.replace('l', 'L') }} {{ 'hello world'.title() }} "
            "{{ 'hELLO'.capitalize() }} {{ '{} and {}'.format('a', 'b') }} {{ '{0}{name}'.format(1, name='n') }} "
            "{{ '-'.join(['x', 'y', 'z']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'MiXed'.upper() }}{{ 'MiXed'.lower() }} "
            "{{ '42'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'Zürich'.find('r') }} {{ 'x'.zfill(3) }}")
inline_case("slicing", "{{ 'abcdef'[1:3] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[::2] }} {{ 'héllo'[1:3] }} "
            "{{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][:-1] }} {{ [1, 2, 3, 4][::-2] }} {{ [1, 2, 3][5:] }} {{ 'abc'[0] }} "
            "{{ 'abc'[-1] }} {{ [1, 2][-1] }} {{ [1, 2][5] }}| {{ messages[::-1] | map(attribute='role') | list }}",
            messages=[{"role": "a"}, {"role": "b"}])
inline_case("dict_access", "{{ d.a }} {{ d['a'] }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} "
            "{{ d.values() | list }} {{ d.items() | list }} {{ d.missing }}|{{ d['missing'] }}| {{ 'a' in d }} {{ d | length }} "
            "{{ d.nested.x }} {{ d['nested']['x'] }} {{ d.list.0 }} {{ d.list[1] }} {{ dict(p=1, q=2) }}",
            d={"a": 1, "nested": {"x": "y"}, "list": [10, 20]})
inline_case("undefined_semantics", "[{{ nope }}] [{{ nope | length }}] [{% for x in nope %}x{% endfor %}] [{{ nope is defined }}] "
            "[{{ d.nope is defined }}] [{{ d.nope | default('dd') }}] [{{ nope ~ 'x' }}] [{{ nope == nope }}] [{{ nope | list }}] "
            "[{{ d.nope is none }}] [{{ not nope }}] [{{ nope | string }}] [{{ nope | trim }}] [{{ nope | join(',') }}]", d={})
inline_case("literals_and_escapes", "{{ 'tab\\there' }}|{{ \"dq 'x'\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'a' 'b' }}|{{ 1_000 }}|"
            "{{ 0x1f }}|{{ 0o17 }}|{{ 0b101 }}|{{ 1.5e3 }}|{{ True }}{{ False }}{{ None }}|{{ [1, 2,] }}|{{ {'a': 1,} }}|"
            "{{ 'unknown \\q escape' }}")
inline_case("whitespace_control",
            "Start\n  {% if true %}\n    kept line\n  {% endif %}\n{%- if true -%}  stripped  {%- endif %}\n"
            "{# comment #}\n  {#- comment two -#}  after\n{%+ if true %}plus keeps indent{% endif +%}\nnext\n"
            "  {{ 'var keeps indent' }}\n{% raw %}{{ not parsed }} {% if %}{% endraw %}\n"
            "{% for i in [1, 2] %}\n  item {{ i }}\n{% endfor %}\nEnd\n")
inline_case("whitespace_crlf_and_trailing", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n")
inline_case("whitespace_minus_everywhere", "x  \n\n  {{- ' y ' -}}  \n\n  z {%- set a = 1 -%}\n\n w {#- c -#} v\n")
inline_case("conversation_manual", "{%- for m in messages -%}\n  {%- if m.role == 'system' -%}\n    <<SYS>>{{ m.content }}<</SYS>>\n"
            "  {%- elif m.role == 'user' %}\n[INST] {{ m.content | trim }} [/INST]\n  {%- else %}\n {{ m.content }}</s>\n"
            "  {%- endif %}\n{%- endfor %}\n{% if add_generation_prompt %}ASSISTANT:{% endif %}",
            messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": " hi "},
                      {"role": "assistant", "content": "hello"}, {"role": "user", "content": "q"}], add_generation_prompt=True)
inline_case("strftime_and_tokens", "{{ bos_token }}{{ strftime_now('%Y-%m-%d %d %b %Y %A') }}{{ eos_token }}|{{ add_generation_prompt }}|"
            "{{ tools }}|{{ documents }}", bos_token="<s>", eos_token="</s>")
inline_case("loop_changed_cycler_joiner", "{% for x in [1, 1, 2, 2, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}|"
            "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}|"
            "{% set j = joiner('+') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}")
inline_case("nested_loops_and_outer_loop", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in ['x', 'y'] %}"
            "{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %}")
inline_case("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}"
            "{% else %}{{ m.content }}{% endif %}|{% endfor %}",
            messages=[{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}])
inline_case("content_parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
            "{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% else %}<{{ p.type }}>{% endif %}{% endfor %}"
            "{% endif %}\n{% endfor %}",
            messages=[{"role": "user", "content": [{"type": "text", "text": "look: "}, {"type": "image"}]},
                      {"role": "assistant", "content": "nice"}])


def main():
    out_dir = os.path.join(HERE, "expected")
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".txt"):
            os.remove(os.path.join(out_dir, old))
    manifest = {"generator": f"python jinja2 {jinja2.__version__}, ImmutableSandboxedEnvironment(trim_blocks=True, "
                             "lstrip_blocks=True, extensions=[loopcontrols]), HF tojson/raise_exception, "
                             "strftime_now fixed to 2024-07-26 12:00",
                "cases": {}}
    for name, case in CASES.items():
        if "template_file" in case:
            with open(os.path.join(TEMPLATES, case["template_file"]), encoding="utf-8") as f:
                template_text = f.read()
        else:
            template_text = case["template"]
        text = render(template_text, case["inputs"])
        with open(os.path.join(out_dir, name + ".txt"), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        manifest["cases"][name] = case
    with open(os.path.join(HERE, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
