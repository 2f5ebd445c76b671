// An allocator for large buffers that are streamed every step (the KV cache): blocks of
// 2 MiB or more are aligned to 2 MiB and advised MADV_HUGEPAGE, so that where transparent
// huge pages are on (always, or madvise as most distributions ship them) the buffer sits on
// 2 MiB pages, as the model file's mapping does (mapped_file.cpp). On 4 KiB pages a decode
// step's attention walks a new page every 16 cells of a head and misses the TLB for
// nearly each (a 4B-shape layer's cache is 16 MiB at 4096 cells, past what the second-level
// TLB maps). Smaller blocks come from operator new. Best effort: where THP is off or the
// advice is unknown the memory is ordinary.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <sys/mman.h>

namespace genie {

template <class T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr size_t kHuge = size_t{2} << 20;

    HugePageAllocator() noexcept = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

    T* allocate(size_t n) {
        if (n > static_cast<size_t>(-1) / sizeof(T) - kHuge) throw std::bad_alloc();
        const size_t bytes = n * sizeof(T);
        if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
        const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
        void* p = std::aligned_alloc(kHuge, rounded);
        if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t n) noexcept {
        if (n * sizeof(T) < kHuge) ::operator delete(p);
        else std::free(p);
    }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace genie
