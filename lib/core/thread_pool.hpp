// A persistent pool of worker threads for data-parallel loops: threads are created
// once (per session), never per op.
#pragma once

#include <condition_variable>
#include <cstdint>
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

    /// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per thread,
    /// and returns when all are done. The caller's thread takes the first chunk.
    /// Exceptions from fn are rethrown on the caller's thread.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

private:
    void worker(int32_t index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_;
    std::condition_variable done_cv_;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t job_n_ = 0;
    uint64_t generation_ = 0;
    int32_t pending_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
};

}  // namespace genie
