#!/usr/bin/env python3
"""Parity on real checkpoints: libgenie against llama.cpp, with llama.cpp against itself
as the yardstick.

    PYTHONPATH=build/python .venv/bin/python bench/real_parity.py MODEL_NAME... \
        [--steps 48] [--server-bin DIR] [--write-golden] [--json OUT]

MODEL_NAME is a scripts/get-model name (the file is looked up in models/). For every case
of the prompt set below (chat prompts rendered through each side's own chat template, and
raw prompts; for a model with a sliding window also two raw prompts of 600+ tokens):
  1. the reference: llama.cpp (llama-cpp-python, its default repacked CPU kernels) decodes
     greedily, one token at a time, and keeps the full next-token distribution of each step;
  2. the yardstick: llama.cpp without its repacked kernels (llama-server's --no-repack:
     use_extra_bufts = false) teacher-forced on the reference's greedy path;
  3. libgenie (Python bindings), teacher-forced on the same path, one token at a time.
For 2 and 3 against 1: rendered-template equality (libgenie's renderer against the
reference's: llama-server's /apply-template when --server-bin names the reference build,
else llama-cpp-python's Jinja2 formatter), prompt-token equality, top-1 agreement with the
reference's greedy token, max and mean |Δ log-prob| of the reference's top token, and the
mean KL divergence KL(reference || other) over the full vocabulary.

--write-golden writes test/golden/real/<name>.json (prompt tokens, the greedy path, the
reference's top-20 log-probabilities per step, and the yardstick's figures), which
test/integration/test_golden_real.cpp replays whenever the model is in models/.
Needs llama-cpp-python (scripts/setup --with-reference) and build/python.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import urllib.request

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOLDEN_DIR = ROOT / "test" / "golden" / "real"
TOP = 20
N_CTX = 1024

SYSTEM = "You are a helpful voice assistant in a smart home. Answer briefly."
CASES = [
    {"kind": "chat", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
    {"kind": "chat", "messages": [{"role": "system", "content": SYSTEM},
                                  {"role": "user", "content": "Turn on the kitchen lights at 40 percent."}]},
    {"kind": "chat", "messages": [{"role": "user", "content": "Write a haiku about the sea."}]},
    {"kind": "chat", "messages": [{"role": "user", "content": "Explain in two sentences why the sky is blue."}]},
    {"kind": "chat", "messages": [{"role": "system", "content": SYSTEM},
                                  {"role": "user", "content": "Set a timer for ten minutes."},
                                  {"role": "assistant", "content": "Timer set for ten minutes."},
                                  {"role": "user", "content": "And remind me to check the oven when it ends."}]},
    {"kind": "chat", "messages": [{"role": "user", "content": "Write a Python function that reverses a string."}]},
    {"kind": "chat", "messages": [{"role": "user", "content": "Wie spät ist es in Tokio, wenn es in Berlin 12 Uhr ist?"}]},
    {"kind": "chat", "messages": [{"role": "user", "content": "List three fruits as a JSON array."}]},
    {"kind": "raw", "text": "The quick brown fox"},
    {"kind": "raw", "text": "def fibonacci(n):\n    "},
    {"kind": "raw", "text": "Once upon a time, in a small village by the sea,"},
    {"kind": "raw", "text": "1, 1, 2, 3, 5, 8,"},
]

# Prompts of 600+ tokens, added for models with a sliding window (Gemma 3: 512 positions),
# so that the window is exercised by the prompt itself.
LONG_PROMPTS = [
    # A story (plain prose, ~650 tokens).
    "The lighthouse keeper's daughter had never seen the mainland. Her whole life had been measured by the turning "
    "of the great lamp above her bedroom, by the tides that rose and fell against the black rocks, and by the supply "
    "boat that came every second Thursday with flour, oil, letters and newspapers that were already a week old. Her "
    "father said the island was the safest place in the world, because nothing could reach it that the sea did not "
    "allow. Her mother, who had grown up in a city of bridges and bells, said nothing at all when he said this, but "
    "she kept a box of postcards under her bed and sometimes, late at night, she read them aloud in a low voice. "
    "There were pictures of markets full of oranges, of trains crossing valleys on thin iron legs, of theatres with "
    "red curtains and of a cathedral whose towers were so tall that the clouds seemed to snag on them. The girl "
    "learned the names of those places the way other children learn the names of their cousins. She knew that the "
    "market was open on Saturdays, that the train left at seven in the morning and that the cathedral bells rang "
    "twelve times at noon and once every quarter of an hour in between. When she was eleven years old a storm came "
    "that was worse than any her father could remember. It started as a dull grey line on the horizon in the "
    "afternoon, and by evening the wind was strong enough to lift the shutters off their hinges. The supply boat "
    "had not come that week, and the radio had been silent for two days because the aerial had snapped in an "
    "earlier gale. Her father climbed the stairs to the lamp every hour to clean the salt from the glass, and each "
    "time he came down he looked older. Around midnight they saw the lights of a ship, small and swinging wildly, "
    "much too close to the reef on the northern side of the island. Her father lit every lantern they owned and "
    "hung them along the path to the cove, because the cove was the only place where a boat could come ashore "
    "without being broken to pieces. Her mother wrapped blankets around the stove to warm them and put a kettle on "
    "the fire. The girl was told to stay in the kitchen, but she went up to the lamp room instead, where she could "
    "see the whole of the sea. From there she watched the ship turn, slowly and then more quickly, away from the "
    "reef and towards the cove. She watched a small boat being lowered from its side and rowed through the white "
    "water by people who had clearly never rowed before. She counted them as they came up the path between the "
    "lanterns: nine people, two of them children, one of them an old woman who was carried on a chair. In the "
    "morning the storm was gone and the sea was as flat and bright as a plate. Broken planks and a single red "
    "shoe had washed up in the cove, and the ship itself lay tilted on a sandbank, its masts pointing at the sky "
    "like the hands of a clock that had stopped. The old woman sat by the stove "
    "drinking tea and asked the girl what she wanted to be when she grew up. The girl said that she wanted to see "
    "the cathedral whose towers caught the clouds, and the old woman laughed and said",
    # An explanation (expository prose, ~640 tokens).
    "A bicycle is one of the most efficient machines that people have ever built, and the reasons for this are "
    "worth understanding in some detail. The first reason is that the rider's muscles are used in the way they work "
    "best. The large muscles of the legs push down on the pedals in a smooth circular motion, and the gears allow "
    "the rider to keep the pedals turning at a comfortable speed whether the road is flat, steep or downhill. A "
    "person walking lifts their whole body a little with every step and then lets it fall again, which wastes "
    "energy, but a person on a bicycle stays at the same height and only has to push the machine forward. The "
    "second reason is that very little energy is lost to friction. The wheels turn on ball bearings, the chain runs "
    "over well-shaped teeth, and a well-oiled chain transfers almost all of the force that reaches it. The tyres "
    "are narrow and pumped to a high pressure, so that only a small patch of rubber touches the ground and the "
    "rolling resistance is low. The third reason is weight. A good bicycle weighs much less than its rider, so most "
    "of the energy goes into moving the person rather than the machine. Compare this with a car, which may weigh "
    "twenty times as much as the driver and must carry its own engine, fuel and frame wherever it goes. At low "
    "speeds the main force that a cyclist has to overcome is rolling resistance, but as the speed increases the "
    "resistance of the air becomes more and more important. Air resistance grows with the square of the speed, and "
    "the power needed to overcome it grows with the cube of the speed. This is why riding at thirty kilometres per "
    "hour takes much more than twice the effort of riding at fifteen, and why racing cyclists crouch low over their "
    "handlebars and ride close behind one another. A rider in the middle of a group can save a third of their "
    "effort by sheltering from the wind. Hills are a different matter. When a cyclist climbs a hill, most of the "
    "work goes into lifting the rider and the bicycle against gravity, and here weight matters far more than shape. "
    "A light rider on a light bicycle has a great advantage on a long climb, while a heavy rider may be faster on "
    "the descent that follows. The gears help the rider to spread the work over more turns of the pedals, so that "
    "each push is lighter, but they cannot reduce the total amount of work that has to be done. Engineers have "
    "spent more than a century improving each of these parts, and yet the basic shape of the bicycle has hardly "
    "changed since the safety bicycle appeared at the end of the nineteenth century. Materials have changed a "
    "great deal: steel gave way to aluminium, aluminium to titanium and carbon fibre, and wooden rims to alloy "
    "ones. Brakes moved from rubber blocks pressing on the rim to discs bolted to the hub, which keep working "
    "in the rain. Tyres gained tubes, lost them again, and learned to seal their own small punctures with a "
    "liquid that hardens in the air. Yet a rider from a hundred years ago would recognise a modern racing "
    "bicycle at once and could ride it without a lesson. The frame is still two "
    "triangles, the wheels are still the same size, and the rider still sits in almost the same position. The "
    "reason for this is simple:",
]

def model_path(name: str) -> pathlib.Path:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "get-model"), "--path", name],
                         check=True, capture_output=True, text=True).stdout.strip()
    path = pathlib.Path(out)
    if not path.exists():
        sys.exit(f"{path} is missing: scripts/get-model {name}")
    return path


def sha256_of(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def llama(path: pathlib.Path, threads: int, repack: bool):
    """llama-cpp-python with or without the repacked CPU weight buffers (Llama() has no
    argument for it: the default model parameters it reads are patched)."""
    import llama_cpp
    import llama_cpp.llama as llama_module

    original = llama_cpp.llama_model_default_params

    def params():
        p = original()
        p.use_extra_bufts = repack
        return p

    llama_module.llama_cpp.llama_model_default_params = params
    try:
        return llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, n_batch=512, n_threads=threads,
                               n_threads_batch=threads, logits_all=False, verbose=False, flash_attn=False)
    finally:
        llama_module.llama_cpp.llama_model_default_params = original


CHATML = ("{%- for message in messages -%}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
          "'<|im_end|>\\n' -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}"
          "{%- endif -%}")


def reference_render(llm, messages, server) -> str:
    if server is not None:
        return server.apply_template(messages)
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    # Without a template in the GGUF llama-server renders ChatML (common_chat_templates_init).
    template = llm.metadata.get("tokenizer.chat_template") or CHATML
    bos = llm.detokenize([llm.token_bos()], special=True).decode() if llm.token_bos() >= 0 else ""
    eos = llm.detokenize([llm.token_eos()], special=True).decode() if llm.token_eos() >= 0 else ""
    return Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos, add_generation_prompt=True)(
        messages=messages).prompt


class ReferenceServer:
    """llama-server of the reference build (scripts/build-reference), for /apply-template."""

    def __init__(self, bin_dir: str, model: pathlib.Path, port: int = 18931):
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([os.path.join(bin_dir, "llama-server"), "-m", str(model), "--port", str(port),
                                      "-c", "512", "-t", "1", "--jinja"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        import time
        for _ in range(600):
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except Exception:
                time.sleep(0.1)
        self.close()
        raise RuntimeError("llama-server did not become healthy")

    def apply_template(self, messages) -> str:
        req = urllib.request.Request(self.url + "/apply-template", data=json.dumps({"messages": messages}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["prompt"]

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def last_logits(llm) -> np.ndarray:
    """The last evaluated token's logits (Llama.scores is only filled with logits_all)."""
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float32)


