# Cross-compiling libgenie for aarch64 (64-bit ARM Linux, e.g. the Jetson's Cortex-A78AE)
# on a Debian/Ubuntu x86-64 host with the distribution's cross toolchain:
#   apt install g++-aarch64-linux-gnu qemu-user        (scripts/setup)
#   dpkg --add-architecture arm64 && apt install libpcre2-dev:arm64 libfmt-dev:arm64
#                                                      (scripts/setup --aarch64)
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# scripts/test-aarch64 does all of it and runs the tests under qemu-aarch64.
#
# Libraries: the compiled ones (PCRE2, fmt) come from Debian's multiarch arm64 packages in
# /usr/lib/aarch64-linux-gnu, which the cross linker searches after its own sysroot
# (/usr/aarch64-linux-gnu); header-only ones (Catch2, nlohmann-json) and their CMake
# package files are architecture-independent and shared with the host packages.
# Programs built here run under qemu-user: CMAKE_CROSSCOMPILING_EMULATOR makes ctest (and
# catch_discover_tests) run them through qemu-aarch64 transparently.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(GENIE_AARCH64_TRIPLE aarch64-linux-gnu CACHE STRING "GNU triple of the aarch64 cross toolchain")
set(CMAKE_C_COMPILER ${GENIE_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${GENIE_AARCH64_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${GENIE_AARCH64_TRIPLE})

# Search the cross sysroot first, then the host's root (multiarch arm64 libraries under
# /usr/lib/aarch64-linux-gnu, architecture-independent CMake packages under /usr/lib/cmake
# and /usr/share). x86-64 libraries are never picked: they live under
# /usr/lib/x86_64-linux-gnu, which is not this CMAKE_LIBRARY_ARCHITECTURE.
set(CMAKE_FIND_ROOT_PATH /usr/${GENIE_AARCH64_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (PCRE2): only the arm64 .pc files.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${GENIE_AARCH64_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Run target programs (tests, fixture generator) with qemu-user. -cpu max enables every
# extension qemu emulates (dotprod, fp16, SVE ...), so the NEON dotprod kernels are
# selected and tested; GENIE_AARCH64_QEMU_CPU=cortex-a53 (plain ARMv8.0) tests the
# fallback path. -L: where the ELF interpreter and the cross libc live. LD_LIBRARY_PATH
# makes the loader take libc from there too: once libc6:arm64 (multiarch) is installed,
# /etc/ld.so.cache points libc.so.6 at /lib/aarch64-linux-gnu, a different glibc build than
# the cross sysroot's ld.so, and the mismatched pair hangs in pthread_create.
find_program(GENIE_QEMU_AARCH64 qemu-aarch64)
if(GENIE_QEMU_AARCH64)
  if(NOT DEFINED GENIE_AARCH64_QEMU_CPU)
    set(GENIE_AARCH64_QEMU_CPU max)
  endif()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${GENIE_QEMU_AARCH64};-L;/usr/${GENIE_AARCH64_TRIPLE};
      -E;LD_LIBRARY_PATH=/usr/${GENIE_AARCH64_TRIPLE}/lib;-cpu;${GENIE_AARCH64_QEMU_CPU})
endif()
