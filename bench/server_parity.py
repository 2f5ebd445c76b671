#!/usr/bin/env python3
"""The server gate: genie-server against llama-server on the same real model, and, as the
yardstick, llama-server against itself (default kernels against --no-repack).

    bench/server_parity.py MODEL_NAME [--genie build/bin/genie-server]
        [--llama-bin "$(scripts/build-reference --print)"] [--max-tokens 48] [--json OUT]

MODEL_NAME is a scripts/get-model name (or a path to a GGUF). For 10 chat prompts x
temperatures 0 / 0.7 / 1.0 with a fixed seed per prompt (top_k 40, top_p 0.95, min_p 0.05,
no penalties), each request is sent non-streamed and streamed to every server, and the
table reports:
  - final strings identical to the reference's (llama-server, default kernels), per
    temperature;
  - streamed deltas joined == the server's own non-streamed string;
  - SSE framing: every event a `data: ` line followed by a blank line, `[DONE]` last;
  - chunk key shapes: the set of key paths of the first, a middle and the last chunk,
    and of the non-streamed body, equal to the reference's;
  - bad requests (malformed JSON, no messages, a message without role, a wrong type for
    max_tokens, an unknown endpoint): status and error-body key shape equal to the
    reference's.
Needs the reference build (scripts/build-reference). Loopback only.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

PROMPTS = [
    "What is the capital of France?",
    "Turn on the kitchen lights at 40 percent.",
    "Write a haiku about the sea.",
    "Explain in two sentences why the sky is blue.",
    "Set a timer for ten minutes.",
    "Write a Python function that reverses a string.",
    "What is 17 times 23?",
    "Give me three ideas for dinner tonight.",
    "Translate 'good morning' into German and French.",
    "Tell me a short joke.",
]
TEMPERATURES = [0.0, 0.7, 1.0]
BAD_REQUESTS = [
    ("malformed JSON", "/v1/chat/completions", b'{"messages": [', "application/json"),
    ("no messages", "/v1/chat/completions", b'{"max_tokens": 4}', "application/json"),
    ("message without role", "/v1/chat/completions", b'{"messages": [{"content": "hi"}]}', "application/json"),
    ("max_tokens a string", "/v1/chat/completions",
     b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"}', "application/json"),
    ("unknown endpoint", "/v1/nothing-here", b"{}", "application/json"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, argv: list[str], port: int):
        self.name, self.port = name, port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                status, _, _ = self.request("GET", "/health", None)
                if status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}: {' '.join(argv)}")
            time.sleep(0.2)
        self.close()
        raise RuntimeError(f"{name} did not become healthy")

    def request(self, method, path, body, content_type="application/json"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": content_type} if body is not None else {})
            r = conn.getresponse()
            return r.status, r.getheader("Content-Type", ""), r.read()
        finally:
            conn.close()

    def chat(self, prompt, temperature, seed, max_tokens, stream):
        body = {"messages": [{"role": "user", "content": prompt}], "temperature": temperature, "seed": seed,
                "top_k": 40, "top_p": 0.95, "min_p": 0.05, "max_tokens": max_tokens, "stream": stream,
                "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
        return self.request("POST", "/v1/chat/completions", json.dumps(body).encode())

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def key_paths(value, prefix="") -> set[str]:
    """The structure of a JSON value: the set of its key paths (list items merged as [])."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + "." + k)
            out |= key_paths(v, prefix + "." + k)
    elif isinstance(value, list):
        for v in value:
            out |= key_paths(v, prefix + "[]")
    return out


VOLATILE = {".id", ".created", ".system_fingerprint", ".timings", ".usage", ".model"}


def shape(value) -> frozenset[str]:
    return frozenset(p for p in key_paths(value) if not any(p == v or p.startswith(v + ".") for v in VOLATILE))


def parse_sse(raw: bytes):
    """Returns (chunks, framing_ok, done_last)."""
    text = raw.decode("utf-8", errors="replace")
    events = [e for e in text.split("\n\n")]
    framing_ok = text.endswith("\n\n")
    chunks, done_last = [], False
    payloads = []
    for e in events:
        if not e.strip():
            continue
        lines = e.split("\n")
        if len(lines) != 1 or not lines[0].startswith("data: "):
            framing_ok = False
            continue
        payloads.append(lines[0][len("data: "):])
    for i, p in enumerate(payloads):
        if p == "[DONE]":
            done_last = i == len(payloads) - 1
            continue
        chunks.append(json.loads(p))
    return chunks, framing_ok, done_last


