"""genie-server: the real server on a loopback port with fixture models, driven by the
official `openai` client (streaming and not) and by raw HTTP (exact SSE framing, error
bodies, 401, 503 while loading, the assistant client's parsing rules, client disconnects,
the bounded queue). docs/server.md describes what is checked here."""
import concurrent.futures
import http.client
import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import BIN_DIR, ROOT, TESTDATA

FIXTURE_DIRS = [pathlib.Path(os.environ["GENIE_FIXTURE_DIR"])] if os.environ.get("GENIE_FIXTURE_DIR") else []
FIXTURE_DIRS += [BIN_DIR.parent / "fixtures", ROOT / "build" / "fixtures"]


def fixture_model(name):
    for d in FIXTURE_DIRS:
        if (d / name).exists():
            return d / name
    pytest.skip(f"fixture model {name} not found (run ctest's fixture step or scripts/make-fixtures)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One genie-server process on a free loopback port."""

    def __init__(self, model, *args, env=None, wait=True, api_key=None):
        exe = BIN_DIR / "genie-server"
        if not exe.exists():
            pytest.skip(f"genie-server is not built ({exe} missing)")
        self.port = free_port()
        self.api_key = api_key
        cmd = [str(exe), "-m", str(model), "--port", str(self.port), "--threads", "2", *map(str, args)]
        if api_key:
            cmd += ["--api-key", api_key]
        full_env = dict(os.environ)
        full_env.pop("GENIE_API_KEY", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.stderr.read().decode()
            try:
                status, _, _ = self.request("GET", "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("genie-server did not become ready")

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = {"Content-Type": "application/json"}
            if self.api_key:
                hdrs["Authorization"] = f"Bearer {self.api_key}"
            hdrs.update(headers or {})
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, **kw):
        status, headers, raw = self.request(method, path, body, **kw)
        return status, json.loads(raw)

    def metrics(self):
        status, _, raw = self.request("GET", "/metrics")
        assert status == 200
        values = {}
        for line in raw.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def rss_kib(self):
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def client(self, api_key=None):
        import openai

        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key=api_key or self.api_key or "none",
                             max_retries=0, timeout=120)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def qwen3():
    """Qwen3 tiny (synthetic weights, real Qwen3 vocabulary and chat template), 2 slots of 512 tokens."""
    s = Server(fixture_model("qwen3-tiny-q8_0.gguf"), "-c", 512, "--parallel", 2)
    yield s
    s.stop()
    assert s.proc.returncode == 0  # SIGTERM stops it cleanly


@pytest.fixture(scope="module")
def stories():
    """stories260K (real weights, no chat template: ChatML) with an API key."""
    s = Server(TESTDATA / "models" / "stories260K.gguf", "-c", 256, api_key="sekrit")
    yield s
    s.stop()


HELLO = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]


def sse_events(raw: bytes):
    """Splits an SSE body into events, checking the framing: every event is one
    `data: ...` line followed by a blank line, and nothing else is in the body."""
    text = raw.decode()
    assert text.endswith("\n\n")
    events = text[:-2].split("\n\n")
    for e in events:
        assert e.startswith("data: ") and "\n" not in e, repr(e)
    return [e[len("data: "):] for e in events]


# ---- the openai client ------------------------------------------------------------------


def test_openai_chat_non_stream(qwen3):
    client = qwen3.client()
    r = client.chat.completions.create(model="anything", messages=HELLO, max_tokens=8, temperature=0)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    assert r.model == "anything"  # echoed as llama-server does
    choice = r.choices[0]
    assert choice.index == 0 and choice.finish_reason == "length"
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert r.usage.completion_tokens == 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + 8
    timings = r.model_extra["timings"]
    assert set(timings) == {"cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
                            "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second"}
    assert timings["predicted_n"] == 8 and timings["prompt_n"] + timings["cache_n"] == r.usage.prompt_tokens
    # Greedy: the same request gives the same answer.
    again = client.chat.completions.create(model="anything", messages=HELLO, max_tokens=8, temperature=0)
    assert again.choices[0].message.content == choice.message.content


