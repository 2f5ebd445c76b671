"""Constraints and tool calls through the Python module (bindings/python/chat.cpp,
Session.chat), and GBNF acceptance compared with llama.cpp's grammar engine (through
llama-cpp-python, when it is installed) on the same inputs."""
import ctypes
import json
import math

import pytest

# (grammar, accepted, rejected): one case per GBNF construct.
GBNF_CASES = [
    ('root ::= "on" | "off" | "toggle" " " "now"', ["on", "off", "toggle now"], ["o", "onn", "toggle", "togglenow"]),
    ('root ::= "a" ("b" | "c")* "d"', ["ad", "abd", "acbcbd"], ["a", "abcb", "ab d", "bd"]),
    ('root ::= "x"+ "y"?', ["x", "xxx", "xxy"], ["y", "xyy", "xyx"]),
    ('root ::= ("ab")+', ["ab", "abab"], ["a", "aba", "abb"]),
    ("root ::= [0-9]{3}", ["123"], ["12", "1234", "12a"]),
    ("root ::= [0-9]{2,}", ["12", "12345678"], ["1"]),
    ('root ::= [0-9]{1,3} ("," [0-9]{0,2}){0,2}', ["1", "123", "1,", "1,2,34"], ["1234", "1,234", "1,2,3,4", ","]),
    ("root ::= [a-cx] [^0-9a-z] .", ["a!z", "xA9", "bZé"], ["d!z", "a1z", "aaz", "a!"]),
    ('root ::= "\\x41\\u00e9\\t" [\\]\\[] [\\x30-\\x32]', ["Aé\t]0", "Aé\t[2"], ["Aé\t]3", "Ae\t]0"]),
    ("root ::= item (\",\" item)* # comment\nitem ::= [a-z_]+ | num-ber\nnum-ber ::= [0-9]+",
     ["a", "a,b_c,12"], ["a,", ",a", "a;b"]),
    ('root ::= "(" root ")" | ""', ["()", "((()))"], ["(", "())", ")("]),
    ('root ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" root ")"', ["1", "1+2-3", "(1+2)-3"], ["1+", "(1", "+1"]),
]


@pytest.fixture(scope="module")
def stories(testdata):
    return testdata / "models" / "stories260K.gguf"


@pytest.fixture(scope="module")
def model(genie_module, stories):
    return genie_module.Model(str(stories))


@pytest.mark.parametrize("grammar,accepted,rejected", GBNF_CASES)
def test_gbnf_accepts_and_rejects(genie_module, model, grammar, accepted, rejected):
    c = genie_module.Constraint.grammar(model, grammar)
    for text in accepted:
        assert c.accepts(text), text
    for text in rejected:
        assert not c.accepts(text), text


class LlamaGrammarChecker:
    """Feeds a string byte by byte (SentencePiece byte tokens <0xXX> of stories260K) through
    llama.cpp's grammar sampler; accepted when every byte is allowed and then EOS is."""

    def __init__(self, llama_cpp, model_path):
        self.llama_cpp = llama_cpp
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), params)
        assert self.model, "llama.cpp could not load the vocabulary"
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.eos = llama_cpp.llama_vocab_eos(self.vocab)
        self.byte_token = {}
        for t in range(self.n_vocab):
            text = llama_cpp.llama_vocab_get_text(self.vocab, t)
            if text and text.startswith(b"<0x") and text.endswith(b">") and len(text) == 6:
                self.byte_token[int(text[3:5], 16)] = t
        assert len(self.byte_token) == 256

    def allowed(self, sampler, token):
        lc = self.llama_cpp
        data = (lc.llama_token_data * 1)(lc.llama_token_data(token, 0.0, 0.0))
        arr = lc.llama_token_data_array(data, 1, -1, False)
        lc.llama_sampler_apply(sampler, ctypes.byref(arr))
        return not math.isinf(data[0].logit)

    def accepts(self, grammar, text):
        lc = self.llama_cpp
        sampler = lc.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")
        assert sampler, "llama.cpp did not parse the grammar"
        try:
            for byte in text.encode():
                token = self.byte_token[byte]
                if not self.allowed(sampler, token):
                    return False
                lc.llama_sampler_accept(sampler, token)
            return self.allowed(sampler, self.eos)
        finally:
            lc.llama_sampler_free(sampler)


