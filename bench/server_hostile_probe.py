#!/usr/bin/env python3
"""The hostile-client probes of docs/reliability.md ("genie-server against hostile
clients"), as numbers: one row per probe, for the table's before/after columns.

    GENIE_SERVER_EXE=build/bin/genie-server .venv/bin/python bench/server_hostile_probe.py

Uses the Qwen3 tiny fixture on a loopback port (test/python/test_server_hostile.py's
Server, with its shortened deadlines). Heavy inputs (1 M headers, 4 MB /tokenize) are
sent one at a time."""
import concurrent.futures
import http.client
import json
import pathlib
import signal
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "test" / "python"))
import test_server_hostile as t  # noqa: E402


def hwm_kib(s):
    for line in pathlib.Path(f"/proc/{s.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def row(probe, result):
    print(f"| {probe} | {result} |", flush=True)


def main():
    s = t.Server()
    try:
        s.request("POST", "/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 4})
        base = s.rss_kib()
        raw = s.raw(t.many_headers(1_000_000), timeout=60)
        time.sleep(0.5)
        row("1 request with 1 000 000 headers (13.9 MB)",
            f"{t.status_of(raw)}, RSS {base // 1024} -> {s.rss_kib() // 1024} MB")

        for mb in (1, 4):
            base, hwm = s.rss_kib(), hwm_kib(s)
            text = "".join(f"word{i} " for i in range(mb * 150_000))[: mb << 20]
            status = s.request("POST", "/tokenize", {"content": text, "with_pieces": True}, timeout=120)[0]
            time.sleep(0.5)
            row(f"/tokenize with_pieces, {mb} MB", f"{status}, RSS {base // 1024} -> {s.rss_kib() // 1024} MB "
                f"(peak {max(hwm, hwm_kib(s)) // 1024} MB)")

        base = s.rss_kib()
        text = "".join(f"word{i} " for i in range(150_000))[: 1 << 20]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: s.request("POST", "/tokenize", {"content": text, "with_pieces": True},
                                                         timeout=120)[0], range(8)))
        time.sleep(1.5)
        row("8 concurrent /tokenize with_pieces, 1 MB each",
            f"{statuses.count(200)} x 200, {statuses.count(503)} x 503, RSS {base // 1024} -> {s.rss_kib() // 1024} MB")

        slow = []
        for _ in range(t.POOL + 4):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            c.sendall(b"G")
            slow.append(c)
        stop = threading.Event()

        def drip():
            while not stop.is_set():
                for c in slow:
                    try:
                        c.sendall(b"E")
                    except OSError:
                        pass
                time.sleep(0.2)

        th = threading.Thread(target=drip)
        th.start()
        time.sleep(0.3)
        start = time.monotonic()
        try:
            health = s.request("GET", "/health", timeout=5)[0]
        except OSError as e:
            health = type(e).__name__
        row(f"/health during {len(slow)} slow clients (pool {t.POOL})", f"{health} in {time.monotonic() - start:.2f} s")
        stop.wait(3)
        stop.set()
        th.join()
        ended = [t.status_of(t.read_all(c, 1)) for c in slow]
        row("the slow clients after 3 s", f"{sum(1 for x in ended if x == 408)} of {len(slow)} got 408")
        for c in slow:
            c.close()

        raw = s.raw(t.post("/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 8}), shut_wr=True, timeout=20)
        row("half-close after a chat request", f"{t.status_of(raw)}, {len(raw)} bytes")

        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            conn.request("POST", "/tokenize", body=json.dumps({"content": "hi"}), headers={"Content-Type": "application/json"})
            conn.getresponse().read()
            times.append((time.perf_counter() - start) * 1000)
        conn.close()
        row("keep-alive: POST /tokenize, requests 2-10 on one connection",
            f"median {statistics.median(times[1:]):.1f} ms (first {times[0]:.1f} ms)")

        st, body = s.json("POST", "/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 2, "top_p": -1})
        row("top_p -1 / typical_p -3 / repeat_penalty 0", f"{st} {body['error']['type']}" + (
            "" if st != 400 else f": {body['error']['message']}"))
        for name, data in (("NUL byte after the JSON", t.post("/tokenize", b'{"content":"hi"}\x00junk', b"Connection: close\r\n")),
                           ("duplicate Content-Length", b"POST /tokenize HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
                           ("header line without a colon", b"GET /health HTTP/1.1\r\nConnection: close\r\nNoColon\r\n\r\n"),
                           ("GET /v1/chat/completions", b"GET /v1/chat/completions HTTP/1.1\r\nConnection: close\r\n\r\n")):
            row(name, str(t.status_of(s.raw(data))))
        st, body = s.json("POST", "/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 1_000_000_000}, timeout=60)
        row("max_tokens 1e9 (-c 256)", f"{st}, usage {json.dumps(body.get('usage'))}")
    finally:
        s.stop()

    s = t.Server(ctx=512)
    try:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.sendall(t.post("/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 400, "stream": True}))
        got = b""
        while got.count(b"data: ") < 3:
            got += c.recv(65536)
        result = {}
        th = threading.Thread(target=lambda: result.update(r=s.request(
            "POST", "/v1/chat/completions", {"messages": t.HELLO, "max_tokens": 400}, timeout=30)))
        th.start()
        t.wait_for(lambda: s.metrics()["llamacpp:requests_processing"] == 2, "not started")
        s.proc.send_signal(signal.SIGTERM)
        got += t.read_all(c, 30)
        th.join(30)
        events = t.sse_events(got)
        row("SIGTERM during a stream: last events", " ".join(e[:90] for e in events[-2:]))
        r = result.get("r")
        row("SIGTERM during a non-streamed request", f"{r[0]} {r[2][:90].decode()}" if r else "no answer")
    finally:
        s.stop()


if __name__ == "__main__":
    main()