def test_openai_chat_stream_matches_non_stream(qwen3):
    client = qwen3.client()
    ref = client.chat.completions.create(model="m", messages=HELLO, max_tokens=12, temperature=0)
    chunks = list(client.chat.completions.create(model="m", messages=HELLO, max_tokens=12, temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ref.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["length"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 12
    assert chunks[-1].usage.prompt_tokens == ref.usage.prompt_tokens


def test_openai_models_and_completions(stories):
    client = stories.client()
    models = client.models.list()
    assert [m.id for m in models.data] == ["stories260K.gguf"]
    # Raw prompt, greedy: the same continuation genie-cli run gives (test_cli_run.py).
    r = client.completions.create(model="m", prompt="Once upon a time", max_tokens=20, temperature=0)
    assert r.object == "text_completion"
    assert r.choices[0].text.startswith(", there was a little girl named Lily")
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 20
    streamed = list(client.completions.create(model="m", prompt="Once upon a time", max_tokens=20, temperature=0,
                                              stream=True))
    assert "".join(c.choices[0].text for c in streamed) == r.choices[0].text
    assert streamed[-1].choices[0].finish_reason == "length"


def test_openai_stop_and_seed(stories):
    client = stories.client()
    r = client.completions.create(model="m", prompt="Once upon a time", max_tokens=40, temperature=0, stop=["Lily"])
    assert r.choices[0].text == ", there was a little girl named " and r.choices[0].finish_reason == "stop"
    a = client.chat.completions.create(model="m", messages=HELLO, max_tokens=16, temperature=1.0, seed=123)
    b = client.chat.completions.create(model="m", messages=HELLO, max_tokens=16, temperature=1.0, seed=123)
    assert a.choices[0].message.content == b.choices[0].message.content


def test_openai_tool_calls(qwen3):
    """tool_choice naming a function constrains the answer to a call of it: the OpenAI
    tool_calls shape with finish_reason "tool_calls", streaming and not."""
    client = qwen3.client()
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                       "required": ["city"], "additionalProperties": False}}}]
    choice = {"type": "function", "function": {"name": "get_weather"}}
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    r = client.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice=choice, max_tokens=64,
                                       temperature=0)
    assert r.choices[0].finish_reason == "tool_calls"
    calls = r.choices[0].message.tool_calls
    assert len(calls) == 1 and calls[0].type == "function" and calls[0].id
    assert calls[0].function.name == "get_weather"
    args = json.loads(calls[0].function.arguments)
    assert set(args) == {"city"} and isinstance(args["city"], str)
    chunks = list(client.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice=choice,
                                                 max_tokens=64, temperature=0, stream=True))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert [(d.index, d.function.name, d.function.arguments) for d in deltas] == [
        (0, "get_weather", calls[0].function.arguments)]
    assert not "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)  # no raw call text as content
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    # The conversation continues with the tool's answer (tool role, tool_call_id).
    follow = msgs + [{"role": "assistant", "content": None, "tool_calls": [calls[0].model_dump()]},
                     {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny"}]
    r2 = client.chat.completions.create(model="m", messages=follow, tools=tools, max_tokens=4, temperature=0)
    assert r2.choices[0].finish_reason in ("length", "stop", "tool_calls")


def test_tools_auto_without_a_call_streams_content(qwen3):
    """tools offered, tool_choice auto, the answer is not a call: the content is the same
    streamed and not, and finish_reason is "stop"/"length". An answer that starts with "{"
    (here forced by json_object) may be a call, so it is held and sent in one delta."""
    client = qwen3.client()
    tools = [{"type": "function", "function": {"name": "lights_on", "parameters": {"type": "object"}}}]
    for extra, max_deltas in (({}, None), ({"response_format": {"type": "json_object"}}, 1)):
        kw = dict(model="m", messages=HELLO, tools=tools, max_tokens=24, temperature=0, **extra)
        ref = client.chat.completions.create(**kw)
        if ref.choices[0].finish_reason == "tool_calls":
            continue  # the synthetic model happened to write a call: nothing to compare
        chunks = list(client.chat.completions.create(stream=True, **kw))
        pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        assert "".join(pieces) == ref.choices[0].message.content
        assert chunks[-1].choices[0].finish_reason == ref.choices[0].finish_reason
        if max_deltas:
            assert len(pieces) <= max_deltas


def test_response_format_json_schema(qwen3):
    client = qwen3.client()
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "JSON please"}], max_tokens=60,
                                       temperature=0,
                                       response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}})
    assert r.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(r.choices[0].message.content)["ok"], bool)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "JSON"}], max_tokens=200,
                                       temperature=0, response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    status, body = qwen3.json("POST", "/v1/chat/completions", {
        "messages": HELLO, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object",
                                                                                                 "minProperties": 1}}}})
    assert status == 400 and body["error"]["type"] == "invalid_request_error" and "minProperties" in body["error"]["message"]


