"""genie-server against hostile and careless clients (issue 43; docs/reliability.md,
"genie-server"). Raw sockets on loopback against the real server with the Qwen3 tiny
fixture: malformed heads, header floods, slow clients at the pool size, partial bodies,
Content-Length lies, half-close, resets mid-stream, concurrent streams with disconnects,
shutdown endings, sampler ranges and the minor HTTP rules. After each group of hostile
requests the server's resident set is compared with its baseline (from /proc).

Every test is bounded: socket timeouts of at most a few seconds, at most ~80
connections, deadlines shortened by the server's test hooks (GENIE_SERVER_HEAD_TIMEOUT_MS,
GENIE_SERVER_BODY_TIMEOUT_MS, GENIE_SERVER_MAX_CONNECTIONS). GENIE_SERVER_EXE runs the
suite against another build (to measure the behaviour before a change)."""
import concurrent.futures
import ctypes
import http.client
import json
import os
import pathlib
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import BIN_DIR

FIXTURE_DIRS = [pathlib.Path(os.environ["GENIE_FIXTURE_DIR"])] if os.environ.get("GENIE_FIXTURE_DIR") else []
FIXTURE_DIRS += [BIN_DIR.parent / "fixtures", pathlib.Path(__file__).resolve().parents[2] / "build" / "fixtures"]
HELLO = [{"role": "user", "content": "Hello there"}]
RSS_SLACK_KIB = 32 * 1024  # growth allowed over the baseline after a hostile group
HEAD_TIMEOUT_MS = 1500
BODY_TIMEOUT_MS = 1500
MAX_CONNECTIONS = 48
MAX_QUEUE = 2
PARALLEL = 2
POOL = PARALLEL + MAX_QUEUE + 8  # the worker threads (docs/server.md)


