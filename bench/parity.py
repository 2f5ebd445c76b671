#!/usr/bin/env python3
"""The parity gate: libgenie (Python bindings) against llama.cpp (llama-cpp-python) on
the same GGUF, the same prompts and the same sampler settings, token by token.

    PYTHONPATH=build/python python3 bench/parity.py MODEL.gguf [--n 32] [--threads 2] [--llama-repack off]

10 fixed prompts x temperatures 0, 0.7 and 1.0 (seed 1000 + prompt index; top_k 40,
top_p 0.95, min_p 0.05, no penalties). When the GGUF has a chat template the prompt is
rendered with it (by libgenie's renderer, and the same text goes to both). For each row:
identical, or the first position where the token ids differ. Needs llama-cpp-python
(scripts/setup --with-reference) and the genie module (build/python).
"""
import argparse
import sys

PROMPTS = [
    "Once upon a time",
    "The little dog was very happy because",
    "Lily and Tom went to the park.",
    "What is the capital of France?",
    "Turn on the kitchen light.",
    "Write a haiku about the sea.",
    "def fibonacci(n):",
    "The quick brown fox",
    "Explain why the sky is blue in one sentence.",
    "1, 2, 3, 4,",
]
TEMPERATURES = [0.0, 0.7, 1.0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--n", type=int, default=32, help="tokens per generation")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--llama-repack", choices=["on", "off"], default="on",
                    help="off: llama.cpp without its extra weight buffers (its --no-repack: no AMX, no CPU_REPACK; "
                         "where its AMX path crashes, docs/performance.md)")
    args = ap.parse_args()

    import genie
    import llama_cpp
    if args.llama_repack == "off":  # Llama() has no argument for it: patch the defaults it reads
        import llama_cpp.llama_cpp as lc_raw
        default_params = lc_raw.llama_model_default_params

        def no_repack_params():
            p = default_params()
            p.use_extra_bufts = False
            return p

        lc_raw.llama_model_default_params = no_repack_params

    model = genie.Model(args.model)
    session = genie.Session(model, context_length=args.ctx, threads=args.threads)
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=args.ctx, n_threads=args.threads, verbose=False,
                          flash_attn=False)
    template = model.chat_template

    rows = []
    for i, prompt in enumerate(PROMPTS):
        text = model.apply_chat_template([{"role": "user", "content": prompt}]) if template else prompt
        prompt_tokens = model.tokenize(text, add_special=True, parse_special=True)
        ref_prompt = llm.tokenize(text.encode(), add_bos=True, special=True)
        for temp in TEMPERATURES:
            seed = 1000 + i
            session.reset()
            ours = session.generate(prompt_tokens, max_tokens=args.n, temperature=temp, seed=seed, top_k=40,
                                    top_p=0.95, min_p=0.05, stop_on_eog=True).tokens
            llm.reset()
            llm.set_seed(seed)
            ref = []
            for token in llm.generate(ref_prompt, temp=temp, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0,
                                      reset=True):
                if llm.token_eos() == token or model.is_eog(token):
                    break
                ref.append(token)
                if len(ref) == args.n:
                    break
            first = next((k for k, (a, b) in enumerate(zip(ours, ref)) if a != b), None)
            if first is None and len(ours) != len(ref):
                first = min(len(ours), len(ref))
            rows.append((i, temp, prompt_tokens == ref_prompt, first, len(ours), len(ref)))

    print(f"model: {args.model}\nreference: llama-cpp-python {llama_cpp.__version__}; {args.n} tokens, "
          f"{args.threads} threads, chat template: {'yes' if template else 'no'}")
    print(f"{'prompt':>6} {'temp':>5} {'prompt ids':>10}  result")
    for i, temp, same_prompt, first, n_ours, n_ref in rows:
        result = "identical" if first is None else f"first divergence at token {first} (ours {n_ours}, ref {n_ref} tokens)"
        print(f"{i:>6} {temp:>5.1f} {'same' if same_prompt else 'DIFF':>10}  {result}")
    for temp in TEMPERATURES:
        same = sum(1 for r in rows if r[1] == temp and r[3] is None)
        print(f"summary: temperature {temp}: {same}/{len(PROMPTS)} identical")
    greedy_ok = all(r[3] is None for r in rows if r[1] == 0.0)
    return 0 if greedy_ok else 1


if __name__ == "__main__":
    sys.exit(main())
