#!/usr/bin/env python3
"""Prefill and decode tokens/s of genie-cli vs llama.cpp (llama-cpp-python) on the same
GGUF with the same thread count, prompt length and number of generated tokens.

  bench/compare_decode.py --model /tmp/q06.gguf [--cli build/bin/genie-cli]
      [--threads 2] [--prompt-tokens 512] [--gen 128] [--repeat 1]

Prints one line per side and the ratios genie/llama.cpp (prefill = pp, decode = tg).
llama.cpp: the prompt is evaluated in one batch (n_batch = n_ubatch = prompt length),
then `gen` tokens are decoded one by one greedily, timed separately.
"""
import argparse
import re
import subprocess
import sys
import time


def make_prompt(llm, n_tokens):
    words = ("the quick brown fox jumps over the lazy dog while seven wizards quietly "
             "discuss numbers letters and colours in a small old library ").split()
    text, i = "", 0
    while True:
        candidate = text + words[i % len(words)] + " "
        if len(llm.tokenize(candidate.encode(), add_bos=False, special=False)) > n_tokens - 1:
            return text
        text, i = candidate, i + 1


def run_llama(model, threads, prompt, gen, ctx):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model, n_threads=threads, n_threads_batch=threads, n_ctx=ctx,
                          n_batch=ctx, n_ubatch=ctx, verbose=False, logits_all=False)
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(tokens)
    t1 = time.perf_counter()
    for _ in range(gen):
        tok = int(llm.scores[llm.n_tokens - 1].argmax())
        llm.eval([tok])
    t2 = time.perf_counter()
    return len(tokens), len(tokens) / (t1 - t0), gen / (t2 - t1)


def run_genie(cli, model, threads, prompt, gen, ctx):
    out = subprocess.run([cli, "run", "-m", model, "-p", prompt, "-n", str(gen), "-t", str(threads), "-c", str(ctx),
                          "--temp", "0", "--ignore-eos", "--verbose"], capture_output=True, text=True, check=True)
    m = re.search(r"prompt: (\d+) tokens .*?, ([\d.]+) t/s .*generated: (\d+) tokens, ([\d.]+) t/s", out.stderr + out.stdout)
    if not m:
        sys.exit(f"cannot parse genie-cli output:\n{out.stderr}")
    return int(m.group(1)), float(m.group(2)), float(m.group(4))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--cli", default="build/bin/genie-cli")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", choices=["genie", "llama"], default=None)
    a = ap.parse_args()
    import llama_cpp
    tok = llama_cpp.Llama(model_path=a.model, vocab_only=True, verbose=False)
    prompt = make_prompt(tok, a.prompt_tokens)
    del tok
    ctx = a.prompt_tokens + a.gen + 16
    best = {}
    for side, fn in (("llama.cpp", lambda: run_llama(a.model, a.threads, prompt, a.gen, ctx)),
                     ("genie", lambda: run_genie(a.cli, a.model, a.threads, prompt, a.gen, ctx))):
        if a.only and not side.startswith(a.only):
            continue
        runs = [fn() for _ in range(a.repeat)]
        n = runs[0][0]
        pp, tg = max(r[1] for r in runs), max(r[2] for r in runs)
        best[side] = (pp, tg)
        print(f"{side:10s} threads={a.threads} prompt={n} tokens: pp {pp:8.1f} t/s | gen={a.gen}: tg {tg:7.2f} t/s", flush=True)
    if len(best) == 2:
        (gp, gt), (lp, lt) = best["genie"], best["llama.cpp"]
        print(f"ratio genie/llama.cpp: prefill {gp / lp:.2f}x, decode {gt / lt:.2f}x")


if __name__ == "__main__":
    main()
