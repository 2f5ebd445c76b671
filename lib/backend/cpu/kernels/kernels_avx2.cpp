// AVX2 + FMA + F16C kernels (this file is compiled with -mavx2 -mfma -mf16c; see
// lib/CMakeLists.txt). Only called after kernel_set() checked the CPU.
#include "backend/cpu/kernels/kernels.hpp"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GENIE_TILE_ROWS 2
#define GENIE_TILE_COLS 4
#include "backend/cpu/kernels/x86_kernels.inc"

const genie::cpu::KernelSet* genie::cpu::detail::avx2_kernels() {
    static const KernelSet set = make_set("avx2");
    return &set;
}
#else
const genie::cpu::KernelSet* genie::cpu::detail::avx2_kernels() { return nullptr; }
#endif
