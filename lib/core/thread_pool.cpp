#include "core/thread_pool.hpp"

#include <algorithm>

namespace genie {

ThreadPool::ThreadPool(int32_t threads) {
    const int32_t n = std::max(1, threads);
    for (int32_t i = 1; i < n; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

namespace {
void chunk(int64_t n, int32_t parts, int32_t index, int64_t& begin, int64_t& end) {
    const int64_t base = n / parts, extra = n % parts;
    begin = index * base + std::min<int64_t>(index, extra);
    end = begin + base + (index < extra ? 1 : 0);
}
}  // namespace

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    if (workers_.empty() || n == 1) {
        fn(0, n);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        job_ = &fn;
        job_n_ = n;
        pending_ = static_cast<int32_t>(workers_.size());
        error_ = nullptr;
        ++generation_;
    }
    start_cv_.notify_all();
    std::exception_ptr mine;
    try {
        int64_t b, e;
        chunk(n, size(), 0, b, e);
        if (b < e) fn(b, e);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker(int32_t index) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int64_t, int64_t)>* job;
        int64_t n;
        {
            std::unique_lock lock(mutex_);
            start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
            n = job_n_;
        }
        std::exception_ptr err;
        try {
            int64_t b, e;
            chunk(n, size(), index, b, e);
            if (b < e) (*job)(b, e);
        } catch (...) {
            err = std::current_exception();
        }
        {
            std::lock_guard lock(mutex_);
            if (err && !error_) error_ = err;
            if (--pending_ == 0) done_cv_.notify_one();
        }
    }
}

}  // namespace genie
