// genie_bench_bandwidth: this machine's memory read bandwidth, the roofline of decode
// (docs/performance.md: bytes of weights read per token / time per token, as a share of
// this figure). Reads a buffer much larger than the caches (default 1 GiB) with 1..T
// threads, each summing its contiguous slice (vectorised 64-bit adds, what a streaming
// decode kernel does at best), best of R passes. The buffer asks for transparent huge
// pages (madvise; the line "pages:" says how much of it got them): the model file's
// mapping gets 2 MiB pages from the page cache where the kernel has them, and 4 KiB
// pages cost a single reader up to a third of its rate here, so the roofline is taken
// with the pages a decode can have at best. bench/compare runs this once per round.
//
//   genie_bench_bandwidth [MiB=1024] [threads=hardware] [passes=5]
#include "huge_buffer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t sum_slice(const uint64_t* p, size_t n) {
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
    }
    for (; i < n; ++i) a0 += p[i];
    return a0 + a1 + a2 + a3;
}

}  // namespace

int main(int argc, char** argv) {
    const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
    const int max_threads = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int passes = argc > 3 ? std::atoi(argv[3]) : 5;
    const size_t n = mib * 1024 * 1024 / sizeof(uint64_t);
    const size_t bytes = n * sizeof(uint64_t);
    std::unique_ptr<genie::bench::HugeBuffer> mem;
    try {
        mem = std::make_unique<genie::bench::HugeBuffer>(bytes);
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "cannot allocate %zu MiB: %s\n", mib, std::strerror(errno));
        return 1;
    }
    auto* buf = reinterpret_cast<uint64_t*>(mem->data());
    for (size_t i = 0; i < n; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;  // touch every page
    uint64_t huge_kb = 0;  // AnonHugePages of the process: this buffer's 2 MiB pages
    {
        std::ifstream f("/proc/self/smaps_rollup");
        for (std::string line; std::getline(f, line);)
            if (line.rfind("AnonHugePages:", 0) == 0) huge_kb = std::strtoull(line.c_str() + 14, nullptr, 10);
    }
    volatile uint64_t sink = 0;
    std::printf("buffer %zu MiB, best of %d passes\n", mib, passes);
    std::printf("pages: %.0f %% of the buffer in 2 MiB pages\n",
                std::min(100.0, 100.0 * static_cast<double>(huge_kb) * 1024.0 / static_cast<double>(bytes)));
    for (int t = 1; t <= max_threads; ++t) {
        double best = 1e30;
        for (int p = 0; p < passes; ++p) {
            std::vector<uint64_t> part(static_cast<size_t>(t));
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<std::thread> th;
            for (int k = 0; k < t; ++k)
                th.emplace_back([&, k] {
                    const size_t b = n * k / t, e = n * (k + 1) / t;
                    part[static_cast<size_t>(k)] = sum_slice(buf + b, e - b);
                });
            for (auto& x : th) x.join();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            for (uint64_t v : part) sink = sink + v;
        }
        std::printf("threads %d: %.1f GB/s (read %zu MiB in %.1f ms)\n", t, static_cast<double>(n * 8) / best / 1e9, mib,
                    best * 1e3);
    }
    return 0;
}
