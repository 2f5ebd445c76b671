"""The genie Python module's Model / Session / Sampler API (bindings/python/).

Run against the CMake-built module (build/python, or GENIE_PYTHON_DIR)."""
import subprocess
import threading
import time

import numpy as np
import pytest


@pytest.fixture(scope="module")
def stories(testdata):
    return testdata / "models" / "stories260K.gguf"


@pytest.fixture(scope="module")
def model(genie_module, stories):
    return genie_module.Model(str(stories))


@pytest.fixture()
def session(genie_module, model):
    return genie_module.Session(model, context_length=256, threads=2)


PROMPT = "Once upon a time"


def test_model_info_and_tokenizer(model):
    info = model.info
    assert info["architecture"] == "llama"
    assert info["n_vocab"] == 512 == model.n_vocab
    assert info["bos"] == 1
    assert 0 < info["decode_bytes"] <= info["weight_bytes"]
    tokens = model.tokenize(PROMPT, add_special=True)
    assert tokens[0] == info["bos"]
    assert model.detokenize(tokens, remove_special=True).endswith(PROMPT)  # SPM space prefix
    assert model.is_eog(info["eos"])
    assert isinstance(model.token_to_piece(tokens[1]), bytes)


def test_generate_greedy_matches_cli(genie_module, model, session, stories, genie_cli):
    result = session.generate(PROMPT, max_tokens=32)
    assert result.finish_reason in ("length", "stop")
    assert result.completion_tokens == len(result.tokens) > 0
    assert result.prompt_tokens == len(model.tokenize(PROMPT, add_special=True))
    assert result.timings.time_to_first_token_ms > 0
    cli = subprocess.run([str(genie_cli), "run", "-m", str(stories), "-p", PROMPT, "-n", "32"],
                         capture_output=True, text=True, check=True)
    assert cli.stdout == result.text + "\n"
    # Same prompt again: all but the last prompt token come from the cache, same text.
    again = session.generate(PROMPT, max_tokens=32)
    assert again.reused_prompt_tokens == again.prompt_tokens - 1
    assert again.text == result.text
    # Token prompt and an explicit greedy Sampler give the same text.
    session.reset()
    by_tokens = session.generate(model.tokenize(PROMPT, add_special=True), max_tokens=32,
                                 sampler=genie_module.Sampler(temperature=0))
    assert by_tokens.text == result.text


def test_callback_and_stop(session):
    pieces = []
    result = session.generate(PROMPT, max_tokens=32, callback=lambda p: pieces.append(p.text))
    assert "".join(pieces) == result.text
    seen = []

    def stop_after_three(piece):
        seen.append(piece.token)
        return len(seen) < 3

    stopped = session.generate(PROMPT, max_tokens=32, callback=stop_after_three)
    assert stopped.finish_reason == "stop"
    assert stopped.completion_tokens == 3


def test_callback_exception_propagates(session):
    def boom(piece):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        session.generate(PROMPT, max_tokens=8, callback=boom)
    # The session is usable afterwards (not left busy).
    assert session.generate(PROMPT, max_tokens=2).completion_tokens == 2


def test_stream(session):
    expected = session.generate(PROMPT, max_tokens=24).text
    stream = session.stream(PROMPT, max_tokens=24)
    texts = [piece.text for piece in stream]
    assert "".join(texts) == expected
    assert stream.result is not None and stream.result.text == expected
    # Closing a stream early cancels it and frees the session.
    with session.stream(PROMPT, max_tokens=200, stop_on_eog=False) as early:
        next(early)
    assert early.result is not None
    assert early.result.finish_reason in ("cancelled", "length", "stop")
    assert session.generate(PROMPT, max_tokens=1).completion_tokens == 1


