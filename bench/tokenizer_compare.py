#!/usr/bin/env python3
"""libgenie tokenizer vs llama.cpp's (through llama-cpp-python), in one run.

  speed:  python3 bench/tokenizer_compare.py speed --build build [--mb 1]
          tokens/second tokenizing a ~1 MB English + code + CJK text with the Qwen3
          vocabulary (converted from ../shared/testdata/tokenizer/qwen by genie-cli), both
          tokenizers on the same machine, best of N runs; also checks the ids are equal.
  fuzz:   python3 bench/tokenizer_compare.py fuzz --build build [--n 300] [--seed 1]
          differential test: random strings (CJK, emoji, combining marks, odd whitespace,
          invalid UTF-8, special-token text) through both tokenizers for every vocabulary.

llama.cpp needs an architecture and hyper-parameters even for a vocab-only load, so the
converted vocabularies are copied with a few dummy hyper-parameters added (gguf-py).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "testdata"))
SEP = "\n__ggml_vocab_test__\n"


def llama_loadable(src, dst, arch):
    """Copies a GGUF vocabulary, adding the keys llama.cpp needs to load it vocab-only."""
    import gguf

    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, arch)
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                val = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                val = [field.parts[i].tolist()[0] for i in field.data]
            w.add_key_value(key, val, vtype, sub_type=sub)
        elif vtype == gguf.GGUFValueType.STRING:
            w.add_key_value(key, bytes(field.parts[field.data[0]]).decode("utf-8"), vtype)
        else:
            w.add_key_value(key, field.parts[field.data[0]].tolist()[0], vtype)
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-6)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def convert(build, hf_dir, out, extra=()):
    cli = os.path.join(build, "bin", "genie-cli")
    subprocess.run([cli, "convert-tokenizer", os.path.join(TESTDATA, "tokenizer", hf_dir), "-o", out, *extra],
                   check=True, stderr=subprocess.DEVNULL)


def vocabularies(build, tmp):
    """name -> (genie gguf, llama.cpp-loadable gguf)."""
    out = {}
    qwen = os.path.join(tmp, "qwen3.gguf")
    convert(build, "qwen", qwen, ["--arch", "qwen3", "--bos-token", "<|endoftext|>"])
    out["qwen2"] = (qwen, os.path.join(tmp, "qwen3-llama.gguf"), "qwen3")
    llama3 = os.path.join(tmp, "llama3.gguf")
    convert(build, "llama3", llama3, ["--arch", "llama"])
    out["llama-bpe"] = (llama3, os.path.join(tmp, "llama3-llama.gguf"), "llama")
    for name in ["gpt-2", "llama-spm", "phi-3", "deepseek-coder", "deepseek-llm", "falcon", "starcoder", "refact",
                 "mpt", "gpt-neox", "baichuan"]:
        p = os.path.join(TESTDATA, "tokenizer", "vocab", f"ggml-vocab-{name}.gguf")
        out[name] = (p, p, None)
    for name, (g, l, arch) in out.items():
        if arch:
            llama_loadable(g, l, arch)
    return out


def load_llama(path):
    import llama_cpp
    return llama_cpp.Llama(path, vocab_only=True, verbose=False)


def mixed_text(target_bytes, seed=7):
    rng = random.Random(seed)
    english = ("The quick brown fox jumps over the lazy dog. It's a truth universally acknowledged that "
               "a single man in possession of a good fortune must be in want of a wife. We've 3.14159 "
               "reasons, they'll say; I'd rather not.  Numbers: 1234567890, 2024-07-26, $19.99.\n")
    code = ("def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n"
            "for (size_t i = 0; i < v.size(); ++i) {\n\tsum += v[i] * 0x1F;  // accumulate\n}\n"
            "<div class=\"row\"><span>{{ value | json }}</span></div>\r\n")
    cjk = ("人工智能是计算机科学的一个分支，它企图了解智能的实质。東京は日本の首都です。"
           "한국어 텍스트도 포함됩니다. 「引用」と『書名』。\n")
    extra = "naïve café — “quotes” … emoji 😀👍🏽 e\u0301 a\u0308 \u00a0nbsp\u3000ideographic\n"
    parts = [english, code, cjk, extra]
    out = []
    size = 0
    while size < target_bytes:
        p = rng.choice(parts)
        out.append(p)
        size += len(p.encode("utf-8"))
    return "".join(out)


def cmd_speed(args):
    tmp = tempfile.mkdtemp(prefix="genie-tokbench-")
    vocab = vocabularies(args.build, tmp) if args.all else None
    qwen = os.path.join(tmp, "qwen3.gguf")
    if not vocab:
        convert(args.build, "qwen", qwen, ["--arch", "qwen3", "--bos-token", "<|endoftext|>"])
        llama_loadable(qwen, os.path.join(tmp, "qwen3-llama.gguf"), "qwen3")
    text = mixed_text(int(args.mb * 1024 * 1024))
    data = text.encode("utf-8")
    text_path = os.path.join(tmp, "text.txt")
    with open(text_path, "wb") as f:
        f.write(data)

    helper = os.path.join(args.build, "bin", "genie_tokenize_file")
    res = subprocess.run([helper, qwen, "--speed", text_path, "--repeat", str(args.repeat)], check=True,
                         capture_output=True, text=True)
    genie = json.loads(res.stdout)
    with open(text_path + ".ids") as f:
        genie_ids = [int(x) for x in f.read().split()]

    llm = load_llama(os.path.join(tmp, "qwen3-llama.gguf"))
    best = 1e30
    for _ in range(args.repeat):
        t = time.perf_counter()
        ids = llm.tokenize(data, add_bos=False, special=False)
        best = min(best, time.perf_counter() - t)
    same = ids == genie_ids
    g_tps = genie["tokens"] / genie["seconds"]
    l_tps = len(ids) / best
    print(f"text: {len(data)} bytes (English + code + CJK), Qwen3 vocab, best of {args.repeat}")
    print(f"  libgenie      : {genie['tokens']:8d} tokens in {genie['seconds']*1000:8.1f} ms = {g_tps/1e6:6.2f} M tokens/s"
          f"  (vocab load {genie['load_seconds']*1000:.0f} ms)")
    print(f"  llama.cpp     : {len(ids):8d} tokens in {best*1000:8.1f} ms = {l_tps/1e6:6.2f} M tokens/s"
          f"  (llama-cpp-python)")
    print(f"  speed-up      : {g_tps / l_tps:.2f}x   ids identical: {same}")
    return 0 if same else 1


def random_string(rng, specials):
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789", " ", "  ", "\t", "\n", "\r\n", "\n\n", "'s", "'LL", "'Re", "?!.,;:-_()[]{}<>/\\\"'`~@#$%^&*+=|",
        "你好世界中文字符测试", "日本語のテキストカタカナ", "한국어텍스트", "ÀÉÎÕÜàéîõüßøæ", "Ελληνικά Кириллица",
        "😀😃👍🏽🇫🇷👨‍👩‍👧", "\u0301\u0308\u0327", "\u00a0\u2009\u3000\u200b\u2028\u0085", "١٢٣٤٥ ٠", "½²³Ⅻ",
        "\U00031350\U0002EBF0\U00011F00",  # Unicode 15.x additions
    ]
    n = rng.randint(0, 12)
    s = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08 and specials:
            s.append(rng.choice(specials))
        else:
            pool = rng.choice(pools)
            k = rng.randint(1, 6)
            s.append("".join(rng.choice(pool) for _ in range(k)) if len(pool) > 3 else pool)
    b = "".join(s).encode("utf-8")
    if rng.random() < 0.15:  # invalid UTF-8
        pos = rng.randint(0, len(b))
        c = b[:pos] + bytes([rng.choice([0x80, 0xBF, 0xC0, 0xC3, 0xE4, 0xED, 0xF0, 0xF5, 0xFF])]) + b[pos:]
        if not decodes_above_max(c):  # llama.cpp throws (and aborts) on those; libgenie gives U+FFFD
            b = c
    return b


def decodes_above_max(b):
    """True when llama.cpp's lenient decoder would produce a code point above U+10FFFF."""
    i = 0
    while i < len(b):
        c = b[i]
        if c >= 0xF0 and c < 0xF8 and i + 3 < len(b) and all(0x80 <= x < 0xC0 for x in b[i + 1:i + 4]):
            cp = (c & 7) << 18 | (b[i + 1] & 0x3F) << 12 | (b[i + 2] & 0x3F) << 6 | (b[i + 3] & 0x3F)
            if cp > 0x10FFFF:
                return True
            i += 4
        else:
            i += 1
    return False


