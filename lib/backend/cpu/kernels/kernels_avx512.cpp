// AVX-512 (F/BW/VL + VNNI) kernels: the x86 kernels with the integer multiply-adds fused
// into vpdpbusd / vpdpwssd and 32 vector registers for larger tiles. Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c (lib/CMakeLists.txt);
// only called after kernel_set() checked the CPU.
#include "backend/cpu/kernels/kernels.hpp"

#if defined(__x86_64__) && defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define GENIE_TILE_ROWS 4
#define GENIE_TILE_COLS 4
#include "backend/cpu/kernels/x86_kernels.inc"

const genie::cpu::KernelSet* genie::cpu::detail::avx512_kernels() {
    static const KernelSet set = make_set("avx512_vnni");
    return &set;
}
#else
const genie::cpu::KernelSet* genie::cpu::detail::avx512_kernels() { return nullptr; }
#endif