def test_stop_strings_and_logit_bias(session, genie_module):
    full = session.generate(PROMPT, max_tokens=32).text
    stop_at = full[len(full) // 2:len(full) // 2 + 4]
    cut = session.generate(PROMPT, max_tokens=32, stop=[stop_at])
    assert cut.finish_reason == "stop"
    assert cut.text == full[:full.index(stop_at)]
    first = session.generate(PROMPT, max_tokens=1).tokens[0]
    banned = genie_module.Sampler(logit_bias={first: float("-inf")})
    assert session.generate(PROMPT, max_tokens=1, sampler=banned).tokens[0] != first


def test_sampling_keywords(session, genie_module):
    a = session.generate(PROMPT, max_tokens=16, temperature=0.9, seed=7)
    b = session.generate(PROMPT, max_tokens=16, temperature=0.9, seed=7)
    assert a.text == b.text
    with pytest.raises(genie_module.InvalidArgumentError):
        session.generate(PROMPT, sampler=genie_module.Sampler(), temperature=0.5)


def test_evaluate_logits(session, model):
    assert session.last_logits().shape == (0,)
    tokens = model.tokenize(PROMPT, add_special=True)
    logits = session.evaluate(tokens)
    assert logits.shape == (512,) and logits.dtype == np.float32
    assert np.array_equal(session.last_logits(), logits)
    assert session.cached_tokens == tokens
    # Greedy generation picks the arg max of those logits first.
    result = session.generate(tokens, max_tokens=1)
    assert result.tokens[0] == int(np.argmax(logits))


def test_errors(genie_module, model, session, tmp_path):
    with pytest.raises(genie_module.NotFoundError) as info:
        genie_module.Model(str(tmp_path / "missing.gguf"))
    assert info.value.code == -2 and info.value.code_name == "NOT_FOUND"
    assert isinstance(info.value, genie_module.Error) and isinstance(info.value, LookupError)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    with pytest.raises(genie_module.FormatError):
        genie_module.Model(str(bad))
    with pytest.raises(genie_module.InvalidArgumentError, match="empty"):
        session.generate("", max_tokens=4, add_special=False)
    with pytest.raises(genie_module.InvalidArgumentError):
        session.evaluate([10**6])
    with pytest.raises(genie_module.ContextOverflowError) as overflow:
        genie_module.Session(model, context_length=16).generate(" time" * 100, max_tokens=1)
    assert overflow.value.code == -6
    with pytest.raises(genie_module.InvalidArgumentError):
        genie_module.Session(model, kv_type="q9")


def test_gil_released_during_generate(genie_module, model):
    """A second Python thread keeps running while generate runs in C++."""
    session = genie_module.Session(model, context_length=512, threads=1)
    stamps = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.0005)

    thread = threading.Thread(target=ticker)
    thread.start()
    inside = 0
    try:
        for _ in range(20):
            session.reset()
            start = time.perf_counter()
            session.generate(PROMPT, max_tokens=400, stop_on_eog=False)
            end = time.perf_counter()
            margin = (end - start) * 0.1
            inside += sum(1 for t in stamps if start + margin < t < end - margin)
            if inside >= 5:
                break
    finally:
        done.set()
        thread.join()
    assert inside >= 5


def test_busy_and_cancel_from_another_thread(genie_module, model):
    session = genie_module.Session(model, context_length=512, threads=1)
    errors = []
    started = threading.Event()

    def on_piece(piece):
        if not started.is_set():
            started.set()
            # While this generate runs, another thread's call on the session is refused
            # and cancel() from that thread stops the generation.
            def other():
                try:
                    session.evaluate([1, 2])
                except genie_module.BusyError as e:
                    errors.append(e)
                session.cancel()
            t = threading.Thread(target=other)
            t.start()
            t.join()

    result = session.generate(PROMPT, max_tokens=400, stop_on_eog=False, callback=on_piece)
    assert result.finish_reason == "cancelled"
    assert len(errors) == 1 and errors[0].code_name == "BUSY"


def test_chat_template(model):
    text = model.apply_chat_template([{"role": "user", "content": "Hi"}])
    if not model.chat_template:
        assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