def test_grammar_and_forced_tool_errors(qwen3):
    """`grammar` (GBNF, as llama-server) constrains the answer; a bad grammar, a grammar with
    response_format, and a forced tool whose parameters use an unsupported keyword are 400s
    naming the problem (no fallback to "any object")."""
    status, body = qwen3.json("POST", "/v1/chat/completions", {
        "messages": HELLO, "max_tokens": 16, "temperature": 0, "grammar": 'root ::= ("yes" | "no") "!"'})
    assert status == 200, body
    assert body["choices"][0]["message"]["content"] in ("yes!", "no!")
    assert body["choices"][0]["finish_reason"] == "stop"
    status, body = qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "grammar": "root ::= undefined"})
    assert status == 400 and "rule 'undefined' is used but not defined" in body["error"]["message"]
    status, body = qwen3.json("POST", "/v1/chat/completions", {
        "messages": HELLO, "grammar": 'root ::= "a"', "response_format": {"type": "json_object"}})
    assert status == 400
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"not": {"type": "null"}}}}}}]
    status, body = qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "tools": tools,
                                                              "tool_choice": "required"})
    assert status == 400
    assert "tool 'f' parameters: JSON schema: #/properties/x/not: unsupported keyword 'not'" in body["error"]["message"]


def test_think_switches(qwen3):
    """`think` and chat_template_kwargs.enable_thinking reach the template (Qwen3's
    enable_thinking=false adds an empty think block to the prompt)."""
    base = {"messages": HELLO, "max_tokens": 1, "temperature": 0}
    counts = {}
    for name, extra in [("default", {}), ("think_false", {"think": False}),
                        ("kwargs_false", {"chat_template_kwargs": {"enable_thinking": False}})]:
        status, body = qwen3.json("POST", "/v1/chat/completions", {**base, **extra})
        assert status == 200, body
        counts[name] = body["usage"]["prompt_tokens"]
    assert counts["think_false"] == counts["kwargs_false"] > counts["default"]


