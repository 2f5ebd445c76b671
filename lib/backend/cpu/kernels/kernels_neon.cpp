// aarch64 NEON + dotprod kernels: not written yet; the scalar set is used on aarch64.
#include "backend/cpu/kernels/kernels.hpp"

const genie::cpu::KernelSet* genie::cpu::detail::neon_kernels() { return nullptr; }
