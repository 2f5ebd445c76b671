#!/usr/bin/env python3
"""Writes test/sampling/expected.json: the tokens llama.cpp's sampler chain draws.

Uses llama-cpp-python's low-level sampler API (the vendored llama.cpp's own code) with
the default chain order of common/sampling.cpp: penalties -> top_k -> typical -> top_p
-> min_p -> temp -> dist(seed). Each step gets fresh logits (a fixed integer hash, so
test_sampler.cpp regenerates the very same float32 values), the chain draws a token, and
the token is accepted into the chain (so the penalties see it).

Run: python3 test/sampling/make_expected.py  (rewrites expected.json next to it)
"""
import ctypes
import json
import os

import numpy as np
import llama_cpp as L

M = 0xFFFFFFFF


def mix(x):
    """32-bit integer hash (same as mix32 in test_sampler.cpp)."""
    x = x & M
    x = ((x ^ (x >> 16)) * 0x45D9F3B) & M
    x = ((x ^ (x >> 16)) * 0x45D9F3B) & M
    return x ^ (x >> 16)


def logits_for(n_vocab, step):
    """logit[i] = float32((((u1+u2)+u3)/3)*8 - 4 + 0.5*(u4-0.5)), all in double first."""
    i = np.arange(n_vocab, dtype=np.uint64)
    def u(salt):
        x = (i * np.uint64(2654435761) + np.uint64(salt)) & np.uint64(M)
        return mix(x).astype(np.float64) / 4294967296.0
    u1 = u(n_vocab * 3 + 1)
    u2 = u(n_vocab * 3 + 2)
    u3 = u(n_vocab * 3 + 3)
    u4 = u(1000003 * (step + 1))
    v = (((u1 + u2) + u3) / 3.0) * 8.0 - 4.0 + 0.5 * (u4 - 0.5)
    return v.astype(np.float32)


# Stage settings exercised (names as in genie::SamplerOptions).
CONFIGS = {
    "defaults": dict(penalty_last_n=64, repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0,
                     top_k=40, typical_p=1.0, top_p=0.95, min_p=0.05),
    "penalties": dict(penalty_last_n=16, repeat_penalty=1.3, frequency_penalty=0.2, presence_penalty=0.5,
                      top_k=40, typical_p=1.0, top_p=0.95, min_p=0.05),
    "typical": dict(penalty_last_n=32, repeat_penalty=1.1, frequency_penalty=0.0, presence_penalty=0.3,
                    top_k=0, typical_p=0.9, top_p=0.9, min_p=0.02),
    "unsorted_min_p": dict(penalty_last_n=8, repeat_penalty=1.5, frequency_penalty=0.1, presence_penalty=0.0,
                           top_k=0, typical_p=1.0, top_p=1.0, min_p=0.05),
    "pure_dist": dict(penalty_last_n=0, repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0,
                      top_k=0, typical_p=1.0, top_p=1.0, min_p=0.0),
    "top_p_large": dict(penalty_last_n=64, repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0,
                        top_k=0, typical_p=1.0, top_p=0.8, min_p=0.0),
}
VOCABS = [32, 1000, 32000]
TEMPS = [0.3, 0.7, 1.0]
SEEDS = [1, 42, 1234]
STEPS = 50


def make_chain(n_vocab, c, temp, seed):
    chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    add = lambda s: L.llama_sampler_chain_add(chain, s)
    add(L.llama_sampler_init_penalties(n_vocab, c["penalty_last_n"], c["repeat_penalty"],
                                       c["frequency_penalty"], c["presence_penalty"]))
    add(L.llama_sampler_init_top_k(c["top_k"]))
    add(L.llama_sampler_init_typical(c["typical_p"], 0))
    add(L.llama_sampler_init_top_p(c["top_p"], 0))
    add(L.llama_sampler_init_min_p(c["min_p"], 0))
    add(L.llama_sampler_init_temp(temp))
    add(L.llama_sampler_init_dist(seed))
    return chain


def draw(chain, logits):
    n = len(logits)
    data = (L.llama_token_data * n)()
    for i in range(n):
        data[i].id = i
        data[i].logit = float(logits[i])
        data[i].p = 0.0
    arr = L.llama_token_data_array(data=ctypes.cast(data, L.llama_token_data_p), size=n, selected=-1, sorted=False)
    L.llama_sampler_apply(chain, ctypes.byref(arr))
    assert 0 <= arr.selected < arr.size
    return int(data[arr.selected].id)


def main():
    cases = []
    logits_cache = {n: [logits_for(n, s) for s in range(STEPS)] for n in VOCABS}
    for name, c in CONFIGS.items():
        for n in VOCABS:
            for temp in TEMPS:
                for seed in SEEDS:
                    chain = make_chain(n, c, temp, seed)
                    tokens = []
                    for step in range(STEPS):
                        t = draw(chain, logits_cache[n][step])
                        L.llama_sampler_accept(chain, t)
                        tokens.append(t)
                    L.llama_sampler_free(chain)
                    cases.append(dict(config=name, n_vocab=n, temperature=temp, seed=seed, tokens=tokens))
    out = dict(
        generator="test/sampling/make_expected.py",
        llama_cpp_python=getattr(L, "__version__", "?"),
        steps=STEPS,
        configs=CONFIGS,
        # spot checks of the logits generator, so the C++ side can verify it first
        logit_checks=[dict(n_vocab=n, step=s, index=i, value=float(logits_for(n, s)[i]))
                      for n in VOCABS for s in (0, 7) for i in (0, 5, n - 1)],
        cases=cases,
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
