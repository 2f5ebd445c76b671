# Warning flags for libgenie's own targets (not for third-party code).
# GENIE_WERROR (not yet on in .ci/run: the ASan/UBSan build is unverified with it): warnings are
# errors for these targets' C and C++ sources.
# Designated initializers leave the fields they do not name at their defaults by design, so
# -Wmissing-field-initializers (which GCC 12 raises for them) is off. GCC 12's
# -Wmaybe-uninitialized / -Wuninitialized inside the AVX-512 intrinsics (GCC bug 105593,
# fixed in 13) and its -Wrestrict / -Wmaybe-uninitialized in libstdc++'s string code at -O2
# (GCC bug 105651) are false positives: they stay warnings, not errors, before GCC 13.
# CUDA sources keep their own flags (cuda/CMakeLists.txt) and are not made -Werror.
# The default comes from the environment variable GENIE_WERROR (ON/OFF) where it is set.
set(GENIE_WERROR_DEFAULT OFF)
if(DEFINED ENV{GENIE_WERROR})
  set(GENIE_WERROR_DEFAULT $ENV{GENIE_WERROR})
endif()
option(GENIE_WERROR "Treat compiler warnings as errors in libgenie's own targets" ${GENIE_WERROR_DEFAULT})
function(genie_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow=local -Wno-unused-parameter -Wno-missing-field-initializers>)
  # The kernels silence GCC-only warnings by name (#pragma GCC diagnostic ignored
  # "-Wmaybe-uninitialized"); clang does not know the name.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Wno-unknown-warning-option>)
  endif()
  if(GENIE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX,C>:-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=restrict>)
    endif()
  endif()
endfunction()
