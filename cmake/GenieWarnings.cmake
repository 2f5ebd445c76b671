# Warning flags for libgenie's own targets (not for third-party code).
function(genie_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow=local -Wno-unused-parameter>)
endfunction()