def cmd_fuzz(args):
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="genie-tokfuzz-")
    vocab = vocabularies(args.build, tmp)
    helper = os.path.join(args.build, "bin", "genie_tokenize_file")
    failures = 0
    for name, (gpath, lpath, _) in vocab.items():
        if args.only and name not in args.only.split(","):
            continue
        llm = load_llama(lpath)
        specials = ["<|im_start|>", "<|endoftext|>", "<think>", "</s>", "<s>", "<|end|>", "<|begin_of_text|>",
                    "<|eot_id|>", "<unk>", "<|assistant|>"]
        cases = [random_string(rng, specials) for _ in range(args.n)]
        inp = os.path.join(tmp, f"{name}.inp")
        with open(inp, "wb") as f:
            for c in cases:
                f.write(c + SEP.encode())
        for flags in ([], ["--add-special"], ["--parse-special"], ["--add-special", "--parse-special"]):
            res = subprocess.run([helper, gpath, "--vectors", inp, *flags], check=True, capture_output=True)
            got = res.stdout.decode().split("\n")[:-1]
            bad = 0
            for c, line in zip(cases, got):
                want = llm.tokenize(c, add_bos="--add-special" in flags, special="--parse-special" in flags)
                mine = [int(x) for x in line.split()]
                if mine != want:
                    bad += 1
                    if bad <= args.show:
                        print(f"  {name} {flags}: {c!r}\n    genie: {mine}\n    llama: {want}")
            failures += bad
            print(f"{name:15s} {' '.join(flags) or '(plain)':32s} {len(cases) - bad}/{len(cases)} identical")
        failures += fuzz_detokenize(llm, helper, gpath, cases, tmp, name, args)
    return 1 if failures else 0


