// genie-server: the connection layer under cpp-httplib (see http_front.hpp).
#include "http_front.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace genie::server {
namespace {

thread_local const ConnectionInfo* t_connection = nullptr;
thread_local bool t_trim = false;

const char* reason_phrase(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 408: return "Request Timeout";
        case 413: return "Payload Too Large";
        case 414: return "URI Too Long";
        case 431: return "Request Header Fields Too Large";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Error";
    }
}

int ms_until(std::chrono::steady_clock::time_point t, std::chrono::steady_clock::time_point now) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
    return static_cast<int>(std::clamp<long long>(ms, 0, 1000));
}

/// Waits until `fd` is ready for `events` or `deadline` passes; false on timeout or error.
bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return false;
        pollfd p{fd, events, 0};
        const int timeout = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
        const int n = poll(&p, 1, timeout);
        if (n > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
        if (n < 0 && errno != EINTR) return false;
    }
}

void addr_of(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                        : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    ip.clear();
    port = -1;
    if (rc != 0) return;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        ip = host;
        port = std::atoi(serv);
    }
}

}  // namespace

const ConnectionInfo* current_connection() { return t_connection; }
void trim_memory_after_request() { t_trim = true; }

PeerProbe PeerProbe::for_current_request() {
    const ConnectionInfo* c = current_connection();
    return c ? PeerProbe(c->fd, c->http11) : PeerProbe();
}