def joined(chunks) -> str:
    return "".join((c.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for c in chunks)


def run_server(server: Server, max_tokens: int):
    results = {}
    for i, prompt in enumerate(PROMPTS):
        for temp in TEMPERATURES:
            seed = 1000 + i
            status, _, body = server.chat(prompt, temp, seed, max_tokens, stream=False)
            final = json.loads(body)
            text = final["choices"][0]["message"].get("content") or "" if status == 200 else None
            s_status, _, s_body = server.chat(prompt, temp, seed, max_tokens, stream=True)
            chunks, framing, done_last = parse_sse(s_body) if s_status == 200 else ([], False, False)
            results[(i, temp)] = {
                "status": status, "text": text, "body_shape": shape(final),
                "stream_text": joined(chunks), "framing": framing, "done_last": done_last,
                "chunk_shapes": [shape(chunks[0]), shape(chunks[len(chunks) // 2]), shape(chunks[-1])] if chunks else [],
            }
    bad = {}
    for name, path, body, ctype in BAD_REQUESTS:
        status, _, raw = server.request("POST", path, body, ctype)
        try:
            b = json.loads(raw)
        except ValueError:
            b = None
        bad[name] = (status, shape(b) if b is not None else None)
    return results, bad


def compare(ref, other):
    (rr, rb), (orr, ob) = ref, other
    row = {}
    for temp in TEMPERATURES:
        keys = [k for k in rr if k[1] == temp]
        row[f"identical_t{temp}"] = sum(1 for k in keys if orr[k]["text"] is not None and orr[k]["text"] == rr[k]["text"])
    row["n_per_temp"] = len(PROMPTS)
    row["stream_equals_final"] = sum(1 for k in orr if orr[k]["stream_text"] == orr[k]["text"])
    row["sse_framing"] = sum(1 for k in orr if orr[k]["framing"] and orr[k]["done_last"])
    row["chunk_shapes_equal"] = sum(1 for k in orr if orr[k]["chunk_shapes"] == rr[k]["chunk_shapes"])
    row["body_shape_equal"] = sum(1 for k in orr if orr[k]["body_shape"] == rr[k]["body_shape"])
    row["requests"] = len(orr)
    row["bad_requests_equal"] = sum(1 for k in rb if ob[k] == rb[k])
    row["bad_requests"] = len(rb)
    row["bad_request_diffs"] = {k: {"reference": [rb[k][0], sorted(rb[k][1] or [])], "other": [ob[k][0], sorted(ob[k][1] or [])]}
                                for k in rb if ob[k] != rb[k]}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--genie", default=str(ROOT / "build" / "bin" / "genie-server"))
    ap.add_argument("--llama-bin", default=None, help="the reference build's bin folder")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--json")
    args = ap.parse_args()
    model = args.model
    if not os.path.exists(model):
        model = subprocess.run([sys.executable, str(ROOT / "scripts" / "get-model"), model], check=True,
                               capture_output=True, text=True).stdout.strip()
    llama_bin = args.llama_bin or subprocess.run([str(ROOT / "scripts" / "build-reference"), "--print"], check=True,
                                                 capture_output=True, text=True).stdout.strip()
    llama_server = os.path.join(llama_bin, "llama-server")
    if not os.access(llama_server, os.X_OK):
        sys.exit(f"{llama_server} is missing: run scripts/build-reference")
    common = ["-m", model, "-c", str(args.ctx), "-t", str(args.threads)]
    runs = {}
    for name, argv in [
        ("llama-server", [llama_server, *common, "--jinja", "-np", "1"]),
        ("llama-server --no-repack", [llama_server, *common, "--jinja", "-np", "1", "--no-repack"]),
        ("genie-server", [args.genie, *common]),
    ]:
        port = free_port()
        server = Server(name, argv + ["--port", str(port)], port)
        try:
            runs[name] = run_server(server, args.max_tokens)
        finally:
            server.close()
    ref = runs["llama-server"]
    rows = {name: compare(ref, runs[name]) for name in ("genie-server", "llama-server --no-repack")}
    print(f"model: {model}; {len(PROMPTS)} chat prompts x T = {TEMPERATURES}, seed 1000 + i, {args.max_tokens} tokens")
    print("| against llama-server (default kernels) | identical T=0 | T=0.7 | T=1.0 | stream == final | "
          "SSE framing + [DONE] last | chunk shapes | body shape | bad requests (status + error shape) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        n, q = r["n_per_temp"], r["requests"]
        print(f"| {name} | {r['identical_t0.0']}/{n} | {r['identical_t0.7']}/{n} | {r['identical_t1.0']}/{n} | "
              f"{r['stream_equals_final']}/{q} | {r['sse_framing']}/{q} | {r['chunk_shapes_equal']}/{q} | "
              f"{r['body_shape_equal']}/{q} | {r['bad_requests_equal']}/{r['bad_requests']} |")
    for name, r in rows.items():
        for k, d in r["bad_request_diffs"].items():
            print(f"  {name}: bad request '{k}': reference {d['reference']}, this {d['other']}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1, default=list) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
