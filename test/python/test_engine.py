"""genie.Engine (bindings/python/engine.cpp) on the fixture models: load/status/health,
chat with conversation ids (warm turns), the one chat path shared with Session.chat,
streamed pieces with their kind, JSON constraints, text completions, the bounded queue,
swap and unload. docs/python.md, docs/engine.md."""
import json
import threading
import time

import pytest

from conftest import fixture


@pytest.fixture()
def engine(genie_module):
    e = genie_module.Engine(context_length=512, threads=1, max_conversations=2, watchdog_timeout_s=0)
    e.load(fixture("qwen3-tiny-q8_0"))
    yield e
    e.unload()


def test_load_status_health_and_unload(genie_module):
    e = genie_module.Engine(context_length=256, threads=1)
    assert e.status()["state"] == "UNLOADED"
    with pytest.raises(genie_module.NotLoadedError):
        e.chat([{"role": "user", "content": "hi"}])
    e.load(fixture("qwen3-tiny-q8_0"))
    s = e.status()
    assert s["state"] == "READY" and s["architecture"] == "qwen3" and s["context_length"] == 256
    assert s["memory"]["weights"] > 0 and s["counters"]["loads"] == 1
    assert e.health() == ("OK", "")
    e.warmup()
    e.unload()
    assert e.status()["state"] == "UNLOADED"
    with pytest.raises(genie_module.NotFoundError):
        e.load("/no/such/model.gguf")
    assert e.health()[0] == "FAILED" and "load failed" in e.health()[1]


def test_chat_matches_session_chat_and_warm_turns(genie_module, engine):
    """Engine.chat renders and generates exactly as Session.chat (one chat path); a second
    turn of the same conversation reuses its KV cache."""
    messages = [{"role": "system", "content": "You are terse. " * 10}, {"role": "user", "content": "Hello"}]
    first = engine.chat(messages, conversation_id="kitchen", max_tokens=6, think=False)
    model = genie_module.Model(str(fixture("qwen3-tiny-q8_0")))
    session = genie_module.Session(model, context_length=512, threads=1)
    direct = session.chat(messages, max_tokens=6, think=False)
    assert first["generation"].tokens == direct["generation"].tokens
    assert first["text"] == direct["text"] and first["prompt_tokens"] == direct["prompt_tokens"]
    assert not first["warm"] and first["reused_tokens"] == 0
    follow = messages + [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Bye"}]
    second = engine.chat(follow, conversation_id="kitchen", max_tokens=2, think=False)
    # Everything up to the first answer is reused (its empty think block is not re-rendered).
    assert second["warm"] and second["reused_tokens"] > 40
    assert engine.status()["conversations"] == 1
    engine.forget("kitchen")
    assert engine.status()["conversations"] == 0


def test_streamed_pieces_carry_their_kind(engine):
    pieces = []
    r = engine.chat([{"role": "user", "content": "Hi"}], max_tokens=8, callback=pieces.append)
    assert "".join(p.text for p in pieces if p.kind == "content") == r["text"]
    assert "".join(p.text for p in pieces if p.kind == "reasoning").strip() == r["reasoning"]
    assert {p.kind for p in pieces} <= {"content", "reasoning"}
    stopped = engine.chat([{"role": "user", "content": "Hi"}], max_tokens=50, callback=lambda p: False)
    assert stopped["completion_tokens"] <= 2


def test_json_schema_constraint_and_timeout(engine):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    r = engine.chat([{"role": "user", "content": "JSON"}], max_tokens=40, json_schema=schema)
    if r["finish_reason"] == "stop":
        assert isinstance(json.loads(r["text"])["ok"], bool)
    else:
        assert r["finish_reason"] == "length"
    r = engine.chat([{"role": "user", "content": "x"}], max_tokens=40, deadline_s=1e-9)
    assert r["finish_reason"] == "timeout" and r["completion_tokens"] == 1


def test_text_completion(genie_module, engine):
    r = engine.complete("Once upon a time", max_tokens=4)
    model = genie_module.Model(str(fixture("qwen3-tiny-q8_0")))
    session = genie_module.Session(model, context_length=512, threads=1)
    assert r["generation"].tokens == session.generate("Once upon a time", max_tokens=4).tokens
    assert r["tool_calls"] == []
    with pytest.raises(genie_module.ContextOverflowError):
        engine.complete("hello " * 600, max_tokens=4)


def test_bounded_queue_answers_busy(genie_module):
    e = genie_module.Engine(context_length=256, threads=1, max_queued=0, watchdog_timeout_s=0)
    e.load(fixture("qwen3-tiny-q8_0"))
    started, release = threading.Event(), threading.Event()

    def hold(piece):
        started.set()
        release.wait(30)

    t = threading.Thread(target=lambda: e.chat([{"role": "user", "content": "long"}], max_tokens=4, callback=hold))
    t.start()
    assert started.wait(30)
    threading.Timer(10, release.set).start()  # without a bound the next call would wait: fail, not hang
    with pytest.raises(genie_module.BusyError):
        e.chat([{"role": "user", "content": "second"}], max_tokens=2)
    release.set()
    t.join(30)
    s = e.status()
    assert s["counters"]["rejected_busy"] == 1 and s["counters"]["requests"] == 1
    e.unload()


def test_swap_keeps_serving(engine):
    engine.swap(fixture("qwen3-tiny-q4_0"))
    s = engine.status()
    assert s["model_path"].endswith("qwen3-tiny-q4_0.gguf") and s["counters"]["loads"] == 2
    assert engine.chat([{"role": "user", "content": "Hi"}], max_tokens=2)["completion_tokens"] >= 1


def test_session_chat_stream_yields_kinds_and_the_chat_dict(genie_module):
    """Session.chat_stream: pieces as they come (content and reasoning), then chat's dict,
    equal to Session.chat's answer."""
    model = genie_module.Model(str(fixture("qwen3-tiny-q8_0")))
    session = genie_module.Session(model, context_length=512, threads=1)
    messages = [{"role": "user", "content": "Hello"}]
    stream = session.chat_stream(messages, max_tokens=8)
    assert stream.result is None
    pieces = list(stream)
    r = stream.result
    assert r["text"] == "".join(p.text for p in pieces if p.kind == "content")
    assert r["reasoning"] == "".join(p.text for p in pieces if p.kind == "reasoning").strip()
    session.reset()
    direct = session.chat(messages, max_tokens=8)
    assert direct["generation"].tokens == r["generation"].tokens and direct["text"] == r["text"]
    with pytest.raises(genie_module.InvalidArgumentError):
        session.chat_stream(messages, tool_choice="sometimes")