def test_conversation_id_reuses_the_slot(qwen3):
    """Two slots. Conversation B's second turn goes back to B's slot (its KV cache holds the
    first turn) although the least recently used slot is A's."""
    def turn(conv, msgs):
        status, body = qwen3.json("POST", "/v1/chat/completions", {
            "messages": msgs, "max_tokens": 6, "temperature": 0, "conversation_id": conv})
        assert status == 200, body
        return body

    a_msgs = [{"role": "user", "content": "Conversation A: tell me about the sea"}]
    b_msgs = [{"role": "user", "content": "Conversation B: tell me about mountains and rivers"}]
    turn("conv-a", a_msgs)
    b1 = turn("conv-b", b_msgs)
    b_msgs2 = b_msgs + [{"role": "assistant", "content": b1["choices"][0]["message"]["content"]},
                        {"role": "user", "content": "More please"}]
    b2 = turn("conv-b", b_msgs2)
    cached = b2["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= b1["usage"]["prompt_tokens"] - 1, (cached, b1["usage"])
    assert b2["timings"]["cache_n"] == cached


THINKING_TEMPLATE = ("{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
                     "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}"
                     "{%- endif %}")


def with_chat_template(src: pathlib.Path, dst: pathlib.Path, template: str):
    """Copies a GGUF with its tokenizer.chat_template replaced (header rewritten, tensor
    data moved to the new aligned data start; tensor offsets are relative to it)."""
    import struct

    from gguf_layout import _skip_value

    buf = src.read_bytes()
    n_tensors, n_kv = struct.unpack_from("<QQ", buf, 8)
    pos, alignment, span = 24, 32, None
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, pos)
        key = buf[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, pos)
        value_at = pos + 4
        pos = _skip_value(buf, value_at, vtype)
        if key == "tokenizer.chat_template":
            span = (value_at, pos)
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", buf, value_at)
    for _ in range(n_tensors):
        (nlen,) = struct.unpack_from("<Q", buf, pos)
        pos += 8 + nlen
        (n_dims,) = struct.unpack_from("<I", buf, pos)
        pos += 4 + 8 * n_dims + 4 + 8
    data_start = (pos + alignment - 1) // alignment * alignment
    assert span is not None
    encoded = template.encode()
    header = buf[:span[0]] + struct.pack("<Q", len(encoded)) + encoded + buf[span[1]:pos]
    pad = (-len(header)) % alignment
    dst.write_bytes(header + b"\0" * pad + buf[data_start:])


@pytest.fixture(scope="module")
def thinking(tmp_path_factory):
    """Qwen3 tiny with a template that opens the think block itself (as DeepSeek-R1's does):
    the whole answer of the synthetic model is reasoning."""
    model = tmp_path_factory.mktemp("thinking") / "qwen3-thinking.gguf"
    with_chat_template(fixture_model("qwen3-tiny-q8_0.gguf"), model, THINKING_TEMPLATE)
    s = Server(model, "-c", 256)
    yield s
    s.stop()


