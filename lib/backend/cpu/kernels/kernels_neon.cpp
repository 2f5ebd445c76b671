// aarch64 NEON kernels for every ARMv8-A CPU (AdvSIMD is architectural on aarch64): the
// int8 dot products widen with smull/sadalp. Compiled for baseline armv8-a.
#include "backend/cpu/kernels/kernels.hpp"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include "backend/cpu/kernels/neon_kernels.inc"

const genie::cpu::KernelSet* genie::cpu::detail::neon_kernels() {
    static const KernelSet set = make_set("neon");
    return &set;
}
#else
const genie::cpu::KernelSet* genie::cpu::detail::neon_kernels() { return nullptr; }
#endif