def fixture_model(name):
    for d in FIXTURE_DIRS:
        if (d / name).exists():
            return d / name
    pytest.skip(f"fixture model {name} not found (run ctest's fixture step or scripts/make-fixtures)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args, env=None, wait=True, ctx=256, parallel=PARALLEL):
        exe = pathlib.Path(os.environ.get("GENIE_SERVER_EXE", BIN_DIR / "genie-server"))
        if not exe.exists():
            pytest.skip(f"genie-server is not built ({exe} missing)")
        self.port = free_port()
        cmd = [str(exe), "-m", str(fixture_model("qwen3-tiny-q8_0.gguf")), "--port", str(self.port), "--threads", "2",
               "-c", str(ctx), "--parallel", str(parallel), *map(str, args)]
        full_env = dict(os.environ)
        full_env.pop("GENIE_API_KEY", None)
        full_env.update({"GENIE_SERVER_HEAD_TIMEOUT_MS": str(HEAD_TIMEOUT_MS),
                         "GENIE_SERVER_BODY_TIMEOUT_MS": str(BODY_TIMEOUT_MS),
                         "GENIE_SERVER_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
                         "GENIE_SERVER_MAX_QUEUE": str(MAX_QUEUE)})
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.stderr.read().decode()
            try:
                if self.request("GET", "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("genie-server did not become ready")

    def request(self, method, path, body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, **kw):
        status, _, raw = self.request(method, path, body, **kw)
        return status, json.loads(raw)

    def metrics(self):
        values = {}
        for line in self.request("GET", "/metrics")[2].decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def rss_kib(self):
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def raw(self, data, timeout=5.0, shut_wr=False):
        """Sends raw bytes, reads until the server closes (or `timeout`); returns the bytes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            try:
                s.sendall(data)
                if shut_wr:
                    s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server may answer (and close) before it has read everything
            return read_all(s, timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def read_all(s, timeout):
    out = b""
    deadline = time.monotonic() + timeout
    s.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def status_of(raw):
    """The final status of a raw response (interim 1xx responses skipped)."""
    while raw.startswith(b"HTTP/1.1 1"):
        raw = raw[raw.index(b"\r\n\r\n") + 4:]
    if not raw.startswith(b"HTTP/1."):
        return None
    return int(raw.split(b" ", 2)[1])


def body_of(raw):
    while raw.startswith(b"HTTP/1.1 1"):
        raw = raw[raw.index(b"\r\n\r\n") + 4:]
    return raw[raw.index(b"\r\n\r\n") + 4:]


def dechunk(raw):
    """The body of a raw chunked response (as far as it arrived)."""
    data, out = body_of(raw), b""
    while data:
        line, _, rest = data.partition(b"\r\n")
        size = int(line, 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return out


def sse_events(raw):
    return [e[len("data: "):] for e in dechunk(raw).decode(errors="replace").split("\n\n") if e.startswith("data: ")]


def post(path, body, extra=b""):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)


def wait_for(predicate, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture(scope="module")
def server():
    s = Server()
    try:
        # Warm-up, so the baseline includes what normal use allocates (arenas, thread stacks).
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: s.request("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 4,
                                                                                 "stream": i % 2 == 0}), range(8)))
        s.json("POST", "/tokenize", {"content": "warm up " * 1000, "with_pieces": True})
        s.baseline_kib = s.rss_kib()
        yield s
    finally:
        s.stop()


SANITIZED = bool(os.environ.get("GENIE_TEST_SANITIZED"))


def check_rss(server, group):
    """RSS back near the baseline (not under sanitizers: their allocators keep freed memory
    in quarantine) and the server healthy."""
    if not SANITIZED:
        # The memory of a request is given back just after its answer is sent: a moment later.
        deadline = time.monotonic() + 3
        while server.rss_kib() - server.baseline_kib >= RSS_SLACK_KIB and time.monotonic() < deadline:
            time.sleep(0.1)
        rss = server.rss_kib()
        assert rss - server.baseline_kib < RSS_SLACK_KIB, f"{group}: RSS {server.baseline_kib} -> {rss} KiB"
    assert server.json("GET", "/health") == (200, {"status": "ok"})


# ---- 1. request heads ----------------------------------------------------------------------

def many_headers(n):
    """GET /health with `n` header fields (Host and n - 1 others)."""
    return (b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
            b"".join(b"X-%d: y\r\n" % i for i in range(n - 2)) + b"\r\n")


def test_header_count_and_size_limited(server):
    """More than 100 header fields, or a head over 32 KiB, is 431 (RFC 6585) before httplib
    stores the fields; four floods of 100 000 headers at once leave the RSS at baseline."""
    assert status_of(server.raw(many_headers(100))) == 200
    assert status_of(server.raw(many_headers(101))) == 431
    big = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 500) for i in range(70)) + b"\r\n"
    raw = server.raw(big)
    assert status_of(raw) == 431 and json.loads(body_of(raw))["error"]["code"] == 431
    assert status_of(server.raw(b"GET /health HTTP/1.1\r\nX-Long: " + b"v" * 9000 + b"\r\n\r\n")) == 431
    flood = many_headers(100_000)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda _: status_of(server.raw(flood, timeout=20)), range(4)))
    assert statuses == [431] * 4
    check_rss(server, "header floods")


def test_malformed_heads(server):
    """Malformed request lines and header lines are 400 with llama-server's error body;
    a duplicate Content-Length, a line without a colon, a bare LF, obsolete folding and
    Content-Length with Transfer-Encoding too."""
    cases = [
        b"GARBAGE\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: x\r\n folded: y\r\n\r\n",
        b"GET /health HTTP/1.1\nHost: x\n\n",
        b"GET /health HTTP/1.1\r\nBad Name: y\r\n\r\n",
        b"POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"POST /tokenize HTTP/1.1\r\nContent-Length: -1\r\n\r\n{}",
        b"POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
        b"GET /health HTTP/1.1\r\nX: a\x00b\r\n\r\n",
    ]
    for data in cases:
        raw = server.raw(data)
        assert status_of(raw) == 400, (data, raw[:200])
        assert json.loads(body_of(raw))["error"]["type"] == "invalid_request_error"
    assert status_of(server.raw(b"GET /health HTTP/2.0\r\n\r\n")) == 505
    assert status_of(server.raw(b"POST /tokenize HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")) == 501
    assert status_of(server.raw(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n")) == 414
    # Chunked bodies still work.
    chunked = b'{"content": "hi"}'
    raw = server.raw(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                     b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked), chunked))
    assert status_of(raw) == 200 and json.loads(body_of(raw))["tokens"]
    check_rss(server, "malformed heads")


def test_nul_byte_and_content_length_lies(server):
    """A NUL byte in a JSON body is a 400 (it ended parsing, and the garbage after it was
    ignored); a body shorter than its Content-Length is 408 once the body deadline passes;
    a body over 8 MiB is 413 at once, without reading it."""
    raw = server.raw(post("/tokenize", b'{"content": "hi"}\x00garbage', b"Connection: close\r\n"))
    assert status_of(raw) == 400 and "NUL" in json.loads(body_of(raw))["error"]["message"]
    start = time.monotonic()
    raw = server.raw(b"POST /tokenize HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"content\":", timeout=BODY_TIMEOUT_MS / 1000 + 5)
    assert status_of(raw) == 408 and time.monotonic() - start < BODY_TIMEOUT_MS / 1000 + 4
    raw = server.raw(b"POST /tokenize HTTP/1.1\r\nContent-Length: 50000000\r\n\r\n" + b"x" * 65536)
    assert status_of(raw) == 413
    check_rss(server, "bodies")


# ---- 2. /tokenize --------------------------------------------------------------------------

def test_tokenize_bounded(server):
    """/tokenize 'content' over 1 MiB is a 400 naming the field; with_pieces on 1 MiB is
    answered and its memory given back (it cost ~230 MB per MB of input and kept it)."""
    status, body = server.json("POST", "/tokenize", {"content": "x" * ((1 << 20) + 1), "with_pieces": True})
    assert status == 400 and "'content'" in body["error"]["message"]
    text = "".join(f"word{i} " for i in range(150_000))[: 1 << 20]
    status, body = server.json("POST", "/tokenize", {"content": text, "with_pieces": True}, timeout=60)
    assert status == 200 and len(body["tokens"]) > 100_000
    assert all(set(t) == {"id", "piece"} for t in body["tokens"][:10])
    del body
    check_rss(server, "/tokenize with_pieces")


def test_tokenize_takes_the_generation_admission(server):
    """/tokenize waits like a generation: at most --parallel run at once and the queue's
    bound wait; more at once get 503 (it used to run every request at once)."""
    text = "".join(f"word{i} " for i in range(150_000))[: 1 << 20]
    body = json.dumps({"content": text, "with_pieces": True}).encode()
    n = PARALLEL + MAX_QUEUE + 4
    conns = [socket.create_connection(("127.0.0.1", server.port), timeout=60) for _ in range(n)]
    try:
        for c in conns:  # all sent before the first can be answered
            c.sendall(post("/tokenize", body, b"Connection: close\r\n"))
        statuses = [status_of(read_all(c, 60)) for c in conns]
    finally:
        for c in conns:
            c.close()
    assert statuses.count(200) >= PARALLEL + MAX_QUEUE and 503 in statuses, statuses
    assert set(statuses) <= {200, 503}, statuses
    check_rss(server, "concurrent /tokenize")


# ---- 3. slow clients -----------------------------------------------------------------------

def test_slowloris_at_pool_size_does_not_starve_health(server):
    """More slow clients than worker threads, each sending its head one byte at a time:
    /health and a chat request are still answered at once, and every slow client gets
    408 when its head deadline passes."""
    slow = []
    for _ in range(POOL + 4):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall(b"G")
        slow.append(s)
    stop = threading.Event()

    def drip():
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"E")
                except OSError:
                    pass
            time.sleep(0.2)

    t = threading.Thread(target=drip)
    t.start()
    try:
        time.sleep(0.3)
        assert server.json("GET", "/health", timeout=3) == (200, {"status": "ok"})
        assert server.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2}, timeout=10)[0] == 200
        stop.wait(HEAD_TIMEOUT_MS / 1000 + 0.5)
        statuses = [status_of(read_all(s, 3)) for s in slow]
        assert statuses == [408] * len(slow), statuses
    finally:
        stop.set()
        t.join()
        for s in slow:
            s.close()
    check_rss(server, "slowloris")


def test_connection_limit(server):
    """Beyond GENIE_SERVER_MAX_CONNECTIONS open connections a new one is answered 503 at
    once; closing them frees the room."""
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(MAX_CONNECTIONS)]
    try:
        wait_for(lambda: status_of(server.raw(b"GET /health HTTP/1.1\r\n\r\n", timeout=3)) == 503,
                 "no 503 at the connection limit", timeout=5)
    finally:
        for s in idle:
            s.close()
    wait_for(lambda: server.request("GET", "/health", timeout=3)[0] == 200, "the server did not recover", timeout=5)
    check_rss(server, "connection limit")


# ---- 4. half-close, resets, disconnects ------------------------------------------------------

def test_half_close_is_answered(server):
    """A client that shuts down its sending side after the request still gets the answer,
    streamed or not, and the generation is not counted as cancelled."""
    before = server.metrics()["genie_server_generations_cancelled_total"]
    raw = server.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", shut_wr=True)
    assert status_of(raw) == 200
    raw = server.raw(post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 8, "temperature": 0}),
                     shut_wr=True, timeout=20)
    assert status_of(raw) == 200 and json.loads(body_of(raw))["usage"]["completion_tokens"] == 8
    raw = server.raw(post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 8, "stream": True}),
                     shut_wr=True, timeout=20)
    assert status_of(raw) == 200 and sse_events(raw)[-1] == "[DONE]"
    assert server.metrics()["genie_server_generations_cancelled_total"] == before


def test_reset_mid_stream_and_concurrent_disconnects():
    """16 concurrent streams on 4 slots: half read to the end, half disconnect after two
    events (by close or by reset). The finished ones are complete, the disconnected ones
    are cancelled, and the server serves normally afterwards with its memory at baseline."""
    s = Server(parallel=4, env={"GENIE_SERVER_MAX_QUEUE": "16"})
    try:
        s.request("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 4})
        s.baseline_kib = s.rss_kib()
        body = {"messages": HELLO, "max_tokens": 120, "stream": True, "temperature": 0}
        before = s.metrics()["genie_server_generations_cancelled_total"]

        def one(i):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
            c.sendall(post("/v1/chat/completions", body, b"Connection: close\r\n"))
            if i % 2 == 0:
                return read_all(c, 60)
            got = b""
            while got.count(b"data: ") < 2:
                chunk = c.recv(65536)
                if not chunk:
                    break
                got += chunk
            if i % 4 == 1:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends a reset
            c.close()
            return None

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(one, range(16)))
        for raw in results[::2]:
            assert status_of(raw) == 200 and sse_events(raw)[-1] == "[DONE]"
            assert json.loads(sse_events(raw)[-2])["choices"][0]["finish_reason"] == "length"
        wait_for(lambda: s.metrics()["genie_server_generations_cancelled_total"] == before + 8,
                 "the disconnected streams were not all cancelled", timeout=30)
        assert s.metrics()["llamacpp:requests_processing"] == 0
        assert s.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})[0] == 200
        check_rss(s, "streams with disconnects")
    finally:
        s.stop()


# ---- 5. keep-alive without Nagle --------------------------------------------------------------

def _server_socket_nodelay(server, client_port):
    """TCP_NODELAY of the server's socket for the connection from `client_port`, read with
    pidfd_getfd (Linux 5.6+); None when that is not possible here."""
    libc = ctypes.CDLL(None, use_errno=True)
    sys_pidfd_open, sys_pidfd_getfd = 434, 438
    inode = None
    for line in pathlib.Path(f"/proc/{server.proc.pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].split(":")[1], 16) == client_port:
            inode = fields[9]
    if inode is None:
        return None
    for fd in os.listdir(f"/proc/{server.proc.pid}/fd"):
        try:
            if os.readlink(f"/proc/{server.proc.pid}/fd/{fd}") == f"socket:[{inode}]":
                pidfd = libc.syscall(sys_pidfd_open, server.proc.pid, 0)
                if pidfd < 0:
                    return None
                try:
                    local = libc.syscall(sys_pidfd_getfd, pidfd, int(fd), 0)
                finally:
                    os.close(pidfd)
                if local < 0:
                    return None
                with socket.socket(fileno=local) as s:
                    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        except OSError:
            continue
    return None


def test_keep_alive_sockets_have_no_nagle(server):
    """Responses on a kept-alive connection are not held back by Nagle's algorithm (which
    with delayed ACKs cost ~44 ms per request after the first): the server's socket has
    TCP_NODELAY, and four requests on one connection are all answered."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        for _ in range(4):
            conn.request("GET", "/health")
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read() == b'{"status":"ok"}'
        nodelay = _server_socket_nodelay(server, conn.sock.getsockname()[1])
    finally:
        conn.close()
    if nodelay is None:
        pytest.skip("cannot read the server's socket options here (pidfd_getfd unavailable or not permitted)")
    assert nodelay


# ---- 6. sampler ranges and max_tokens ----------------------------------------------------------

@pytest.mark.parametrize("field,value", [("top_p", -1), ("typical_p", -3), ("min_p", -0.5), ("repeat_penalty", 0),
                                         ("repeat_penalty", -1)])
def test_sampler_ranges_are_400_naming_the_field(server, field, value):
    for path, body in (("/v1/chat/completions", {"messages": HELLO}), ("/v1/completions", {"prompt": "Hi"})):
        status, resp = server.json("POST", path, {**body, "max_tokens": 2, field: value})
        assert status == 400, resp
        assert resp["error"]["type"] == "invalid_request_error" and f"'{field}'" in resp["error"]["message"]


def test_max_tokens_capped_by_the_context(server):
    """max_tokens far beyond the context is lowered to what fits, and usage says so."""
    status, body = server.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 1_000_000_000,
                                                               "temperature": 0}, timeout=60)
    assert status == 200
    usage = body["usage"]
    assert usage["max_tokens_capped_to"] == 256 - usage["prompt_tokens"]
    assert usage["completion_tokens"] <= usage["max_tokens_capped_to"]
    status, body = server.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})
    assert status == 200 and "max_tokens_capped_to" not in body["usage"]


