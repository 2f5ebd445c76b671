// genie-server: noticing clients that went away. See the comment on PeerProbe.
#pragma once

#include <genie/session.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

#include <poll.h>
#include <sys/socket.h>

namespace genie::server {

// The connection layer tells each handler its socket (current_connection()). A peer that
// closed its end shows POLLRDHUP; that may be a half-close (shutdown(SHUT_WR) after the
// request: the client still reads) or a full close, which TCP cannot tell apart until the
// server sends something. So before the response has started, an HTTP/1.1 client that
// half-closed gets an interim "100 Continue" (every HTTP/1.1 client skips 1xx responses):
// a closed socket answers it with a reset (POLLHUP/POLLERR: gone), a half-closed one reads
// it and waits for the answer. Once a stream has started its own writes do the same.

/// Whether the client of one request is still there.
class PeerProbe {
public:
    PeerProbe() = default;
    PeerProbe(int fd, bool http11, bool response_started) : fd_(fd), http11_(http11), started_(response_started) {}
    bool gone() {
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

private:
    int fd_ = -1;
    bool http11_ = true;
    bool started_ = false;
    bool probed_ = false;
};

/// Polls the sockets of running generations every 10 ms and cancels the generation of a
/// client that went away (Session::cancel: it stops within one token). Also cancels
/// everything at shutdown.
class Watchdog {
public:
    Watchdog() : thread_([this] { loop(); }) {}
    ~Watchdog() {
        quit_ = true;
        thread_.join();
    }
    uint64_t add(PeerProbe probe, Session* session) {
        std::lock_guard lock(mu_);
        entries_[++next_] = Entry{probe, session, false};
        return next_;
    }
    void remove(uint64_t id) {
        std::lock_guard lock(mu_);
        entries_.erase(id);
    }
    bool gone(uint64_t id) {
        std::lock_guard lock(mu_);
        auto it = entries_.find(id);
        return it != entries_.end() && it->second.gone;
    }
    void mark_gone(uint64_t id) {
        std::lock_guard lock(mu_);
        if (auto it = entries_.find(id); it != entries_.end()) {
            it->second.gone = true;
            it->second.session->cancel();
        }
    }
    void cancel_all() { stopping_ = true; }

private:
    struct Entry {
        PeerProbe probe;
        Session* session;
        bool gone;
    };
    void loop() {
        while (!quit_) {
            {
                std::lock_guard lock(mu_);
                for (auto& [id, e] : entries_) {
                    if (!e.gone && (stopping_ || e.probe.gone())) e.gone = true;
                    // Repeated while the request runs: a cancel that lands before generate()
                    // starts (which clears the flag) is not lost.
                    if (e.gone) e.session->cancel();
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    std::mutex mu_;
    std::map<uint64_t, Entry> entries_;
    uint64_t next_ = 0;
    std::atomic<bool> quit_{false}, stopping_{false};
    std::thread thread_;
};

class Watch {
public:
    Watch(Watchdog& w, PeerProbe probe, Session* s) : w_(w), id_(w.add(probe, s)) {}
    ~Watch() { w_.remove(id_); }
    bool gone() const { return w_.gone(id_); }
    void mark_gone() { w_.mark_gone(id_); }

private:
    Watchdog& w_;
    uint64_t id_;
};

}  // namespace genie::server
