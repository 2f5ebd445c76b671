#include "core/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GENIE_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define GENIE_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define GENIE_CPU_RELAX() ((void)0)
#endif

namespace genie {

namespace {
/// How long an idle worker spins before it sleeps (covers the gap between the ops of
/// one decode step without burning a core when the session is idle).
constexpr auto kSpinTime = std::chrono::microseconds(2000);

/// Guided self-scheduling: a claim at `next` takes half of an even share of what is left
/// (remaining / (2 x threads)), at least n / (32 x threads). Early claims are large (few
/// atomic operations), the last ones small, so the threads finish within one small chunk
/// of each other: with equal chunks of n / (4 x threads) the tail was up to an eighth of
/// a decode matmul on 2 threads, spent spinning by the thread that finished first. The
/// floor was n / (16 x threads): on the Xeon, 0.6B tg128 at 2 threads, the time both
/// threads spent waiting (the caller for the last chunk, the worker between dispatches)
/// fell from 1.17 to 0.90-0.99 ms per token with n / 32 (10.7 -> 12.6 claims per
/// dispatch); n / 64 waited as long as n / 32 with 13.9 claims.
int64_t claim_size(int64_t n, int64_t next, int64_t threads) {
    const int64_t min_size = std::max<int64_t>(1, n / (32 * threads));
    return std::min(n - next, std::max(min_size, (n - next) / (2 * threads)));
}
}  // namespace

ThreadPool::ThreadPool(int32_t threads) {
    const int32_t n = std::max(1, threads);
    for (int32_t i = 1; i < n; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
        stopping_.store(true, std::memory_order_release);
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::work(uint64_t gen) noexcept {
    const int64_t threads = size();
    for (;;) {
        uint64_t v = work_.load(std::memory_order_acquire);
        if ((v >> kNextBits) != (gen & kGenMask)) return;
        // The claim that takes the last index stores kNextMask: a worker still holding an
        // older generation's value then stops here without reading job_n_, which the
        // caller may already be rewriting for the next dispatch. (Reading it for a value
        // that is not the current one is harmless: the compare-exchange below fails.)
        if ((v & kNextMask) == kNextMask) return;
        const auto b = static_cast<int64_t>(v & kNextMask);
        const int64_t n = job_n_.load(std::memory_order_relaxed);
        const int64_t e = b + claim_size(n, b, threads);
        const uint64_t stored = e >= n ? kNextMask : static_cast<uint64_t>(e);
        if (!work_.compare_exchange_weak(v, (v & ~kNextMask) | stored, std::memory_order_acq_rel, std::memory_order_acquire))
            continue;
        // The claim keeps this dispatch (job_, job_n_) alive until done_ counts it.
        try {
            (*job_)(b, e);
        } catch (...) {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = std::current_exception();
        }
        done_.fetch_add(e - b, std::memory_order_acq_rel);
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    if (workers_.empty() || n == 1) {
        fn(0, n);
        return;
    }
    if (static_cast<uint64_t>(n) >= kNextMask) throw std::length_error("ThreadPool::parallel_for: range too large");
    const uint64_t gen = ++last_generation_;
    job_ = &fn;
    job_n_.store(n, std::memory_order_relaxed);
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    {
        // Under the mutex so that a worker about to sleep either sees the new
        // generation in its wait predicate or is already waiting when we notify.
        std::lock_guard lock(mutex_);
        work_.store((gen & kGenMask) << kNextBits, std::memory_order_release);
        generation_.store(gen, std::memory_order_release);
    }
    if (sleeping_.load(std::memory_order_acquire) > 0) start_cv_.notify_all();
    work(gen);
    for (uint32_t spins = 0; done_.load(std::memory_order_acquire) != n; ++spins) {
        if (spins < 4000) GENIE_CPU_RELAX();
        else std::this_thread::yield();
    }
    job_ = nullptr;
    if (error_) {
        std::exception_ptr e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
    }
}

void ThreadPool::worker(int32_t) {
    uint64_t seen = 0;
    for (;;) {
        // Spin for a while, then sleep until the next dispatch.
        const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
        uint32_t spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && !stopping_.load(std::memory_order_acquire)) {
            if (++spins < 4000) GENIE_CPU_RELAX();
            else std::this_thread::yield();  // cores may be shared: let the thread we wait for run
            if ((spins & 255) == 0 && std::chrono::steady_clock::now() > spin_until) {
                std::unique_lock lock(mutex_);
                sleeping_.fetch_add(1, std::memory_order_acq_rel);
                start_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
                sleeping_.fetch_sub(1, std::memory_order_acq_rel);
                break;
            }
        }
        if (stopping_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        work(seen);
    }
}

}  // namespace genie
