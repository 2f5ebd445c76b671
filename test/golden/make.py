#!/usr/bin/env python3
"""Writes the golden files: llama.cpp's (llama-cpp-python's) greedy continuations and
logits for the shared tiny models and every synthetic fixture model.

    scripts/make-fixtures && python3 test/golden/make.py [NAME ...]

Needs `llama-cpp-python` (scripts/setup --with-reference). CI never runs this; it reads
the committed JSON files. For each model and prompt the file holds the prompt tokens
(BOS added as the vocabulary asks, special tokens parsed), 64 greedy tokens (EOG not
stopping), and at each step the top-20 logits (ids and values) of the reference.
"""
import hashlib
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = (ROOT.parent / "shared" / "testdata").resolve()
FIXTURES = ROOT / "build" / "fixtures"
OUT = ROOT / "test" / "golden"
N_PREDICT = 64
TOP = 20

STORY_PROMPTS = ["Once upon a time", "The little dog was very happy because", "Lily and Tom went to the park."]
# gemma3 fixtures have a sliding window of 16 positions: a prompt longer than that puts the
# window to work in the prompt itself (the 64 generated tokens run past it in every case).
LONG_STORY_PROMPT = ("Once upon a time, in a small village by the sea, there lived a little girl named Lily. "
                     "Every morning she walked to the beach with her dog and looked for shells in the sand.")
TEXT_PROMPTS = [
    "The quick brown fox",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "def fibonacci(n):\n    ",
]


def models():
    yield "stories260K", TESTDATA / "models" / "stories260K.gguf", STORY_PROMPTS
    yield "llama-2-tiny-random", TESTDATA / "models" / "llama-2-tiny-random.gguf", STORY_PROMPTS[:2]
    for line in (OUT / "fixtures.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name = line.split()[0]
        if name.startswith("qwen"):
            prompts = TEXT_PROMPTS
        elif name.startswith("gemma3"):
            prompts = STORY_PROMPTS[:1] + [LONG_STORY_PROMPT] + TEXT_PROMPTS[:1]
        else:
            prompts = STORY_PROMPTS[:2] + TEXT_PROMPTS[:1]
        yield name, FIXTURES / f"{name}.gguf", prompts


def fingerprint(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def kv_type_for(name):
    """F32-weight models are compared with an F32 KV cache: with F16 K/V, llama.cpp rounds
    q, k, v and the attention probabilities to F16, and a one-ulp difference in any earlier
    float sum (SIMD summation order) flips such a rounding now and then, moving logits by
    ~1e-3 although both results are equally right. The F32 cache keeps the comparison at
    float precision; every quantized model is compared with the default F16 cache."""
    return "f32" if name == "stories260K" or name.endswith("-f32") else "f16"


def run(name, path, prompts):
    import llama_cpp

    kv = kv_type_for(name)
    ggml_type = {"f32": 0, "f16": 1}[kv]
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_batch=512, n_threads=2, logits_all=True,
                          verbose=False, flash_attn=False, type_k=ggml_type, type_v=ggml_type)
    cases = []
    for prompt in prompts:
        tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(tokens)
        steps = []
        generated = []
        for _ in range(N_PREDICT):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            top = np.argsort(-logits, kind="stable")[:TOP]
            token = int(np.argmax(logits))
            steps.append({"top_ids": [int(i) for i in top], "top_logits": [float(logits[i]) for i in top]})
            generated.append(token)
            llm.eval([token])
        cases.append({"prompt": prompt, "prompt_tokens": tokens, "tokens": generated, "steps": steps})
    return {
        "model": name,
        "sha256": fingerprint(path),
        "reference": f"llama-cpp-python {llama_cpp.__version__}",
        "settings": {"n_ctx": 512, "n_batch": 512, "n_threads": 2, "flash_attn": False, "kv_type": kv,
                     "add_bos": True, "parse_special": True, "greedy": True, "n_predict": N_PREDICT},
        "cases": cases,
    }


def main(names):
    for name, path, prompts in models():
        if names and name not in names:
            continue
        if not path.exists():
            sys.exit(f"{path} is missing: run scripts/make-fixtures first")
        data = run(name, path, prompts)
        out = OUT / f"{name}.json"
        out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"{out.relative_to(ROOT)}: {len(data['cases'])} prompts x {N_PREDICT} tokens")


if __name__ == "__main__":
    main(sys.argv[1:])
