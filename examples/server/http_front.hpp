// genie-server: the connection layer under cpp-httplib (docs/server.md, "HTTP layer").
//
// cpp-httplib 0.11.4 (Debian 12) gives every connection a pool thread from accept to
// close, reads the request head with a per-read timeout only and without a bound on the
// number of header fields. This layer keeps httplib's request parsing, routing and
// response writing (Server::process_request) and replaces what is around it:
//   - one event-loop thread accepts, reads each request head into a bounded buffer
//     (check_request_head: field count, head bytes, malformed heads answered here) and a
//     Content-Length body up to the body limit, within per-request deadlines, holding no
//     worker thread; idle keep-alive connections also wait there;
//   - a request with its head and body complete goes to a fixed pool of worker threads,
//     which run httplib's process_request on a Stream over the bytes already read;
//   - the number of open connections is bounded (beyond it: 503 at once), so is the
//     memory of bodies being received (a global budget), and TCP_NODELAY is set.
#pragma once

#include "http_head.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace genie::server {

struct FrontOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    int workers = 16;          ///< threads that run requests (handlers)
    int max_connections = 256; ///< open connections; beyond: 503 and close
    HeadLimits limits;
    int head_timeout_ms = 10'000;   ///< from a request's first byte (or the accept) to the end of its head
    int body_timeout_ms = 60'000;   ///< from the end of the head to the end of the body
    int idle_timeout_ms = 30'000;   ///< keep-alive: between requests
    int write_timeout_ms = 60'000;  ///< one write of the response
    size_t body_budget_bytes = size_t{64} << 20;  ///< bodies being received, all connections together
    /// The body and content type of an error this layer answers itself (408, 413, 431, 503, ...).
    std::function<std::string(int status, const std::string& message)> error_body;
    /// Called for every request this layer answers itself (for metrics).
    std::function<void(int status)> on_rejected;
};

/// The connection of the request a worker thread is running (thread-local; nullptr
/// outside a request).
struct ConnectionInfo {
    int fd = -1;
    bool http11 = true;
};
const ConnectionInfo* current_connection();

/// Whether the client of one request is still there, asked by polling its socket (the
/// engine polls it while the request waits and after each token: EngineChatRequest::
/// cancelled). A peer that closed its end shows POLLRDHUP; that may be a half-close
/// (shutdown(SHUT_WR) after the request: the client still reads) or a full close, which
/// TCP cannot tell apart until the server sends something. So before the response has
/// started, an HTTP/1.1 client that half-closed gets an interim "100 Continue" (every
/// HTTP/1.1 client skips 1xx responses): a closed socket answers it with a reset
/// (POLLHUP/POLLERR: gone), a half-closed one reads it and waits for the answer. Once a
/// stream has started its own writes do the same. Not thread-safe (one request's thread).
class PeerProbe {
public:
    PeerProbe() = default;
    /// The probe of the request the calling worker thread runs (never gone outside one).
    static PeerProbe for_current_request();
    /// The response has started (a stream's head is out): a half-close alone is not "gone".
    void response_started() { started_ = true; }
    bool gone();

private:
    PeerProbe(int fd, bool http11) : fd_(fd), http11_(http11) {}
    int fd_ = -1;
    bool http11_ = true;
    bool started_ = false;
    bool probed_ = false;
};
/// Asks for malloc_trim once the current request is done (after a large answer), so the
/// memory of one large request goes back to the system instead of staying in the arenas.
void trim_memory_after_request();

class HttpFront : public httplib::Server {
public:
    explicit HttpFront(FrontOptions options);
    ~HttpFront() override;

    /// Binds and listens; false (with `error`) when it cannot.
    bool open(std::string& error);
    /// Serves until stop(): then idle connections close, running requests finish.
    void serve();
    /// From any thread.
    void stop();
    int open_connections() const { return open_.load(); }

private:
    struct Conn;
    using Clock = std::chrono::steady_clock;

    void loop();
    void worker();
    void accept_all(Clock::time_point now);
    void dispatch_complete();
    /// The head (and a Content-Length body) has arrived, or a chunked body follows.
    static bool request_complete(const Conn& c);
    void on_readable(Conn& c, Clock::time_point now);
    /// Moves a connection on after new bytes: head check, body, dispatch. False: close it.
    bool advance(Conn& c, Clock::time_point now);
    void answer_and_drain(Conn& c, int status, const std::string& message, Clock::time_point now);
    void close_conn(Conn& c);
    void run_request(std::unique_ptr<Conn> c);
    void wake();

    FrontOptions opt_;
    int listen_fd_ = -1;
    int wake_fd_[2] = {-1, -1};
    std::atomic<bool> stopping_{false};
    std::atomic<int> open_{0};

    std::vector<std::unique_ptr<Conn>> conns_;  // owned by the loop thread
    size_t body_reserved_ = 0;                  // loop thread only

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Conn>> ready_;     // to the workers
    std::deque<std::unique_ptr<Conn>> returned_;  // keep-alive: back to the loop
    size_t released_ = 0;                         // body budget freed by workers
    bool workers_quit_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace genie::server
