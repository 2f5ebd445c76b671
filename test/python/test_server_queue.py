"""genie-server on genie::Engine: the engine's bounded queue answers 503 for a text
completion too, a client that leaves while its request waits is removed from the queue
(its request never runs), and one-off requests reuse a spare session's KV cache by
prompt prefix (llama-server's slot reuse). docs/server.md, docs/engine.md."""
import json
import socket
import threading

from test_server import HELLO, Server, fixture_model, wait_for


def post_raw(port, path, body):
    """Sends a request on a fresh socket and returns the socket (the answer is not read)."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def start_long_stream(s):
    """A streamed generation of 400 tokens holding the only slot; returns once it streams."""
    sock = post_raw(s.port, "/v1/chat/completions", {"messages": HELLO, "max_tokens": 400, "stream": True})
    first = b""
    while b"data: " not in first:
        first += sock.recv(65536)
    return sock


def test_client_leaving_while_queued_is_removed():
    s = Server(fixture_model("qwen3-tiny-q8_0.gguf"), "-c", 512, "--parallel", 1, env={"GENIE_SERVER_MAX_QUEUE": "2"})
    try:
        running = start_long_stream(s)
        generations = s.metrics()["genie_server_generations_total"]
        queued = post_raw(s.port, "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})
        wait_for(lambda: s.metrics()["llamacpp:requests_deferred"] == 1, "the second request is not queued")
        queued.close()  # the client leaves while its request waits
        wait_for(lambda: s.metrics()["llamacpp:requests_deferred"] == 0, "the request that left is still queued")
        assert s.metrics()["llamacpp:requests_processing"] == 1
        running.close()  # the long generation is cancelled too
        wait_for(lambda: s.metrics()["llamacpp:requests_processing"] == 0, "the running request was not cancelled")
        # Only the long generation ran: the request that left never did.
        assert s.metrics()["genie_server_generations_total"] == generations + 1
        assert s.json("POST", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 2})[0] == 200
        assert s.metrics()["genie_server_generations_total"] == generations + 2
        assert s.json("GET", "/health") == (200, {"status": "ok"})
    finally:
        s.stop()


def test_queue_full_is_503_for_text_completions():
    s = Server(fixture_model("qwen3-tiny-q8_0.gguf"), "-c", 512, "--parallel", 1, env={"GENIE_SERVER_MAX_QUEUE": "1"})
    try:
        running = start_long_stream(s)
        queued = {}
        t = threading.Thread(target=lambda: queued.update(
            r=s.json("POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 2})))
        t.start()
        wait_for(lambda: s.metrics()["llamacpp:requests_deferred"] == 1, "the second request is not queued")
        status, body = s.json("POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 2})
        assert (status, body["error"]["code"], body["error"]["type"]) == (503, 503, "unavailable_error")
        assert "busy" in body["error"]["message"]
        running.close()
        t.join(60)
        assert queued["r"][0] == 200 and queued["r"][1]["object"] == "text_completion"
        assert s.metrics()["genie_server_requests_rejected_busy_total"] == 1
    finally:
        s.stop()


def test_one_off_requests_reuse_a_spare_session_by_prefix():
    """Without conversation_id, a request whose prompt starts like an earlier one's reuses
    that session's KV cache (cache_n > 0), as llama-server's slots do."""
    s = Server(fixture_model("qwen3-tiny-q8_0.gguf"), "-c", 512, "--parallel", 2)
    try:
        system = {"role": "system", "content": "You are a helpful assistant. " * 8}
        first = s.json("POST", "/v1/chat/completions", {
            "messages": [system, {"role": "user", "content": "Hello"}], "max_tokens": 2, "temperature": 0})
        assert first[0] == 200 and first[1]["timings"]["cache_n"] == 0
        second = s.json("POST", "/v1/chat/completions", {
            "messages": [system, {"role": "user", "content": "Goodbye"}], "max_tokens": 2, "temperature": 0})
        assert second[0] == 200
        assert second[1]["timings"]["cache_n"] >= 40, second[1]["timings"]
    finally:
        s.stop()