def greedy_path(llm, prompt_tokens, steps):
    """The reference: greedy, one token at a time; each step's full log-distribution."""
    llm.reset()
    llm.eval(prompt_tokens)
    dists, tokens = [], []
    for _ in range(steps):
        lp = log_softmax(last_logits(llm))
        token = int(np.argmax(lp))
        dists.append(lp)
        tokens.append(token)
        llm.eval([token])
    return tokens, dists


def forced_llama(llm, prompt_tokens, tokens):
    llm.reset()
    llm.eval(prompt_tokens)
    out = []
    for t in tokens:
        out.append(log_softmax(last_logits(llm)))
        llm.eval([t])
    return out


def forced_genie(session, prompt_tokens, tokens):
    session.reset()
    seq = list(prompt_tokens)
    out = []
    for t in tokens:
        out.append(log_softmax(np.asarray(session.evaluate(seq), dtype=np.float32)))
        seq.append(t)
    return out


def compare(ref_tokens, ref_dists, other):
    agree, deltas, kls = 0, [], []
    for token, lp_ref, lp in zip(ref_tokens, ref_dists, other):
        agree += int(np.argmax(lp)) == token
        deltas.append(abs(float(lp[token] - lp_ref[token])))
        p = np.exp(lp_ref)
        kls.append(float((p * (lp_ref - lp)).sum()))
    return {"steps": len(ref_tokens), "top1": agree, "max_dlogprob": max(deltas), "sum_dlogprob": sum(deltas),
            "sum_kl": sum(kls)}


