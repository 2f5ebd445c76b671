#!/usr/bin/env python3
"""Bounded load test of genie-server: starts the server on a free loopback port, sends a
fixed number of chat requests with a fixed concurrency (half of them streamed), checks
that every one succeeds (HTTP 200, a complete body / SSE stream ending in [DONE]), and
reports latency percentiles, throughput and the server's resident set before/after.

    python3 bench/server_load.py MODEL.gguf [--requests 200] [--concurrency 8]
        [--parallel 2] [--max-tokens 16] [--ctx 1024] [--threads 2] [--bin build/bin]

Standard library only. Stops by itself; exits 1 when any request failed. Loopback only.
Latency = request sent -> whole response read; TTFT (streamed requests) = request sent ->
first content chunk. RSS is read from /proc/PID/status after a warm-up round
(--concurrency requests), after half the requests and at the end: a leak shows as growth
in the second half (the first half still fills allocator arenas and thread stacks).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time

PROMPTS = [
    "Turn on the kitchen light.",
    "What is the weather like tomorrow?",
    "Tell me a short story about a dog.",
    "Set a timer for ten minutes.",
    "What is the capital of France?",
    "Play some relaxing music.",
    "How do I boil an egg?",
    "Remind me to call mum at six.",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def one_request(port, i, max_tokens):
    stream = i % 2 == 0
    body = json.dumps({
        "messages": [{"role": "system", "content": "You are a voice assistant."},
                     {"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
        "max_tokens": max_tokens, "temperature": 0.7, "seed": i, "stream": stream,
        "stream_options": {"include_usage": True},
    })
    t0 = time.perf_counter()
    ttft = None
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return False, f"HTTP {resp.status}: {resp.read()[:200]!r}", 0, None, 0
        tokens = 0
        if stream:
            done = False
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if not line.startswith("data: "):
                    continue
                payload = line[6:]
                if payload == "[DONE]":
                    done = True
                    break
                event = json.loads(payload)
                if "error" in event:
                    return False, f"stream error: {event['error']}", 0, None, 0
                if event.get("usage"):
                    tokens = event["usage"]["completion_tokens"]
                if ttft is None and event.get("choices") and event["choices"][0]["delta"].get("content"):
                    ttft = time.perf_counter() - t0
            if not done:
                return False, "stream ended without [DONE]", 0, None, 0
        else:
            data = json.loads(resp.read())
            tokens = data["usage"]["completion_tokens"]
            if data["choices"][0]["finish_reason"] not in ("stop", "length"):
                return False, f"finish_reason {data['choices'][0]['finish_reason']}", 0, None, 0
        return True, "", time.perf_counter() - t0, ttft, tokens
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        return False, repr(exc), 0, None, 0
    finally:
        conn.close()


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bin", default=os.environ.get("GENIE_BIN_DIR", "build/bin"))
    args = ap.parse_args()

    port = free_port()
    exe = pathlib.Path(args.bin) / "genie-server"
    proc = subprocess.Popen([str(exe), "-m", args.model, "--port", str(port), "--parallel", str(args.parallel),
                             "-c", str(args.ctx), "--threads", str(args.threads)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "GENIE_SERVER_MAX_QUEUE": str(max(8, args.concurrency))})
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                sys.exit(f"genie-server exited: {proc.stderr.read().decode()}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit("genie-server did not become ready")
            time.sleep(0.05)

        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(lambda i: one_request(port, i, args.max_tokens), range(args.concurrency)))  # warm-up
            rss_before = rss_kib(proc.pid)
            t0 = time.perf_counter()
            half = args.requests // 2
            results = list(pool.map(lambda i: one_request(port, i, args.max_tokens), range(half)))
            rss_half = rss_kib(proc.pid)
            results += list(pool.map(lambda i: one_request(port, i, args.max_tokens), range(half, args.requests)))
            wall = time.perf_counter() - t0
        rss_after = rss_kib(proc.pid)
        failures = [(i, r[1]) for i, r in enumerate(results) if not r[0]]
        lat = [r[2] * 1e3 for r in results if r[0]]
        ttft = [r[3] * 1e3 for r in results if r[0] and r[3] is not None]
        tokens = sum(r[4] for r in results if r[0])
        print(f"model: {pathlib.Path(args.model).name}; {args.requests} requests, {args.concurrency} concurrent, "
              f"--parallel {args.parallel}, max_tokens {args.max_tokens}, --threads {args.threads}")
        print(f"ok: {len(lat)}/{args.requests}; failures: {len(failures)}")
        for i, why in failures[:10]:
            print(f"  request {i}: {why}")
        print(f"latency ms: p50 {pct(lat, 50):.1f}  p95 {pct(lat, 95):.1f}  max {max(lat) if lat else float('nan'):.1f}  "
              f"mean {statistics.mean(lat) if lat else float('nan'):.1f}")
        print(f"TTFT ms (streamed): p50 {pct(ttft, 50):.1f}  p95 {pct(ttft, 95):.1f}")
        print(f"throughput: {args.requests / wall:.1f} requests/s, {tokens / wall:.1f} generated tokens/s "
              f"({wall:.1f} s wall)")
        print(f"server RSS: {rss_before / 1024:.1f} MiB after warm-up, {rss_half / 1024:.1f} MiB after half the "
              f"requests, {rss_after / 1024:.1f} MiB at the end (second half {(rss_after - rss_half) / 1024:+.1f} MiB)")
        return 1 if failures else 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
