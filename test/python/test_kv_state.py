"""KV persistence through the Python bindings: a state saved in one process is restored in
another and continues exactly as the original would (greedy), for F16 and INT8 (Q8_0) KV
caches; bad files raise and leave the session unchanged; KvCacheDir keeps its budget."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import PYTHON_DIR, fixture


PROMPT = "The quick brown fox jumps over the lazy dog. Then"

# Run in a separate interpreter: evaluates the prompt plus 16 greedy tokens, saves the state,
# then continues greedily for 32 tokens and prints the cached tokens and that continuation.
SAVER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import genie
    model_path, kv_type, state = sys.argv[2], sys.argv[3], sys.argv[4]
    model = genie.Model(model_path)
    s = genie.Session(model, context_length=256, threads=2, kv_type=kv_type)
    s.generate(PROMPT, max_tokens=16, temperature=0.0, stop_on_eog=False)
    held = s.cached_tokens
    size = s.save_state(state)
    cont = s.generate(held, max_tokens=32, temperature=0.0, stop_on_eog=False).tokens
    print(json.dumps({"held": held, "continuation": cont, "size": size}))
    """
).replace("PROMPT", repr(PROMPT))


def saved_in_another_process(model_path, kv_type, state):
    out = subprocess.run(
        [sys.executable, "-c", SAVER, str(PYTHON_DIR), str(model_path), kv_type, str(state)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kv_type", ["f16", "q8_0"])
def test_state_restored_in_a_fresh_process_continues_identically(genie_module, tmp_path, kv_type):
    genie = genie_module
    model_path = fixture("qwen3-tiny-q4_k_m")
    state = tmp_path / "conversation.gkv"
    saved = saved_in_another_process(model_path, kv_type, state)
    assert state.stat().st_size == saved["size"]
    assert len(saved["continuation"]) == 32

    model = genie.Model(str(model_path))
    s = genie.Session(model, context_length=256, threads=2, kv_type=kv_type)
    s.load_state(state)  # os.PathLike accepted
    assert s.cached_tokens == saved["held"]
    r = s.generate(saved["held"], max_tokens=32, temperature=0.0, stop_on_eog=False)
    assert r.tokens == saved["continuation"]
    assert r.reused_prompt_tokens == len(saved["held"]) - 1


def test_bad_state_files_raise_and_leave_the_session_unchanged(genie_module, tmp_path):
    genie = genie_module
    model = genie.Model(str(fixture("qwen3-tiny-q4_k_m")))
    s = genie.Session(model, context_length=256, threads=2)
    s.generate(PROMPT, max_tokens=8, temperature=0.0, stop_on_eog=False)
    held = s.cached_tokens
    good = tmp_path / "good.gkv"
    s.save_state(str(good))
    data = good.read_bytes()

    truncated = tmp_path / "truncated.gkv"
    truncated.write_bytes(data[:-10])
    flipped = tmp_path / "flipped.gkv"
    flipped.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
    with pytest.raises(genie.FormatError, match="truncated"):
        s.load_state(truncated)
    with pytest.raises(genie.FormatError, match="corrupt"):
        s.load_state(flipped)
    with pytest.raises(genie.NotFoundError):
        s.load_state(tmp_path / "missing.gkv")
    # Another KV type.
    q8 = genie.Session(model, context_length=256, threads=2, kv_type="q8_0")
    with pytest.raises(genie.InvalidArgumentError, match="F16"):
        q8.load_state(good)
    # Another model.
    other = genie.Session(genie.Model(str(fixture("qwen3-tiny-q8_0"))), context_length=256, threads=2)
    with pytest.raises(genie.InvalidArgumentError, match="another model"):
        other.load_state(good)
    assert other.cached_tokens == []
    assert s.cached_tokens == held
    again = tmp_path / "again.gkv"
    s.save_state(again)
    assert again.read_bytes() == data


def test_kv_cache_dir_evicts_the_least_recently_used(genie_module, tmp_path):
    genie = genie_module
    model = genie.Model(str(fixture("llama-tiny-f16")))
    s = genie.Session(model, context_length=128, threads=2)
    s.generate(PROMPT, max_tokens=4, temperature=0.0, stop_on_eog=False)
    entry = s.save_state(tmp_path / "probe.gkv")
    cache = genie.KvCacheDir(tmp_path / "cache", max_bytes=entry * 5 // 2)
    assert cache.store("chat:1", s) and cache.store("chat:2", s)
    fresh = genie.Session(model, context_length=128, threads=2)
    assert cache.restore("chat:1", fresh)  # chat:1 is now the most recent
    assert fresh.cached_tokens == s.cached_tokens
    assert cache.store("chat:3", s)  # evicts chat:2
    assert cache.size_bytes == 2 * entry
    assert not os.path.exists(cache.path_for("chat:2"))
    assert not cache.restore("chat:2", genie.Session(model, context_length=128, threads=2))
    assert cache.remove("chat:3") and not cache.remove("chat:3")
