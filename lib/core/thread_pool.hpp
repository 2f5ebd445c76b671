// A persistent pool of worker threads for data-parallel loops: threads are created
// once (per session), never per op. A dispatch is published through an atomic
// generation counter: idle workers spin on it briefly (decode runs hundreds of short
// ops per token, where a condition-variable wake-up would cost more than the op) and
// then sleep on a condition variable. Participants claim chunks of the range from an
// atomic counter, large first and smaller towards the end (guided self-scheduling), so
// a worker the OS has not scheduled yet (cores shared with other processes) delays
// nothing (the caller takes its chunks) and the threads finish close together.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace genie {

class ThreadPool {
public:
    /// `threads` workers in total, including the calling thread (>= 1).
    explicit ThreadPool(int32_t threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int32_t size() const noexcept { return static_cast<int32_t>(workers_.size()) + 1; }

    /// Runs fn(begin, end) over [0, n) split into contiguous chunks (claimed dynamically,
    /// shrinking from n / (2 x threads) to n / (32 x threads); the caller's thread takes
    /// part) and returns when all are done. n < 2^40.
    /// Exceptions from fn are rethrown on the caller's thread. Not reentrant: one
    /// parallel_for at a time per pool.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

private:
    void worker(int32_t index);
    /// Claims and runs chunks of dispatch `gen` until none is left.
    void work(uint64_t gen) noexcept;

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;  // published by generation_
    // Atomic (relaxed) because a worker may read it for an older generation's value of
    // work_ while the caller writes it for the next dispatch (its claim then fails).
    std::atomic<int64_t> job_n_{0};
    static constexpr int kNextBits = 40;
    static constexpr uint64_t kNextMask = (uint64_t{1} << kNextBits) - 1, kGenMask = (uint64_t{1} << (64 - kNextBits)) - 1;
    std::atomic<uint64_t> generation_{0};
    uint64_t last_generation_ = 0;          // caller only
    std::atomic<uint64_t> work_{0};         // (generation mod 2^24) << 40 | next unclaimed index
    std::atomic<int64_t> done_{0};          // indices of the current dispatch finished
    std::atomic<int32_t> sleeping_{0};
    bool stop_ = false;  // guarded by mutex_
    std::atomic<bool> stopping_{false};
    std::mutex error_mutex_;
    std::exception_ptr error_;
};

}  // namespace genie