def merge(acc, part):
    if not acc:
        return dict(part)
    return {"steps": acc["steps"] + part["steps"], "top1": acc["top1"] + part["top1"],
            "max_dlogprob": max(acc["max_dlogprob"], part["max_dlogprob"]),
            "sum_dlogprob": acc["sum_dlogprob"] + part["sum_dlogprob"], "sum_kl": acc["sum_kl"] + part["sum_kl"]}


def summary(acc):
    n = acc["steps"]
    return {"steps": n, "top1_agreement": acc["top1"] / n, "max_abs_dlogprob": acc["max_dlogprob"],
            "mean_abs_dlogprob": acc["sum_dlogprob"] / n, "mean_kl": acc["sum_kl"] / n}


def run_model(name, args):
    import genie
    import llama_cpp

    path = model_path(name)
    ref = llama(path, args.llama_threads, repack=True)
    plain = llama(path, args.llama_threads, repack=False)
    model = genie.Model(str(path))
    session = genie.Session(model, context_length=N_CTX, threads=args.threads)
    server = ReferenceServer(args.server_bin, path) if args.server_bin else None
    arch = ref.metadata.get("general.architecture", "")
    cases = CASES + ([{"kind": "raw", "text": t} for t in LONG_PROMPTS]
                     if f"{arch}.attention.sliding_window" in ref.metadata else [])
    rows, golden_cases = [], []
    acc_genie, acc_plain = {}, {}
    template_equal = tokens_equal = n_chat = 0
    try:
        for case in cases:
            if case["kind"] == "chat":
                n_chat += 1
                text = reference_render(ref, case["messages"], server)
                ours = model.apply_chat_template(case["messages"])
                template_equal += ours == text
                if ours != text:
                    print(f"  template differs:\n    ref  {text!r}\n    ours {ours!r}", file=sys.stderr)
            else:
                text = case["text"]
            prompt_tokens = ref.tokenize(text.encode(), add_bos=True, special=True)
            our_tokens = model.tokenize(text, add_special=True, parse_special=True)
            tokens_equal += list(our_tokens) == prompt_tokens
            tokens, dists = greedy_path(ref, prompt_tokens, args.steps)
            g = compare(tokens, dists, forced_genie(session, prompt_tokens, tokens))
            p = compare(tokens, dists, forced_llama(plain, prompt_tokens, tokens))
            acc_genie, acc_plain = merge(acc_genie, g), merge(acc_plain, p)
            rows.append((case, g, p))
            golden_cases.append({
                "kind": case["kind"], **({"messages": case["messages"]} if case["kind"] == "chat" else {}),
                "prompt": text, "prompt_tokens": prompt_tokens, "tokens": tokens,
                "steps": [{"top_ids": [int(i) for i in np.argsort(-d, kind="stable")[:TOP]],
                           "top_logprobs": [round(float(d[i]), 6) for i in np.argsort(-d, kind="stable")[:TOP]]}
                          for d in dists],
            })
    finally:
        if server:
            server.close()
    result = {"model": name, "file": path.name, "reference": f"llama-cpp-python {llama_cpp.__version__}",
              "cases": len(golden_cases), "chat_cases": n_chat, "template_equal": template_equal,
              "prompt_tokens_equal": tokens_equal, "genie": summary(acc_genie), "yardstick": summary(acc_plain)}
    if args.write_golden:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        golden = {"model": name, "file": path.name, "sha256": sha256_of(path), "reference": result["reference"],
                  "settings": {"n_ctx": N_CTX, "n_threads": args.threads, "flash_attn": False, "kv_type": "f16",
                               "greedy": True, "steps": args.steps, "top": TOP},
                  "yardstick": result["yardstick"], "cases": golden_cases}
        out = GOLDEN_DIR / f"{name}.json"
        out.write_text(json.dumps(golden, separators=(",", ":")) + "\n")
        print(f"wrote {out.relative_to(ROOT)}", file=sys.stderr)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2, help="libgenie's threads")
    ap.add_argument("--llama-threads", type=int, default=1,
                    help="llama.cpp's threads (its OpenMP workers spin at barriers: on a busy 2-core machine 2 "
                         "threads ran ~70x slower than 1; a row's dot product does not depend on the count)")
    ap.add_argument("--server-bin", help="the reference build's bin folder (scripts/build-reference --print)")
    ap.add_argument("--write-golden", action="store_true")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    results = [run_model(name, args) for name in args.models]
    print("| model | cases | template equal | prompt tokens equal | top-1 genie / llama.cpp self | "
          "max \\|Δ logprob\\| genie / self | mean \\|Δ\\| genie / self | mean KL genie / self |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        g, y = r["genie"], r["yardstick"]
        print(f"| {r['model']} | {r['cases']} | {r['template_equal']}/{r['chat_cases']} | "
              f"{r['prompt_tokens_equal']}/{r['cases']} | {100 * g['top1_agreement']:.1f} % / "
              f"{100 * y['top1_agreement']:.1f} % | {g['max_abs_dlogprob']:.3f} / {y['max_abs_dlogprob']:.3f} | "
              f"{g['mean_abs_dlogprob']:.4f} / {y['mean_abs_dlogprob']:.4f} | {g['mean_kl']:.2e} / {y['mean_kl']:.2e} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