def llama_detokenize(llm, ids, remove_special, render_special):
    import ctypes
    import llama_cpp
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(llm._model.vocab, arr, len(ids), buf, size, remove_special, render_special)
        if n >= 0:
            return buf.raw[:n]
        size = -n + 1


def llama_piece(llm, tid, render_special):
    import ctypes
    import llama_cpp
    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(llm._model.vocab, tid, buf, 256, 0, render_special)
    return buf.raw[:n]


def fuzz_detokenize(llm, helper, gpath, cases, tmp, name, args):
    """Detokenizes llama.cpp's ids of each case with both libraries (and every piece)."""
    rng = random.Random(args.seed + 1)
    id_lists = [llm.tokenize(c, add_bos=True, special=True) for c in cases]
    n_vocab = llm.n_vocab()
    id_lists += [[rng.randrange(n_vocab) for _ in range(rng.randint(0, 8))] for _ in range(len(cases))]
    path = os.path.join(tmp, f"{name}.ids")
    with open(path, "w") as f:
        for ids in id_lists:
            f.write(" ".join(map(str, ids)) + "\n")
    failures = 0
    for remove, render in [(False, False), (False, True), (True, False), (True, True)]:
        flags = (["--remove-special"] if remove else []) + (["--render-special"] if render else [])
        res = subprocess.run([helper, gpath, "--detokenize", path, *flags], check=True, capture_output=True)
        bad = 0
        for ids, line in zip(id_lists, res.stdout.decode().split("\n")):
            text_hex, pieces_hex = line.split("\t")
            want = llama_detokenize(llm, ids, remove, render)
            want_pieces = [llama_piece(llm, t, render).hex() for t in ids]
            if bytes.fromhex(text_hex) != want or pieces_hex.split() != [p for p in want_pieces if p]:
                bad += 1
                if bad <= args.show:
                    print(f"  {name} detok {flags}: {ids}\n    genie: {bytes.fromhex(text_hex)!r}\n    llama: {want!r}")
        failures += bad
        print(f"{name:15s} detokenize {' '.join(flags) or '(plain)':32s} {len(id_lists) - bad}/{len(id_lists)} identical")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["speed", "fuzz"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    sys.exit(cmd_speed(args) if args.mode == "speed" else cmd_fuzz(args))


if __name__ == "__main__":
    main()