# ---- 7. minor HTTP rules -------------------------------------------------------------------------

def test_wrong_method_is_405(server):
    for method, path, allow in (("GET", "/v1/chat/completions", "POST"), ("POST", "/health", "GET"),
                                ("DELETE", "/tokenize", "POST"), ("PUT", "/v1/models", "GET")):
        status, headers, raw = server.request(method, path, body=b"{}" if method != "GET" else None)
        assert status == 405, (method, path, status)
        assert headers.get("Allow") == allow and json.loads(raw)["error"]["code"] == 405
    assert server.request("GET", "/no/such/path")[0] == 404


def test_api_key_needs_bearer_and_key_file(tmp_path):
    """'Authorization: KEY' without the Bearer scheme is refused; --api-key-file reads the
    key from a file, so it is not in the process's command line."""
    key_file = tmp_path / "key"
    key_file.write_text("s3cret\n")
    s = Server("--api-key-file", key_file)
    try:
        assert b"s3cret" not in pathlib.Path(f"/proc/{s.proc.pid}/cmdline").read_bytes()
        assert s.request("GET", "/v1/models", headers={"Authorization": "s3cret"})[0] == 401
        assert s.request("GET", "/v1/models", headers={"Authorization": "Basic s3cret"})[0] == 401
        assert s.request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert s.request("GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert s.request("GET", "/v1/models", headers={"X-Api-Key": "s3cret"})[0] == 200
    finally:
        s.stop()


def test_non_loopback_host_without_key_warns():
    """--host on a non-loopback address without an API key prints a warning. The address is
    from TEST-NET-1 (RFC 5737), so the bind fails and nothing listens outside loopback."""
    exe = pathlib.Path(os.environ.get("GENIE_SERVER_EXE", BIN_DIR / "genie-server"))
    if not exe.exists():
        pytest.skip(f"genie-server is not built ({exe} missing)")
    env = {k: v for k, v in os.environ.items() if k != "GENIE_API_KEY"}
    r = subprocess.run([str(exe), "-m", str(fixture_model("qwen3-tiny-q8_0.gguf")), "--host", "192.0.2.1", "--port",
                        str(free_port())], capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 1
    assert "warning" in r.stderr and "without an API key" in r.stderr, r.stderr


# ---- 8. shutdown ---------------------------------------------------------------------------------

def test_shutdown_ends_generations_honestly():
    """SIGTERM during a stream and a non-streamed generation: the stream ends with an
    error event (503 unavailable_error) instead of finish_reason "stop", the non-streamed
    request gets 503 instead of 499; the server exits 0."""
    s = Server(ctx=512)
    try:
        stream = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        stream.sendall(post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 400, "stream": True,
                                                     "temperature": 0}))
        got = b""
        while got.count(b"data: ") < 3:
            got += stream.recv(65536)
        result = {}
        t = threading.Thread(target=lambda: result.update(r=s.json(
            "POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 400, "temperature": 0}, timeout=30)))
        t.start()
        wait_for(lambda: s.metrics()["llamacpp:requests_processing"] == 2, "both generations did not start")
        s.proc.send_signal(signal.SIGTERM)
        got += read_all(stream, 30)
        t.join(30)
        stream.close()
        assert s.proc.wait(timeout=30) == 0
        events = sse_events(got)
        assert events[-1] == "[DONE]"
        last = json.loads(events[-2])
        assert last["error"]["code"] == 503 and last["error"]["type"] == "unavailable_error", last
        finishes = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-2] if json.loads(e).get("choices")]
        assert "stop" not in finishes and "length" not in finishes
        status, body = result["r"]
        assert status == 503 and body["error"]["type"] == "unavailable_error", result
    finally:
        s.stop()
