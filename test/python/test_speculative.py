"""Speculative decoding from Python (bindings/python/session.cpp: Session(draft_model=...),
Session.speculative, GenerateResult.draft_tokens / accepted_draft_tokens) on the fixture
models. docs/speculative.md, docs/python.md."""

import pytest

from conftest import fixture


PROMPT = "one two three four one two three four one two"


def plain(genie, model):
    s = genie.Session(model, context_length=256, threads=1)
    return s.generate(PROMPT, max_tokens=24)


def test_draft_model_keeps_greedy_tokens(genie_module):
    genie = genie_module
    target = genie.Model(str(fixture("qwen3-tiny-q8_0")))
    want = plain(genie, target)
    # The model drafting for itself: every proposal is the target's own greedy choice.
    s = genie.Session(target, context_length=256, threads=1, draft_model=target)
    s.speculative = {"draft_max": 4, "draft_p_min": 0.0}
    got = s.generate(PROMPT, max_tokens=24)
    assert got.tokens == want.tokens
    assert got.draft_tokens > 0
    assert got.accepted_draft_tokens == got.draft_tokens
    assert s.speculative["draft_max"] == 4


def test_prompt_lookup_keeps_greedy_tokens(genie_module):
    genie = genie_module
    model = genie.Model(str(fixture("qwen3-tiny-q8_0")))
    want = plain(genie, model)
    s = genie.Session(model, context_length=256, threads=1)
    s.speculative = {"lookup_ngram": 2, "draft_max": 4}
    got = s.generate(PROMPT, max_tokens=24)
    assert got.tokens == want.tokens
    assert 0 <= got.accepted_draft_tokens <= got.draft_tokens
    s.speculative = {"draft_max": 0}  # off
    off = s.generate(PROMPT, max_tokens=24)
    assert off.tokens == want.tokens and off.draft_tokens == 0


def test_speculative_rejects_unknown_keys_and_vocab_mismatch(genie_module):
    genie = genie_module
    model = genie.Model(str(fixture("qwen3-tiny-q8_0")))
    s = genie.Session(model, context_length=128, threads=1)
    with pytest.raises(genie.Error, match="unknown key 'draftmax'"):
        s.speculative = {"draftmax": 3}
    other = genie.Model(str(fixture("llama-tiny-q8_0")))
    with pytest.raises(genie.Error):
        genie.Session(model, context_length=128, threads=1, draft_model=other)