bool PeerProbe::gone() {
    if (fd_ < 0) return false;
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    if (!(p.revents & POLLRDHUP) || started_) return false;
    if (!http11_) return true;  // an HTTP/1.0 client gets no 1xx: a half-close counts as gone
    if (!probed_) {
        static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        probed_ = true;
        if (send(fd_, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) return true;
    }
    return false;
}

struct HttpFront::Conn {
    enum class Phase { Idle, Head, Body, Draining };
    int fd = -1;
    Phase phase = Phase::Idle;
    std::string buf;  // received and not yet consumed
    std::chrono::steady_clock::time_point deadline;
    HeadCheck head;
    size_t reserved = 0;  // body budget held
    bool budget_wait = false;
    bool close_after = false;  // set by the worker: the loop closes it
    ConnectionInfo info;
};

/// httplib's view of one request: first the bytes the loop read (head and body), then
/// the socket (a chunked body), within the body deadline and the body limit.
class ConnStream final : public httplib::Stream {
public:
    ConnStream(int fd, std::string& buf, std::chrono::steady_clock::time_point read_deadline, int write_timeout_ms,
               uint64_t max_socket_bytes)
        : fd_(fd), buf_(buf), read_deadline_(read_deadline), write_timeout_ms_(write_timeout_ms), max_socket_bytes_(max_socket_bytes) {}

    bool is_readable() const override { return off_ < buf_.size() || wait_fd(fd_, POLLIN, read_deadline_); }
    bool is_writable() const override {
        pollfd p{fd_, POLLOUT, 0};
        return poll(&p, 1, write_timeout_ms_) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
    }
    ssize_t read(char* ptr, size_t size) override {
        if (off_ < buf_.size()) {
            const size_t n = std::min(size, buf_.size() - off_);
            std::memcpy(ptr, buf_.data() + off_, n);
            off_ += n;
            return static_cast<ssize_t>(n);
        }
        // A request with neither Content-Length nor chunked encoding has no body (RFC 9112 6.3).
        if (max_socket_bytes_ == 0) return 0;
        for (;;) {
            if (socket_bytes_ >= max_socket_bytes_ || !wait_fd(fd_, POLLIN, read_deadline_)) {
                failed_ = true;
                return -1;
            }
            const ssize_t n = recv(fd_, ptr, std::min<uint64_t>(size, max_socket_bytes_ - socket_bytes_), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
            if (n < 0) failed_ = true;
            if (n > 0) socket_bytes_ += static_cast<uint64_t>(n);
            return n;
        }
    }
    ssize_t write(const char* ptr, size_t size) override {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(write_timeout_ms_);
        size_t done = 0;
        while (done < size) {
            if (!wait_fd(fd_, POLLOUT, deadline)) break;
            const ssize_t n = send(fd_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
        if (done < size) {
            failed_ = true;
            return -1;
        }
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { addr_of(fd_, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { addr_of(fd_, false, ip, port); }
    socket_t socket() const override { return fd_; }

    size_t consumed() const { return off_; }
    bool failed() const { return failed_; }

private:
    int fd_;
    std::string& buf_;
    size_t off_ = 0;
    std::chrono::steady_clock::time_point read_deadline_;
    int write_timeout_ms_;
    uint64_t max_socket_bytes_;
    uint64_t socket_bytes_ = 0;
    bool failed_ = false;
};

HttpFront::HttpFront(FrontOptions options) : opt_(std::move(options)) {
    set_payload_max_length(static_cast<size_t>(opt_.limits.max_body_bytes));
    // What httplib writes in its Keep-Alive header; this layer keeps a connection open
    // between requests for idle_timeout_ms and does not count its requests.
    set_keep_alive_timeout(std::max(1, opt_.idle_timeout_ms / 1000));
    set_keep_alive_max_count(100000);
}

HttpFront::~HttpFront() {
    for (auto& c : conns_) close_conn(*c);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    for (int fd : wake_fd_)
        if (fd >= 0) ::close(fd);
}

bool HttpFront::open(std::string& error) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    const std::string port = std::to_string(opt_.port);
    if (const int rc = getaddrinfo(opt_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
        error = std::string("cannot resolve ") + opt_.host + ": " + gai_strerror(rc);
        return false;
    }
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) continue;
        const int yes = 1;
        // SO_REUSEADDR but not SO_REUSEPORT: a second server never silently shares the port.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
            listen_fd_ = fd;
            break;
        }
        error = std::strerror(errno);
        ::close(fd);
    }
    freeaddrinfo(res);
    if (listen_fd_ < 0) {
        error = "cannot listen on " + opt_.host + ":" + port + ": " + error;
        return false;
    }
    // httplib stops writing a chunked (streamed) response once its own listening socket is
    // invalid; it is set to ours until every worker is done.
    svr_sock_ = listen_fd_;
    if (pipe2(wake_fd_, O_CLOEXEC | O_NONBLOCK) != 0) {
        error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    return true;
}

void HttpFront::wake() {
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_[1], &b, 1);
}

void HttpFront::stop() {
    stopping_ = true;
    wake();
}

void HttpFront::serve() {
    for (int i = 0; i < opt_.workers; ++i) workers_.emplace_back([this] { worker(); });
    loop();
    {
        std::lock_guard lock(mu_);
        workers_quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
    svr_sock_ = INVALID_SOCKET;
    for (auto& c : returned_) close_conn(*c);
    returned_.clear();
}

void HttpFront::close_conn(Conn& c) {
    if (c.fd < 0) return;
    body_reserved_ -= c.reserved;
    c.reserved = 0;
    ::close(c.fd);
    c.fd = -1;
    --open_;
}

void HttpFront::loop() {
    std::vector<pollfd> fds;
    while (!stopping_) {
        auto now = Clock::now();
        // Connections the workers are done with (keep-alive) come back here.
        {
            std::lock_guard lock(mu_);
            while (!returned_.empty()) {
                std::unique_ptr<Conn> c = std::move(returned_.front());
                returned_.pop_front();
                body_reserved_ -= c->reserved;
                c->reserved = 0;
                c->phase = Conn::Phase::Idle;
                c->head = HeadCheck{};
                if (c->close_after) {
                    close_conn(*c);
                    continue;
                }
                c->deadline = now + std::chrono::milliseconds(opt_.idle_timeout_ms);
                if (!c->buf.empty()) advance(*c, now);  // a pipelined request
                if (c->fd >= 0) conns_.push_back(std::move(c));
            }
        }
        dispatch_complete();  // pipelined requests that came back complete
        // Bodies waiting for budget.
        for (auto& c : conns_)
            if (c->fd >= 0 && c->budget_wait && body_reserved_ + c->head.content_length <= opt_.body_budget_bytes) {
                c->budget_wait = false;
                c->reserved = static_cast<size_t>(c->head.content_length);
                body_reserved_ += c->reserved;
            }
        fds.clear();
        fds.push_back(pollfd{wake_fd_[0], POLLIN, 0});
        fds.push_back(pollfd{listen_fd_, POLLIN, 0});
        int timeout = 1000;
        for (auto& c : conns_) {
            fds.push_back(pollfd{c->fd, static_cast<short>(c->budget_wait ? 0 : POLLIN), 0});
            timeout = std::min(timeout, ms_until(c->deadline, now));
        }
        const int n = poll(fds.data(), fds.size(), timeout);
        if (n < 0 && errno != EINTR) break;
        now = Clock::now();
        if (fds[0].revents & POLLIN) {
            char drain[64];
            while (::read(wake_fd_[0], drain, sizeof drain) > 0) {
            }
        }
        if (fds[1].revents & POLLIN) accept_all(now);
        const size_t polled = fds.size() - 2;
        for (size_t i = 0; i < polled; ++i) {
            Conn& c = *conns_[i];
            if (c.fd < 0) continue;
            if (fds[i + 2].revents && c.budget_wait) {
                close_conn(c);  // not polled for input: only a hang-up or an error wakes it
                continue;
            }
            if (fds[i + 2].revents) on_readable(c, now);
            if (c.fd >= 0 && now >= c.deadline) {
                if (c.phase == Conn::Phase::Head || c.phase == Conn::Phase::Body)
                    answer_and_drain(c, 408, "the request was not received in time", now);
                else
                    close_conn(c);
            }
        }
        dispatch_complete();
    }
    // Stopping: no new connections; the ones waiting here close, the workers finish theirs.
    ::close(listen_fd_);
    listen_fd_ = -1;
    for (auto& c : conns_) close_conn(*c);
    conns_.clear();
}

bool HttpFront::request_complete(const Conn& c) {
    return (c.phase == Conn::Phase::Head || c.phase == Conn::Phase::Body) &&
           c.head.state == HeadCheck::State::Complete && !c.budget_wait &&
           (c.head.chunked || c.buf.size() >= c.head.head_bytes + c.head.content_length);
}

void HttpFront::dispatch_complete() {
    // Requests with their head (and Content-Length body) complete go to the workers;
    // closed connections leave.
    std::vector<std::unique_ptr<Conn>> keep;
    for (auto& c : conns_) {
        if (c->fd < 0) continue;
        if (request_complete(*c)) {
            std::lock_guard lock(mu_);
            ready_.push_back(std::move(c));
            cv_.notify_one();
        } else {
            keep.push_back(std::move(c));
        }
    }
    conns_ = std::move(keep);
}

void HttpFront::accept_all(Clock::time_point now) {
    for (int i = 0; i < 64; ++i) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        ++open_;
        auto c = std::make_unique<Conn>();
        c->fd = fd;
        c->deadline = now + std::chrono::milliseconds(opt_.head_timeout_ms);
        const int yes = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // no Nagle delay on keep-alive responses
        if (open_.load() > opt_.max_connections) {
            // Answered at once; kept a moment for draining unless far over the limit.
            answer_and_drain(*c, 503, "too many open connections (limit " + std::to_string(opt_.max_connections) + ")", now);
            if (open_.load() > opt_.max_connections + 64) {
                close_conn(*c);
                continue;
            }
            c->deadline = now + std::chrono::milliseconds(200);
        }
        conns_.push_back(std::move(c));
    }
}

void HttpFront::on_readable(Conn& c, Clock::time_point now) {
    char chunk[16384];
    for (int reads = 0; reads < 64; ++reads) {
        size_t want = sizeof chunk;
        if (c.phase == Conn::Phase::Idle || c.phase == Conn::Phase::Head) {
            const size_t cap = opt_.limits.max_head_bytes + 1;
            if (c.buf.size() >= cap) break;
            want = std::min(want, cap - c.buf.size());
        } else if (c.phase == Conn::Phase::Body) {
            const size_t total = c.head.head_bytes + static_cast<size_t>(c.head.content_length);
            if (c.buf.size() >= total) break;
            want = std::min(want, total - c.buf.size());
        }
        const ssize_t n = recv(c.fd, chunk, want, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n == 0 && request_complete(c)) break;  // a half-close after the request: it is answered
        if (n <= 0) {  // the peer closed (or reset) before a whole request arrived
            close_conn(c);
            return;
        }
        if (c.phase == Conn::Phase::Draining) continue;  // discarded
        c.buf.append(chunk, static_cast<size_t>(n));
        if (!advance(c, now)) return;
    }
    if (c.phase != Conn::Phase::Draining) advance(c, now);
}

bool HttpFront::advance(Conn& c, Clock::time_point now) {
    if (c.phase == Conn::Phase::Idle && !c.buf.empty()) {
        c.phase = Conn::Phase::Head;
        c.head = HeadCheck{};
        // A keep-alive connection's next request: the head deadline starts with its first byte.
        if (c.info.fd >= 0) c.deadline = now + std::chrono::milliseconds(opt_.head_timeout_ms);
    }
    if (c.phase == Conn::Phase::Head && c.head.state != HeadCheck::State::Complete) {
        HeadCheck h = check_request_head(c.buf, opt_.limits);
        if (h.state == HeadCheck::State::Incomplete) return true;
        if (h.state == HeadCheck::State::Invalid) {
            answer_and_drain(c, h.status, h.message, now);
            return false;
        }
        c.head = std::move(h);
        c.info.http11 = c.head.http11;
        if (!c.head.chunked && c.head.content_length > 0) {
            c.phase = Conn::Phase::Body;
            c.deadline = now + std::chrono::milliseconds(opt_.body_timeout_ms);
            if (body_reserved_ + c.head.content_length <= opt_.body_budget_bytes) {
                c.reserved = static_cast<size_t>(c.head.content_length);
                body_reserved_ += c.reserved;
            } else {
                c.budget_wait = true;
            }
            if (c.head.expect_continue && c.head.http11 && c.buf.size() < c.head.head_bytes + c.head.content_length) {
                static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
                [[maybe_unused]] const ssize_t n = send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            }
        }
    }
    return true;
}

void HttpFront::answer_and_drain(Conn& c, int status, const std::string& message, Clock::time_point now) {
    if (opt_.on_rejected) opt_.on_rejected(status);
    const std::string body = opt_.error_body ? opt_.error_body(status, message) : message;
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                      "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n" + body;
    [[maybe_unused]] const ssize_t n = send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    // The rest of what the client sends is read and dropped for a short while, so closing
    // with unread bytes (which sends a reset) does not destroy the answer before it is read.
    shutdown(c.fd, SHUT_WR);
    body_reserved_ -= c.reserved;
    c.reserved = 0;
    c.budget_wait = false;
    c.phase = Conn::Phase::Draining;
    c.buf.clear();
    c.buf.shrink_to_fit();
    c.deadline = now + std::chrono::milliseconds(1000);
}

void HttpFront::worker() {
    for (;;) {
        std::unique_ptr<Conn> c;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return workers_quit_ || !ready_.empty(); });
            if (ready_.empty()) return;
            c = std::move(ready_.front());
            ready_.pop_front();
        }
        run_request(std::move(c));
    }
}

void HttpFront::run_request(std::unique_ptr<Conn> c) {
    const uint64_t max_socket_bytes = c->head.chunked ? opt_.limits.max_body_bytes + 65536 : 0;
    ConnStream strm(c->fd, c->buf, Clock::now() + std::chrono::milliseconds(opt_.body_timeout_ms), opt_.write_timeout_ms,
                    max_socket_bytes);
    c->info.fd = c->fd;
    t_connection = &c->info;
    bool connection_closed = false;
    const bool ok = process_request(strm, stopping_.load(), connection_closed, nullptr);
    t_connection = nullptr;
    const size_t body_bytes = c->head.content_length;
    // The body budget is the loop's: it is given back there (returned or closed below).
    c->buf.erase(0, strm.consumed());
    if (body_bytes > (size_t{1} << 20)) c->buf.shrink_to_fit();
    c->close_after = !ok || connection_closed || strm.failed() || stopping_ || !c->head.keep_alive;
    {
        // Back to the loop, which owns the body budget and closes or keeps the connection.
        std::lock_guard lock(mu_);
        returned_.push_back(std::move(c));
    }
    if (t_trim || body_bytes > (size_t{1} << 20)) malloc_trim(0);  // a large request's pages go back to the system
    t_trim = false;
    wake();
}

}  // namespace genie::server
