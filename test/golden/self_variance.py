#!/usr/bin/env python3
"""How far llama.cpp disagrees with itself: the same fixture, teacher-forced along the
golden continuation, through llama.cpp's repacked CPU kernels (its default) and through
its plain kernels (use_extra_bufts = false). Both are correct; their largest |Δlogit| over
the golden top-20 ids is the scale of legitimate implementation noise that
test/integration/test_golden.cpp's tolerances are set against (docs/parity.md).

    python3 test/golden/self_variance.py [NAME ...]     (needs llama-cpp-python)
"""
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def logits_for(path, seq, kv, repack):
    import llama_cpp
    import llama_cpp.llama as llama_module

    original = llama_cpp.llama_model_default_params

    def params():
        p = original()
        p.use_extra_bufts = repack
        return p

    llama_module.llama_cpp.llama_model_default_params = params
    try:
        t = {"f32": 0, "f16": 1}[kv]
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False,
                              flash_attn=False, type_k=t, type_v=t)
        llm.eval(seq)
        return np.array(llm.scores[: len(seq)])
    finally:
        llama_module.llama_cpp.llama_model_default_params = original


def main(names):
    for line in (ROOT / "test" / "golden" / "fixtures.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name = line.split()[0]
        if names and name not in names:
            continue
        golden = json.loads((ROOT / "test" / "golden" / f"{name}.json").read_text())
        path = ROOT / "build" / "fixtures" / f"{name}.gguf"
        worst = 0.0
        for case in golden["cases"]:
            seq = case["prompt_tokens"] + case["tokens"]
            a = logits_for(path, seq, golden["settings"]["kv_type"], True)
            b = logits_for(path, seq, golden["settings"]["kv_type"], False)
            p = len(case["prompt_tokens"])
            for i, step in enumerate(case["steps"]):
                ids = step["top_ids"]
                worst = max(worst, float(np.abs(a[p - 1 + i][ids] - b[p - 1 + i][ids]).max()))
        print(f"{name:20s} llama.cpp repacked vs plain kernels: max |dlogit| {worst:.3g}")


if __name__ == "__main__":
    main(sys.argv[1:])
