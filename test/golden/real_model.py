#!/usr/bin/env python3
"""Golden file for a real checkpoint: llama.cpp's (llama-cpp-python's) greedy path on long
prompts, with what test/integration/test_real_models.cpp needs to measure libgenie against it
teacher-forced: per step the top-20 ids and logits and the log of the softmax denominator
(so the reference token's log-probability is top_logits[0] - logsumexp). Beside it, the
yardstick: the same path through llama.cpp's plain CPU kernels (use_extra_bufts = false,
llama-cli's --no-repack), i.e. how far llama.cpp is from itself.

    .venv/bin/python test/golden/real_model.py models/gemma-3-270m-q4_k_m.gguf

Writes test/golden/real/<file stem>.json. Prompts are longer than 600 tokens so that a
Gemma 3 sliding window of 512 positions is exercised by the prompt itself.
"""
import hashlib
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "test" / "golden" / "real"
N_PREDICT = 64
TOP = 20
N_CTX = 2048

PROMPTS = [
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


def fingerprint(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_llama(path, repack):
    import llama_cpp
    import llama_cpp.llama_cpp as lc_raw

    original = lc_raw.llama_model_default_params

    def params():
        p = original()
        p.use_extra_bufts = repack
        return p

    lc_raw.llama_model_default_params = params
    try:
        return llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, n_batch=512, n_threads=2, logits_all=True,
                               verbose=False, flash_attn=False)
    finally:
        lc_raw.llama_model_default_params = original


def log_softmax_rows(rows):
    rows = np.asarray(rows, dtype=np.float64)
    m = rows.max(axis=1, keepdims=True)
    return rows - (m + np.log(np.exp(rows - m).sum(axis=1, keepdims=True)))


def main(path):
    import llama_cpp

    path = pathlib.Path(path)
    llm = make_llama(path, True)
    cases = []
    for prompt in PROMPTS:
        tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        if len(tokens) < 600:
            sys.exit(f"a prompt has {len(tokens)} tokens, fewer than 600")
        llm.reset()
        llm.eval(tokens)
        steps, generated = [], []
        for _ in range(N_PREDICT):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            top = np.argsort(-logits, kind="stable")[:TOP]
            m = float(logits.max())
            lse = m + float(np.log(np.exp(logits.astype(np.float64) - m).sum()))
            steps.append({"top_ids": [int(i) for i in top], "top_logits": [float(logits[i]) for i in top], "logsumexp": lse})
            generated.append(int(top[0]))
            llm.eval([int(top[0])])
        cases.append({"prompt": prompt, "prompt_tokens": tokens, "tokens": generated, "steps": steps})
    del llm

    # The yardstick: llama.cpp's plain kernels teacher-forced along the same path.
    plain = make_llama(path, False)
    agree = steps_total = 0
    max_dlp = max_dlogit = 0.0
    dlps = []
    for case in cases:
        seq = case["prompt_tokens"] + case["tokens"]
        plain.reset()
        plain.eval(seq)
        p = len(case["prompt_tokens"])
        rows = np.array(plain.scores[p - 1: p - 1 + N_PREDICT], dtype=np.float32)
        lsm = log_softmax_rows(rows)
        for i, step in enumerate(case["steps"]):
            ref = step["top_ids"][0]
            ref_lp = step["top_logits"][0] - step["logsumexp"]
            agree += int(np.argmax(rows[i])) == ref
            steps_total += 1
            d = abs(float(lsm[i][ref]) - ref_lp)
            dlps.append(d)
            max_dlp = max(max_dlp, d)
            max_dlogit = max(max_dlogit, float(np.abs(rows[i][step["top_ids"]] - np.array(step["top_logits"])).max()))
    yardstick = {"what": "llama.cpp plain kernels (use_extra_bufts=false) vs its default, teacher-forced on the same path",
                 "top1_agree": agree, "steps": steps_total, "max_abs_dlogprob": max_dlp,
                 "mean_abs_dlogprob": float(np.mean(dlps)), "max_abs_dlogit_top20": max_dlogit}
    data = {
        "model": path.name,
        "sha256": fingerprint(path),
        "reference": f"llama-cpp-python {llama_cpp.__version__}",
        "settings": {"n_ctx": N_CTX, "n_batch": 512, "n_threads": 2, "flash_attn": False, "kv_type": "f16",
                     "add_bos": True, "parse_special": True, "greedy": True, "n_predict": N_PREDICT},
        "yardstick": yardstick,
        "cases": cases,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{path.stem}.json"
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{out.relative_to(ROOT)}: {len(cases)} prompts ({', '.join(str(len(c['prompt_tokens'])) for c in cases)} tokens) "
          f"x {N_PREDICT}; yardstick {json.dumps(yardstick)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
