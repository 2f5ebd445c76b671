// A benchmark buffer on transparent huge pages, as decode's weights have them: the model
// file's mapping gets 2 MiB pages from the page cache where the kernel has them, and on
// 4 KiB pages one reader loses up to a third of its rate (genie_bench_bandwidth). The
// buffer is anonymous memory aligned to 2 MiB with MADV_HUGEPAGE (best effort: THP may be
// off); huge = false leaves it on 4 KiB pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <sys/mman.h>

namespace genie::bench {

class HugeBuffer {
public:
    explicit HugeBuffer(size_t bytes, bool huge = true) : bytes_(bytes) {
        mem_ = ::mmap(nullptr, bytes_ + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem_ == MAP_FAILED) throw std::bad_alloc();
        data_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mem_) + kHuge - 1) & ~(kHuge - 1));
#ifdef MADV_HUGEPAGE
        if (huge) ::madvise(data_, bytes_, MADV_HUGEPAGE);
#endif
    }
    HugeBuffer(const HugeBuffer&) = delete;
    HugeBuffer& operator=(const HugeBuffer&) = delete;
    ~HugeBuffer() { ::munmap(mem_, bytes_ + kHuge); }
    uint8_t* data() const { return data_; }
    size_t size() const { return bytes_; }

private:
    static constexpr size_t kHuge = size_t{2} << 20;
    size_t bytes_;
    void* mem_ = nullptr;
    uint8_t* data_ = nullptr;
};

}  // namespace genie::bench