def test_reasoning_content(thinking):
    client = thinking.client()
    r = client.chat.completions.create(model="m", messages=HELLO, max_tokens=12, temperature=0)
    msg = r.choices[0].message
    reasoning = msg.model_extra.get("reasoning_content")
    assert reasoning and msg.content == ""
    chunks = list(client.chat.completions.create(model="m", messages=HELLO, max_tokens=12, temperature=0, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    streamed = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert streamed.rstrip() == reasoning
    assert not "".join(d.content or "" for d in deltas)
    # The assistant client's rule reads only content: a reasoning-only answer is empty speech.
    _, _, raw = thinking.request("POST", "/v1/chat/completions",
                                 {"messages": HELLO, "max_tokens": 12, "temperature": 0, "stream": True})
    assert assistant_stream_text(("data: " + e for e in sse_events(raw))) == ""


# ---- raw HTTP: framing and error bodies ---------------------------------------------------


def test_sse_framing_exact(qwen3):
    status, headers, raw = qwen3.request("POST", "/v1/chat/completions", {
        "messages": HELLO, "max_tokens": 5, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}})
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    for c in chunks:
        assert c["object"] == "chat.completion.chunk" and c["id"].startswith("chatcmpl-")
        assert {"id", "object", "created", "model", "choices"} <= set(c)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert chunks[0]["choices"][0]["finish_reason"] is None
    content = chunks[1:-2]
    assert content and all(set(c["choices"][0]["delta"]) == {"content"} and c["choices"][0]["finish_reason"] is None
                           for c in content)
    assert chunks[-2]["choices"] == [{"delta": {}, "finish_reason": "length", "index": 0}]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5
    assert "timings" in chunks[-1]
    # Without include_usage there is no usage chunk: the finish chunk comes right before [DONE].
    _, _, raw = qwen3.request("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 3, "stream": True})
    events = sse_events(raw)
    last = json.loads(events[-2])
    assert events[-1] == "[DONE]" and last["choices"][0]["finish_reason"] == "length" and "usage" not in last


def assistant_stream_text(raw_lines):
    """The assistant client's rule for a stream: only `data: ` lines count, `[DONE]` ends it,
    choices[0].delta.content is concatenated, a non-null finish_reason stops reading."""
    text = ""
    for line in raw_lines:
        if not line.startswith("data: "):
            continue
        payload = line[len("data: "):]
        if payload == "[DONE]":
            break
        event = json.loads(payload)
        choice = event["choices"][0] if event.get("choices") else {}
        text += (choice.get("delta") or {}).get("content") or ""
        if choice.get("finish_reason") is not None:
            break
    return text


def assistant_error_text(raw: bytes):
    """The assistant client's rule for an error: error.message, then a top-level message,
    then the raw body."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
    if isinstance(body, dict):
        if isinstance(body.get("error"), dict) and "message" in body["error"]:
            return body["error"]["message"]
        if "message" in body:
            return body["message"]
    return raw.decode(errors="replace")


def test_assistant_client_rules(qwen3):
    ref = qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 10, "temperature": 0})[1]
    conn = http.client.HTTPConnection("127.0.0.1", qwen3.port, timeout=60)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"messages": HELLO, "max_tokens": 10, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}),
        headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    lines = (raw.decode().rstrip("\n") for raw in resp)  # read line by line, as the client does
    assert assistant_stream_text(lines) == ref["choices"][0]["message"]["content"]
    conn.close()
    # Error rule on each kind of error body.
    status, _, raw = qwen3.request("POST", "/v1/chat/completions", {"max_tokens": 1})
    assert status == 400 and assistant_error_text(raw) == "'messages' is required"
    status, _, raw = qwen3.request("POST", "/v1/chat/completions", "{not json")
    assert status == 400 and assistant_error_text(raw).startswith("invalid JSON in the request body")


def test_error_bodies(qwen3):
    def err(body, path="/v1/chat/completions", method="POST"):
        status, _, raw = qwen3.request(method, path, body)
        return status, json.loads(raw)

    status, body = err("{not json")
    assert status == 400 and set(body) == {"error"} and set(body["error"]) == {"code", "message", "type"}
    assert body["error"]["code"] == 400 and body["error"]["type"] == "invalid_request_error"
    assert err({"max_tokens": 3}) == (400, {"error": {"code": 400, "message": "'messages' is required",
                                                      "type": "invalid_request_error"}})
    status, body = err({"messages": HELLO, "temperature": "hot"})
    assert status == 400 and body["error"]["message"] == "'temperature' must be a number"
    status, body = err({"messages": [{"role": "user", "content": 5}]})
    assert status == 400 and "'messages[0].content'" in body["error"]["message"]
    status, body = err({"messages": HELLO, "stream": "yes"})
    assert status == 400 and "'stream'" in body["error"]["message"]
    status, body = err({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})
    assert status == 400 and "image_url" in body["error"]["message"]
    # Unknown fields are ignored.
    status, body = err({"messages": HELLO, "max_tokens": 1, "no_such_field": {"x": 1}})
    assert status == 200
    # Content parts of type text are joined.
    status, body = err({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                   {"type": "text", "text": "b"}]}], "max_tokens": 1})
    assert status == 200
    # A prompt over the context: llama-server's exceed_context_size_error naming both sizes.
    status, body = err({"messages": [{"role": "user", "content": "hello " * 600}]})
    assert status == 400
    e = body["error"]
    assert e["type"] == "exceed_context_size_error" and e["code"] == 400 and e["n_ctx"] == 512
    assert e["n_prompt_tokens"] > 512
    assert e["message"] == (f"request ({e['n_prompt_tokens']} tokens) exceeds the available context size (512 tokens), "
                            "try increasing it")
    # The same for a raw prompt.
    status, body = err({"prompt": "hello " * 600}, path="/v1/completions")
    assert status == 400 and body["error"]["type"] == "exceed_context_size_error"
    status, body = err(None, path="/no/such/path", method="GET")
    assert status == 404 and body["error"]["type"] == "not_found_error"
    # The body size limit.
    status, _, raw = qwen3.request("POST", "/v1/chat/completions", b"x" * (9 << 20))
    assert status == 413


def test_api_key(stories):
    body = {"messages": HELLO, "max_tokens": 2}
    expected = {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}}
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}):
        status, _, raw = stories.request("POST", "/v1/chat/completions", body, headers=headers)
        assert status == 401 and json.loads(raw) == expected
    status, _, raw = stories.request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
    assert status == 401
    assert stories.request("GET", "/health", headers={"Authorization": ""})[0] == 200  # public, as in llama-server
    assert stories.request("POST", "/v1/chat/completions", body)[0] == 200
    import openai

    with pytest.raises(openai.AuthenticationError) as info:
        stories.client(api_key="wrong").chat.completions.create(model="m", messages=HELLO, max_tokens=2)
    assert info.value.status_code == 401


def test_503_while_loading_then_ready():
    """The listener answers before the model is loaded: 503 "Loading model" (llama-server's
    body) on every endpoint, /health included, then 200. The load is held back by the
    GENIE_SERVER_TEST_LOAD_DELAY_MS test hook."""
    s = Server(TESTDATA / "models" / "stories260K.gguf", env={"GENIE_SERVER_TEST_LOAD_DELAY_MS": "1500"}, wait=False)
    try:
        loading = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _, raw = s.request("GET", "/health")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        assert status == 503 and json.loads(raw) == loading
        status, _, raw = s.request("POST", "/v1/chat/completions", {"messages": HELLO})
        assert status == 503 and json.loads(raw) == loading
        s.wait_ready()
        assert s.json("GET", "/health") == (200, {"status": "ok"})
    finally:
        s.stop()


def test_failed_load_stays_503(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    s = Server(bad, wait=False)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = s.json("GET", "/health")
                if body["error"]["message"] != "Loading model":
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert status == 503 and body["error"]["type"] == "unavailable_error"
        assert body["error"]["message"].startswith("Model failed to load: ")
    finally:
        s.stop()


def test_tokenize_detokenize(qwen3):
    status, body = qwen3.json("POST", "/tokenize", {"content": "Hello world"})
    assert status == 200 and body["tokens"] and all(isinstance(t, int) for t in body["tokens"])
    ids = body["tokens"]
    status, body = qwen3.json("POST", "/tokenize", {"content": "Hello world", "with_pieces": True})
    assert [t["id"] for t in body["tokens"]] == ids and "".join(t["piece"] for t in body["tokens"]) == "Hello world"
    assert qwen3.json("POST", "/detokenize", {"tokens": ids}) == (200, {"content": "Hello world"})
    # parse_special (default true) reads control tokens written as text.
    special = qwen3.json("POST", "/tokenize", {"content": "<|im_start|>"})[1]["tokens"]
    plain = qwen3.json("POST", "/tokenize", {"content": "<|im_start|>", "parse_special": False})[1]["tokens"]
    assert len(special) == 1 and len(plain) > 1
    status, body = qwen3.json("POST", "/detokenize", {"tokens": [10 ** 9]})
    assert status == 400 and body["error"]["type"] == "invalid_request_error"


def test_metrics(qwen3):
    qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 4})
    status, headers, raw = qwen3.request("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = raw.decode()
    for name in ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", "genie_server_requests_total",
                 "genie_server_time_to_first_token_seconds", "genie_server_decode_seconds_per_token"):
        assert f"# TYPE {name} " in text
    m = qwen3.metrics()
    assert m['genie_server_requests_total{path="/v1/chat/completions",code="200"}'] >= 1
    assert m["llamacpp:tokens_predicted_total"] >= 4
    assert m['genie_server_time_to_first_token_seconds_bucket{le="+Inf"}'] == m["genie_server_time_to_first_token_seconds_count"] >= 1


def wait_for(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_client_disconnect_cancels(qwen3):
    """Closing the connection mid-stream cancels the generation (the server counts it as
    cancelled and generates far fewer tokens than asked); the server then serves the next
    request normally. Same for a non-streaming request."""
    before = qwen3.metrics()
    sock = socket.create_connection(("127.0.0.1", qwen3.port))
    body = json.dumps({"messages": HELLO, "max_tokens": 400, "stream": True, "temperature": 0}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    received = b""
    while received.count(b"data: ") < 3:
        received += sock.recv(65536)
    sock.close()
    key = "genie_server_generations_cancelled_total"
    wait_for(lambda: qwen3.metrics()[key] == before[key] + 1, "the generation was not cancelled")
    after = qwen3.metrics()
    generated = after["llamacpp:tokens_predicted_total"] - before["llamacpp:tokens_predicted_total"]
    assert 2 <= generated < 200
    assert qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 3})[0] == 200
    assert qwen3.json("GET", "/health") == (200, {"status": "ok"})

    # Non-streaming: the client gives up before the answer.
    before = qwen3.metrics()
    sock = socket.create_connection(("127.0.0.1", qwen3.port))
    body = json.dumps({"messages": HELLO, "max_tokens": 400, "temperature": 0}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    wait_for(lambda: qwen3.metrics()["llamacpp:requests_processing"] >= 1, "the request did not start")
    sock.close()
    wait_for(lambda: qwen3.metrics()[key] == before[key] + 1, "the non-streaming generation was not cancelled")
    assert qwen3.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 3})[0] == 200


def test_queue_bound_gives_503():
    """One slot, a queue of one (GENIE_SERVER_MAX_QUEUE test hook): a third concurrent
    request is refused with 503; the queued one is served once the slot frees."""
    s = Server(fixture_model("qwen3-tiny-q8_0.gguf"), "-c", 512, "--parallel", 1, env={"GENIE_SERVER_MAX_QUEUE": "1"})
    try:
        long_body = json.dumps({"messages": HELLO, "max_tokens": 400, "stream": True}).encode()
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(long_body)).encode()
                     + b"\r\n\r\n" + long_body)
        first = b""
        while b"data: " not in first:
            first += sock.recv(65536)
        queued = {}
        t = threading.Thread(target=lambda: queued.update(
            r=s.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})))
        t.start()
        wait_for(lambda: s.metrics()["llamacpp:requests_deferred"] == 1, "the second request is not queued")
        status, body = s.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})
        assert status == 503 and body["error"]["type"] == "unavailable_error" and body["error"]["code"] == 503
        sock.close()  # frees the slot (the disconnect cancels the long generation)
        t.join(60)
        assert queued["r"][0] == 200
        assert s.metrics()["genie_server_requests_rejected_busy_total"] == 1
    finally:
        s.stop()


def test_small_load_no_failure_no_leak(qwen3):
    """A short version of bench/server_load.py: 64 requests, 4 at a time, all succeed; the
    resident set does not grow over the second half (the first half may still fill
    allocator arenas and thread stacks)."""
    def one(i):
        body = {"messages": [{"role": "user", "content": f"Request {i}: say something"}], "max_tokens": 8,
                "stream": i % 2 == 0}
        status, _, raw = qwen3.request("POST", "/v1/chat/completions", body)
        return status, raw

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(st == 200 for st, _ in pool.map(one, range(16)))  # warm-up
        results = list(pool.map(one, range(32)))
        rss_mid = qwen3.rss_kib()
        results += list(pool.map(one, range(32, 64)))
    rss_end = qwen3.rss_kib()
    assert [st for st, _ in results] == [200] * 64
    for i, (_, raw) in enumerate(results):
        if i % 2 == 0:
            assert sse_events(raw)[-1] == "[DONE]"
        else:
            assert json.loads(raw)["choices"][0]["finish_reason"] in ("stop", "length")
    assert rss_end - rss_mid < 16 * 1024, (rss_mid, rss_end)


# ---- deploy/systemd ---------------------------------------------------------------------

SYSTEMD = ROOT / "deploy" / "systemd"


def test_warmup_script(stories):
    """genie-server-warmup waits for /health and sends one tiny (authenticated) prompt."""
    if not shutil.which("curl"):
        pytest.skip("curl is not installed")
    before = stories.metrics()["genie_server_generations_total"]
    env = {**os.environ, "GENIE_PORT": str(stories.port), "GENIE_API_KEY": "sekrit", "GENIE_WARMUP_TIMEOUT": "30"}
    r = subprocess.run(["sh", str(SYSTEMD / "genie-server-warmup")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert stories.metrics()["genie_server_generations_total"] == before + 1
    env["GENIE_API_KEY"] = "wrong"
    r = subprocess.run(["sh", str(SYSTEMD / "genie-server-warmup")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "failed" in r.stderr


def test_systemd_units_verify(tmp_path):
    """The units parse (systemd-analyze verify), with the install paths pointed at this build."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    exe = BIN_DIR / "genie-server"
    if not exe.exists():
        pytest.skip("genie-server is not built")
    for name in ("genie-server.service", "genie-server-warmup.service"):
        text = (SYSTEMD / name).read_text()
        assert "Type=simple" in text or "Type=oneshot" in text
        text = text.replace("/usr/local/bin/genie-server", str(exe))
        text = text.replace("/usr/local/lib/genie/genie-server-warmup", str(SYSTEMD / "genie-server-warmup"))
        (tmp_path / name).write_text(text)
    service = (SYSTEMD / "genie-server.service").read_text()
    assert "Restart=on-failure" in service and "EnvironmentFile=" in service and "${GENIE_MODEL}" in service
    r = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "genie-server.service"),
                        str(tmp_path / "genie-server-warmup.service")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_command_line_and_loopback_default(qwen3):
    exe = BIN_DIR / "genie-server"
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("usage: genie-server -m MODEL.gguf")
    for flag in ("--host", "--port", "--ctx-size", "--threads", "--api-key", "--parallel"):
        assert flag in r.stdout
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "-m MODEL is required" in r.stderr
    r = subprocess.run([str(exe), "-m", "x.gguf", "--port", "http"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--port expects an integer" in r.stderr
    r = subprocess.run([str(exe), "-m", "x.gguf", "--no-such-flag"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "unknown option --no-such-flag" in r.stderr
    # The port is taken: a clear error and exit code 1.
    r = subprocess.run([str(exe), "-m", "x.gguf", "--port", str(qwen3.port)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1 and "cannot listen" in r.stderr
    # Without --host the listener is on 127.0.0.1 only (/proc/net/tcp: local address, state 0A = LISTEN).
    listening = []
    for line in pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        addr, port = fields[1].split(":")
        if int(port, 16) == qwen3.port and fields[3] == "0A":
            listening.append(addr)
    assert listening == ["0100007F"]


def test_error_inside_a_stream():
    """An error after the stream started is an `error` event, then `data: [DONE]`. The
    GENIE_SERVER_TEST_STREAM_ERROR_AFTER test hook makes a streamed generation fail after
    N pieces (nothing else triggers a mid-stream error on demand)."""
    s = Server(TESTDATA / "models" / "stories260K.gguf", "-c", 256, env={"GENIE_SERVER_TEST_STREAM_ERROR_AFTER": "2"})
    try:
        status, headers, raw = s.request("POST", "/v1/chat/completions",
                                         {"messages": HELLO, "max_tokens": 16, "temperature": 0, "stream": True})
        assert status == 200 and headers["Content-Type"] == "text/event-stream"
        events = sse_events(raw)
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert [set(c["choices"][0]["delta"]) for c in chunks[1:3]] == [{"content"}, {"content"}]
        assert chunks[-1] == {"error": {"code": 500, "message": "test hook: error injected after 2 pieces",
                                        "type": "server_error"}}
        assert len(chunks) == 4
        # The assistant client's stream rule still ends cleanly, with the text before the error.
        text = assistant_stream_text("data: " + e for e in events)
        assert text == chunks[1]["choices"][0]["delta"]["content"] + chunks[2]["choices"][0]["delta"]["content"]
        import openai

        with pytest.raises(openai.APIError) as info:
            list(s.client().chat.completions.create(model="m", messages=HELLO, max_tokens=16, stream=True))
        assert "test hook" in str(info.value)
        # The slot is free again and non-streaming requests are unaffected by the hook.
        assert s.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 4})[0] == 200
    finally:
        s.stop()
