// aarch64 NEON kernels with the ARMv8.2 dot-product extension (sdot: 4 int8 products summed
// into each int32 lane in one instruction; Cortex-A55/A75 and later, e.g. the Jetson Orin's
// Cortex-A78AE). Compiled with -march=armv8.2-a+dotprod (lib/CMakeLists.txt); only called
// after kernel_set() found HWCAP_ASIMDDP.
#include "backend/cpu/kernels/kernels.hpp"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include "backend/cpu/kernels/neon_kernels.inc"

const genie::cpu::KernelSet* genie::cpu::detail::neon_dotprod_kernels() {
    static const KernelSet set = make_set("neon+dotprod");
    return &set;
}
#else
const genie::cpu::KernelSet* genie::cpu::detail::neon_dotprod_kernels() { return nullptr; }
#endif