def test_gbnf_agrees_with_llama_cpp(genie_module, model, stories):
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: no reference grammar engine")
    checker = LlamaGrammarChecker(llama_cpp, stories)
    for grammar, accepted, rejected in GBNF_CASES:
        c = genie_module.Constraint.grammar(model, grammar)
        for text in accepted + rejected:
            reference = checker.accepts(grammar, text)
            assert reference == (text in accepted), ("llama.cpp disagrees with the expectation", grammar, text)
            assert c.accepts(text) == reference, (grammar, text)


def test_json_schema_constraint_and_generate(genie_module, model):
    schema = {"type": "object", "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 100},
                                               "room": {"type": "string", "pattern": "^[a-z]{1,8}$"}},
              "required": ["level", "room"], "additionalProperties": False}
    c = genie_module.Constraint.json_schema(model, schema, max_whitespace=0)
    assert c.kind == "json_schema"
    assert c.accepts('{"level":40,"room":"hall"}')
    assert not c.accepts('{"level":140,"room":"hall"}')
    assert not c.accepts('{"level": 40,"room":"hall"}')  # max_whitespace=0
    session = genie_module.Session(model, context_length=256, threads=2)
    r = session.generate("Once upon a time", max_tokens=64, temperature=1.0, seed=3, constraint=c)
    if r.finish_reason == "stop":
        assert genie_module.json_matches_schema(schema, r.text)
    else:
        assert c.accepts_prefix(r.text)
    with pytest.raises(genie_module.InvalidArgumentError, match=r"#/properties/x/not"):
        genie_module.Constraint.json_schema(model, {"properties": {"x": {"not": {}}}})
    g = genie_module.Constraint.grammar(model, 'root ::= ("yes" | "no") "!"')
    assert session.generate("Once", max_tokens=8, constraint=g).text in ("yes!", "no!")
    with pytest.raises(genie_module.InvalidArgumentError, match="line 1"):
        genie_module.Constraint.grammar(model, "root := x")


TOOLS = [{"type": "function", "function": {"name": "set_light", "parameters": {
    "type": "object", "properties": {"room": {"type": "string", "maxLength": 8},
                                     "brightness": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["room"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"],
        "additionalProperties": False}}}]


def test_chat_forced_tool_calls_and_tool_messages(genie_module, model):
    session = genie_module.Session(model, context_length=512, threads=2)
    msgs = [{"role": "user", "content": "Turn on the kitchen lights at 40 percent."}]
    r = session.chat(msgs, tools=TOOLS, tool_choice="required", max_tokens=96, temperature=0.8, seed=1)
    if r["finish_reason"] == "tool_calls":
        assert r["tool_calls"] and not r["rejected_tool_calls"]
        for call in r["tool_calls"]:
            assert call["name"] in ("set_light", "get_weather") and call["id"]
            schema = next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == call["name"])
            assert genie_module.json_matches_schema(schema, call["arguments"])
    else:
        assert r["finish_reason"] == "length"
    named = session.chat(msgs, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}},
                         max_tokens=200)
    assert named["finish_reason"] == "tool_calls"
    assert [c["name"] for c in named["tool_calls"]] == ["get_weather"]
    call = named["tool_calls"][0]
    # The tool's result goes back into the conversation.
    follow = msgs + [{"role": "assistant", "content": None,
                      "tool_calls": [{"id": call["id"], "type": "function",
                                      "function": {"name": call["name"], "arguments": call["arguments"]}}]},
                     {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": "sunny"}]
    again = session.chat(follow, tools=TOOLS, max_tokens=8)
    assert again["finish_reason"] in ("stop", "length", "tool_calls")
    with pytest.raises(genie_module.InvalidArgumentError, match="not among the tools"):
        session.chat(msgs, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "joke"}})


def test_tool_helpers(genie_module):
    schema = genie_module.tool_call_schema(TOOLS)
    assert genie_module.json_matches_schema(schema, '{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    assert not genie_module.json_matches_schema(schema, '{"name": "joke", "arguments": {}}')
    assert not genie_module.json_matches_schema(schema, '{"name": "get_weather", "arguments": {}}')
    parallel = genie_module.tool_call_schema(TOOLS, parallel=True)
    assert genie_module.json_matches_schema(parallel, '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]')
