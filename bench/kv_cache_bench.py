#!/usr/bin/env python3
"""INT8 (Q8_0) vs F16 (and F32) KV cache: memory, prefill and decode speed at a long-ish
context, and the cost of KV persistence (save_state / load_state, the model fingerprint).

    PYTHONPATH=build/python python3 bench/kv_cache_bench.py MODEL.gguf [--prompt 1024,2048] \\
        [--gen 32] [--threads 2] [--kv f16,q8_0] [--repeat 2]

Prompts are random ordinary token ids (seeded), so the figures do not depend on a text.
Prints a Markdown table (docs/performance.md "KV cache: INT8 vs F16")."""

import argparse
import os
import random
import sys
import tempfile
import time

import genie

ROW_BYTES = {"f16": lambda n: 2 * n, "f32": lambda n: 4 * n, "q8_0": lambda n: n // 32 * 34}


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt", default="1024,2048")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv", default="f16,q8_0")
    ap.add_argument("--repeat", type=int, default=2, help="runs per cell; the best is reported")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = genie.Model(args.model)
    load_s = time.perf_counter() - t0
    info = model.info
    n_layer, n_head_kv, head_dim = info["n_layer"], info["n_head_kv"], info["head_dim"]
    vocab = model.n_vocab
    rng = random.Random(1234)
    print(f"model {os.path.basename(args.model)}: {n_layer} layers, {n_head_kv} KV heads x {head_dim}, "
          f"vocab {vocab}, weights {info['weight_bytes'] / 2**20:.0f} MiB, load {load_s:.2f} s, "
          f"threads {args.threads}", file=sys.stderr)

    rows = []
    tmp = tempfile.mkdtemp(prefix="genie-kv-bench-")
    # The model fingerprint: computed on a Model's first save/load, then cached. Timed as the
    # first minus the second save of an empty state.
    empty = genie.Session(model, context_length=64, threads=args.threads)
    probe = os.path.join(tmp, "empty.gkv")
    t = time.perf_counter()
    empty.save_state(probe)
    first = time.perf_counter() - t
    t = time.perf_counter()
    empty.save_state(probe)
    fingerprint_s = first - (time.perf_counter() - t)
    os.unlink(probe)
    del empty
    for n_prompt in [int(x) for x in args.prompt.split(",")]:
        n_ctx = n_prompt + args.gen + 8
        tokens = [rng.randrange(1000, min(vocab, 100000)) for _ in range(n_prompt)]
        for kv in args.kv.split(","):
            rss0 = rss_bytes()
            s = genie.Session(model, context_length=n_ctx, threads=args.threads, kv_type=kv)
            rss_kv = rss_bytes() - rss0
            kv_bytes = 2 * n_layer * n_ctx * ROW_BYTES[kv](n_head_kv * head_dim)
            best_pp = best_tg = 0.0
            for _ in range(args.repeat):
                s.reset()
                r = s.generate(tokens, max_tokens=args.gen, temperature=0.0, stop_on_eog=False)
                best_pp = max(best_pp, r.timings.prompt_tokens_per_s)
                best_tg = max(best_tg, r.timings.decode_tokens_per_s)
            path = os.path.join(tmp, f"{kv}-{n_prompt}.gkv")
            t = time.perf_counter()
            size = s.save_state(path)
            save_s = time.perf_counter() - t
            fresh = genie.Session(model, context_length=n_ctx, threads=args.threads, kv_type=kv)
            t = time.perf_counter()
            fresh.load_state(path)
            load_state_s = time.perf_counter() - t
            os.unlink(path)
            rows.append((n_prompt, kv, kv_bytes, rss_kv, best_pp, best_tg, size, save_s, load_state_s))
            del s, fresh
    os.rmdir(tmp)

    print(f"| context (prompt + {args.gen}) | KV type | KV bytes (allocated) | RSS growth | prefill t/s | decode t/s "
          f"| state file | save | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n_prompt, kv, kv_bytes, rss_kv, pp, tg, size, save_s, load_s in rows:
        print(f"| {n_prompt} | {kv} | {kv_bytes / 2**20:.1f} MiB | {rss_kv / 2**20:.1f} MiB | {pp:.1f} | {tg:.2f} "
              f"| {size / 2**20:.1f} MiB | {save_s * 1000:.0f} ms | {load_s * 1000:.0f} ms |")
    print(f"\nmodel fingerprint ({info['weight_bytes'] / 2**20:.0f} MiB of tensor data, once per loaded model): "
          f"{fingerprint_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
