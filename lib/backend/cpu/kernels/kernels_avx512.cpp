// AVX-512 (F/BW/VL + VNNI) kernels: the x86 kernels with the integer multiply-adds fused
// into vpdpbusd / vpdpwssd and 32 vector registers for larger tiles. Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c (lib/CMakeLists.txt);
// only called after kernel_set() checked the CPU. Where the compiler has -mamx-tile and
// -mamx-int8, the same translation unit also builds the "avx512_amx" set: these kernels
// with AMX tiles for K-quant prefill (x86_kernels.inc, GENIE_X86_AMX), used only on CPUs
// with AMX-INT8 whose kernel granted the tile state (dispatch.cpp).
#include "backend/cpu/kernels/kernels.hpp"

#if defined(__x86_64__) && defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define GENIE_TILE_ROWS 4
#define GENIE_TILE_COLS 4
#if defined(__AMX_TILE__) && defined(__AMX_INT8__)
#define GENIE_X86_AMX 1
#endif
#include "backend/cpu/kernels/x86_kernels.inc"

const genie::cpu::KernelSet* genie::cpu::detail::avx512_kernels() {
    static const KernelSet set = make_set("avx512_vnni");
    return &set;
}
#ifdef GENIE_X86_AMX
const genie::cpu::KernelSet* genie::cpu::detail::amx_kernels() {
    static const KernelSet set = make_set_amx("avx512_amx");
    return &set;
}
#else
const genie::cpu::KernelSet* genie::cpu::detail::amx_kernels() { return nullptr; }
#endif
#else
const genie::cpu::KernelSet* genie::cpu::detail::avx512_kernels() { return nullptr; }
const genie::cpu::KernelSet* genie::cpu::detail::amx_kernels() { return nullptr; }
#endif
