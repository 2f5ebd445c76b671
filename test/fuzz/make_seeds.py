#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (test/fuzz/corpus/<name>/seed-*).

Run from the repository root: python3 test/fuzz/make_seeds.py. The seeds are small
hand-made inputs in each target's input format (see the comment at the top of each
fuzz_*.cpp); the chat-template seeds embed real templates from ../shared/testdata/templates
(from llama.cpp's test data, MIT). Crash inputs found by scripts/fuzz are added beside them
as crash-* files and are never regenerated.
"""
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "fuzz" / "corpus"
TEMPLATES = ROOT.parent / "shared" / "testdata" / "templates"
SEP = b"\xff"


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def ids(*values):
    return b"".join(struct.pack(">H", v) for v in values)


# ---- tokenizer: mode byte (vocab = mode % n, 0x10 parse_special, 0x20 add_special, 0x40
# render_special), the text up to 0xFF, then 2-byte token ids for the streaming detokenizer.
texts = {
    "ascii": b"Hello world! It's 2024, isn't it?  Spaces   and\ttabs\nnew lines\r\n",
    "unicode": "Grüße, 你好, Привет, مرحبا, 🌍🚀 e\u0301 ﬁ".encode(),
    "code": b"def f(x):\n    return x**2  # comment\n\n\nint main() { return 0; }",
    "digits": b"1234567890 3.14159 1,000,000 0x1F",
    "nul": b"a\x00b\x00\x00c",
    "invalid-utf8": b"abc\xc3(\xe2\x82 \xf0\x9f\x98 \x80\xbf \xc0\xaf \xed\xa0\x80 end\xe2",
}
for i, (name, text) in enumerate(texts.items()):
    for vocab in range(3):
        write("tokenizer", f"{name}-v{vocab}", bytes([vocab]) + text + SEP + ids(1, 2, 300, 29871, 65535, 13))
write("tokenizer", "special", bytes([0x10]) + b"<|im_start|>user\nhi<|im_end|><s></s><|endoftext|>" + SEP)
write("tokenizer", "special-spm", bytes([0x31]) + b"<s> [INST] hi [/INST]</s>" + SEP + ids(0, 1, 2))
write("tokenizer", "byte-tokens", bytes([0x41]) + b"" + SEP + ids(3, 200, 230, 140, 259, 260))

# ---- chat_template: mode byte, template, messages JSON, tools JSON, extra JSON, then
# role/content pairs (content "\x01" = None).
conversation = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "<think>easy</think>4", "reasoning_content": "easy"},
    {"role": "user", "content": "And 3+3? Ünïcödé 🙂"},
]
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
tool_turns = conversation[:2] + [
    {"role": "assistant", "content": None,
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "sunny", "tool_call_id": "1"},
]
pairs = b"user" + SEP + b"hi" + SEP + b"assistant" + SEP + b"\x01" + SEP + b"user" + SEP + b"bad \xc3 utf8"
for path in sorted(TEMPLATES.glob("*.jinja")):
    if path.name.startswith(("Qwen-Qwen3", "SmolLM2", "meta-llama-Llama-3.1")):
        src = path.read_bytes()
        write("chat_template", path.stem, bytes([0x3B]) + src + SEP + json.dumps(conversation).encode() + SEP
              + json.dumps(tools).encode() + SEP + b'{"date_string": "26 Jul 2024"}' + SEP + pairs)
        write("chat_template", path.stem + "-tools", bytes([0x0F]) + src + SEP + json.dumps(tool_turns).encode()
              + SEP + json.dumps(tools).encode() + SEP + b"{}" + SEP)
small = {
    "loops": b"{% for m in messages %}{{ loop.index }}:{{ m.role|upper }}={{ m.content|trim }}{% if not loop.last %},{% endif %}{% endfor %}",
    "macro": b"{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n-1) }}{% endif %}{% endmacro %}{{ r(5) }}",
    "namespace": b"{% set ns = namespace(x=0) %}{% for i in range(10) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
    "filters": b"{{ messages|tojson }}{{ 'a,b'|split(',')|join('-') }}{{ [3,1,2]|sort|list }}{{ 'x'*3 }}{{ 7//2 }}{{ 7%3 }}",
    "raise": b"{% if messages|length > 1 %}{{ raise_exception('too many') }}{% endif %}",
    "slices": b"{{ messages[-1].content[::-1] }}{{ messages[1:] | map(attribute='role') | list }}",
    "strftime": b"{{ strftime_now('%Y-%m-%d') }}{{ bos_token ~ eos_token }}",
    "bad-syntax": b"{% for x in %}{{ }",
    "big-range": b"{% for i in range(100000) %}{{ i }}{% endfor %}",
}
for name, src in small.items():
    write("chat_template", name, bytes([0x21]) + src + SEP + json.dumps(conversation).encode() + SEP + SEP + SEP)

# ---- json_schema: mode byte (bit 7: any value/object instead of the schema), the schema
# up to 0xFF, then matcher operations: op < 0xC0 text chunk of (op & 31) bytes; 0xC0-0xDF
# one token (1-2 bytes of id); 0xE0-0xEF one masked argmax step; 0xFF reset; else copy.
def chunk(text):
    out = b""
    for i in range(0, len(text), 31):
        part = text[i:i + 31]
        out += bytes([len(part)]) + bytes([len(part)]) + part
    return out


schemas = {
    "person": ({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                                 "age": {"type": "integer"},
                                                 "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
                "required": ["name", "age"], "additionalProperties": False},
               b'{"name": "Ann", "age": 42, "tags": ["a", "b"]}'),
    "enum": ({"enum": ["red", "green", 3, None, True]}, b'"green"'),
    "const": ({"const": {"a": [1, 2, {"b": None}]}}, b'{"a":[1,2,{"b":null}]}'),
    "types": ({"type": ["number", "boolean", "null"]}, b"-12.5e+3"),
    "nested": ({"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": {"type": "number"}}},
               b'[{"x": 1, "y": 2.5}, {}]'),
    "strings": ({"type": "string", "minLength": 2, "maxLength": 8}, b'"\\u00e9\\n\\ud83d\\ude00ok"'),
    "unsupported": ({"type": "integer", "not": {"const": 3}}, b"5"),
    "bounds": ({"type": "object", "properties": {"i": {"type": "integer", "minimum": -5, "exclusiveMaximum": 120},
                                                 "x": {"type": "number", "minimum": 0.5, "maximum": 2}},
                "required": ["i"]}, b'{"i": 42, "x": 1.25}'),
    "pattern-format": ({"type": "array", "prefixItems": [{"type": "string", "pattern": "^[a-z]+-\\d{2}$"},
                                                         {"type": "string", "format": "date-time"},
                                                         {"type": "string", "format": "uuid"}], "items": False},
                       b'["ab-12", "2026-12-07T19:30:00Z", "123e4567-e89b-12d3-a456-426614174000"]'),
    "anyof-ref": ({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                                       "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                                      "required": ["v"], "additionalProperties": False}},
                   "anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"},
                             {"allOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["a"]}]}]},
                  b'{"v": 1, "kids": [{"v": 2, "kids": []}]}'),
    "unsatisfiable": ({"type": "array", "minItems": 3, "maxItems": 1}, b"[]"),
}
for name, (schema, value) in schemas.items():
    body = chunk(value) + bytes([0xE0, 0xE1, 0xE2, 0xC0, 0x10, 0xC1, 0x01, 0xF0, 0xFF]) + chunk(value)
    write("json_schema", name, bytes([0x02]) + json.dumps(schema).encode() + SEP + body)
write("json_schema", "any-object-steps", bytes([0x86]) + b"" + SEP + bytes([0xE0 + i % 16 for i in range(64)]))
write("json_schema", "any-value-steps", bytes([0x83]) + b"x" + SEP + bytes([0xE3] * 40))
write("json_schema", "bad-json", bytes([0x00]) + b'{"type": ' + SEP + chunk(b"{}"))

# ---- gbnf: the grammar up to 0xFF, then matcher operations as for json_schema.
grammars = {
    "json": (b'root ::= object\nvalue ::= object | array | string | number | ("true" | "false" | "null") ws\n'
             b'object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws\n'
             b'array ::= "[" ws ( value ("," ws value)* )? "]" ws\n'
             b'string ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\\"" ws\n'
             b'number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n'
             b'ws ::= | " " | "\\n" [ \\t]{0,20}\n', b'{"a": [1, "x"]}'),
    "commands": (b'root ::= cmd (" " cmd){0,3} # comment\ncmd ::= ("on" | "off" | "dim " [0-9]{1,2} "%") | "say \\"" [^"]* "\\""\n',
                 b'on dim 40% say "hi"'),
    "recursion": (b'root ::= "(" root ")" | [a-z\\u00e0-\\u00ff]+\n', "((àb))".encode()),
    "errors": (b'root ::= x\nx ::= x "a"\n', b"a"),
}
for name, (grammar, text) in grammars.items():
    body = chunk(text) + bytes([0xE0, 0xE1, 0xE2, 0xC0, 0x10, 0xC1, 0x01, 0xF0, 0xFF]) + chunk(text)
    write("gbnf", name, grammar + SEP + body)

# ---- capi_chat: mode byte, message count, role/content pairs, schema, tools, stop count,
# stop strings, then per-field picks (see fuzz_capi_chat.cpp).
def capi(mode, messages, schema=b"", tools=b"", stops=(), max_tokens=5, response_format=0, think=0,
         sampler=bytes([100, 40, 190, 10, 0, 0, 0, 7, 200, 64, 70, 0, 0, 1]), budget=7, picks=None):
    out = bytes([mode, len(messages)])
    for role, content in messages:
        out += role + SEP + content + SEP
    out += schema + SEP + tools + SEP + bytes([len(stops)])
    for s in stops:
        out += s + SEP
    for i in range(len(messages)):
        out += bytes([picks[i] if picks else 3, 1])  # content pick (3 = all bytes), role not NULL
    out += bytes([1] * len(stops))                  # stop strings not NULL
    if mode & 0x80:
        out += bytes([0])                           # the request's version
    out += bytes([max_tokens + 1])
    if mode & 2:
        out += sampler
    return out + bytes([response_format, 3, think, 3, budget])


chat = [(b"system", b"You are a storyteller."), (b"user", b"Once upon a time")]
write("capi_chat", "plain", capi(0x00, chat))
write("capi_chat", "schema", capi(0x10, chat, json.dumps(schemas["person"][0]).encode(), response_format=2))
write("capi_chat", "json-object", capi(0x12, chat, response_format=1, think=1))
write("capi_chat", "stops-tools", capi(0x18, chat, b"", json.dumps(tools).encode(), [b"the", b""], think=2))
write("capi_chat", "invalid-utf8-nul", capi(0x00, [(b"user", b"bad \xc3\x28 \x00 nul \xf0\x9f")]))
write("capi_chat", "null-fields", capi(0x05, [(b"user", b"hi")], b"{}", picks=[1], response_format=2))
write("capi_chat", "no-messages", capi(0x01, []))
write("capi_chat", "long", capi(0x00, [(b"user", b"The cat sat on the mat. " * 40)]))
write("capi_chat", "bad-version", capi(0x80, chat))
write("capi_chat", "bad-enums", capi(0x02, chat, response_format=3, think=3))
print("seeds written to", CORPUS)
