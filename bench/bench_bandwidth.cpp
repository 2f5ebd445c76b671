// genie_bench_bandwidth: this machine's memory read bandwidth, the roofline of decode
// (docs/performance.md: bytes of weights read per token / time per token, as a share of
// this figure). Reads a buffer much larger than the caches (default 1 GiB) with 1..T
// threads, best of R passes. The figure has to be the best streaming read the machine
// does, or a decode kernel can beat its own roofline: each thread sums its contiguous
// slice with the widest vector loads the CPU has (AVX-512, AVX2 or the compiler's
// default, chosen at run time as the kernels are), and with 1, 2, 4 and 8 streams per
// thread (its slice cut into S parts read side by side: the decode kernels walk two rows
// at once on some CPUs because one stream per core does not keep enough misses in
// flight there). Each thread count reports its best setting. The buffer asks for
// transparent huge pages (madvise; the line "pages:" says how much of it got them): the
// model file's mapping gets 2 MiB pages from the page cache where the kernel has them,
// and 4 KiB pages cost a single reader up to a third of its rate here, so the roofline
// is taken with the pages a decode can have at best. bench/compare runs this once per
// round and reads the line "threads T: X GB/s".
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
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GENIE_BW_X86 1
#endif

namespace {

constexpr size_t kLine = 64;  // bytes per stream step: one cache line

// Sums S streams of `lines` cache lines each (stream s starts at p + s * lines * 8
// words), one line of every stream per step. Generic: the compiler's own vectorisation.
template <int S>
uint64_t sum_generic(const uint64_t* p, size_t lines) {
    uint64_t acc[S][8] = {};
    for (size_t i = 0; i < lines; ++i)
        for (int s = 0; s < S; ++s) {
            const uint64_t* q = p + (static_cast<size_t>(s) * lines + i) * 8;
            for (int j = 0; j < 8; ++j) acc[s][j] += q[j];
        }
    uint64_t r = 0;
    for (int s = 0; s < S; ++s)
        for (int j = 0; j < 8; ++j) r += acc[s][j];
    return r;
}

#ifdef GENIE_BW_X86
template <int S>
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint64_t* p, size_t lines) {
    __m256i acc[S][2];
    for (int s = 0; s < S; ++s) acc[s][0] = acc[s][1] = _mm256_setzero_si256();
    for (size_t i = 0; i < lines; ++i)
        for (int s = 0; s < S; ++s) {
            const auto* q = reinterpret_cast<const __m256i*>(p + (static_cast<size_t>(s) * lines + i) * 8);
            acc[s][0] = _mm256_add_epi64(acc[s][0], _mm256_load_si256(q));
            acc[s][1] = _mm256_add_epi64(acc[s][1], _mm256_load_si256(q + 1));
        }
    alignas(32) uint64_t out[4];
    __m256i t = _mm256_setzero_si256();
    for (int s = 0; s < S; ++s) t = _mm256_add_epi64(t, _mm256_add_epi64(acc[s][0], acc[s][1]));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), t);
    return out[0] + out[1] + out[2] + out[3];
}

template <int S>
__attribute__((target("avx512f"))) uint64_t sum_avx512(const uint64_t* p, size_t lines) {
    __m512i acc[S];
    for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_si512();
    for (size_t i = 0; i < lines; ++i)
        for (int s = 0; s < S; ++s)
            acc[s] = _mm512_add_epi64(acc[s], _mm512_load_si512(p + (static_cast<size_t>(s) * lines + i) * 8));
    __m512i t = _mm512_setzero_si512();
    for (int s = 0; s < S; ++s) t = _mm512_add_epi64(t, acc[s]);
    return static_cast<uint64_t>(_mm512_reduce_add_epi64(t));
}
#endif

enum class Isa { generic, avx2, avx512 };

Isa best_isa() {
#ifdef GENIE_BW_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Isa::avx512;
    if (__builtin_cpu_supports("avx2")) return Isa::avx2;
#endif
    return Isa::generic;
}

const char* isa_name(Isa i) {
    switch (i) {
    case Isa::avx512: return "512-bit";
    case Isa::avx2: return "256-bit";
    default: return "compiler-vectorised";
    }
}

template <int S>
uint64_t sum_streams(Isa isa, const uint64_t* p, size_t lines) {
#ifdef GENIE_BW_X86
    if (isa == Isa::avx512) return sum_avx512<S>(p, lines);
    if (isa == Isa::avx2) return sum_avx2<S>(p, lines);
#endif
    (void)isa;
    return sum_generic<S>(p, lines);
}

// One thread's slice [first, first + lines) of cache lines, read as S streams (the tail
// that does not divide by S is read as one more stream).
uint64_t sum_slice(Isa isa, int streams, const uint64_t* buf, size_t first, size_t lines) {
    const size_t per = lines / static_cast<size_t>(streams);
    const uint64_t* p = buf + first * 8;
    uint64_t r = 0;
    switch (streams) {
    case 1: r = sum_streams<1>(isa, p, per); break;
    case 2: r = sum_streams<2>(isa, p, per); break;
    case 4: r = sum_streams<4>(isa, p, per); break;
    default: r = sum_streams<8>(isa, p, per); break;
    }
    const size_t done = per * static_cast<size_t>(streams);
    return r + sum_streams<1>(isa, p + done * 8, lines - done);
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
    const Isa isa = best_isa();
    const size_t lines = bytes / kLine;
    constexpr int kStreams[] = {1, 2, 4, 8};
    std::printf("buffer %zu MiB, best of %d passes, %s loads, 1/2/4/8 streams per thread\n", mib, passes, isa_name(isa));
    std::printf("pages: %.0f %% of the buffer in 2 MiB pages\n",
                std::min(100.0, 100.0 * static_cast<double>(huge_kb) * 1024.0 / static_cast<double>(bytes)));
    for (int t = 1; t <= max_threads; ++t) {
        double best[std::size(kStreams)];
        std::fill(std::begin(best), std::end(best), 1e30);
        for (int p = 0; p < passes; ++p)
            for (size_t si = 0; si < std::size(kStreams); ++si) {  // settings interleaved: one phase of the machine favours none
                std::vector<uint64_t> part(static_cast<size_t>(t));
                const auto t0 = std::chrono::steady_clock::now();
                std::vector<std::thread> th;
                for (int k = 0; k < t; ++k)
                    th.emplace_back([&, k, si] {
                        const size_t b = lines * static_cast<size_t>(k) / static_cast<size_t>(t);
                        const size_t e = lines * static_cast<size_t>(k + 1) / static_cast<size_t>(t);
                        part[static_cast<size_t>(k)] = sum_slice(isa, kStreams[si], buf, b, e - b);
                    });
                for (auto& x : th) x.join();
                best[si] = std::min(best[si], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
                for (uint64_t v : part) sink = sink + v;
            }
        const size_t w = static_cast<size_t>(std::min_element(std::begin(best), std::end(best)) - std::begin(best));
        const auto gbs = [&](double sec) { return static_cast<double>(bytes) / sec / 1e9; };
        std::printf("threads %d: %.1f GB/s (read %zu MiB in %.1f ms, %d stream%s per thread; by streams 1/2/4/8: %.1f %.1f %.1f %.1f)\n",
                    t, gbs(best[w]), mib, best[w] * 1e3, kStreams[w], kStreams[w] == 1 ? "" : "s", gbs(best[0]), gbs(best[1]),
                    gbs(best[2]), gbs(best[3]));
    }
    return 0;
}
