# FGPU_FUZZ=ON: every fgpu library is compiled with libFuzzer's coverage instrumentation
# (fuzzer-no-link: the counters and comparison hooks, not libFuzzer's main) and with
# AddressSanitizer and UndefinedBehaviorSanitizer, so that a fuzzer linking them sees their
# branches and any memory error or undefined behaviour in them is a crash. The fuzzers themselves
# link -fsanitize=fuzzer (fuzz/CMakeLists.txt). Included by the top level before any library.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FGPU_FUZZ=ON needs Clang (libFuzzer ships with it), not ${CMAKE_CXX_COMPILER_ID}: "
                      "configure with CC=clang CXX=clang++, as scripts/fuzz does")
endif()
if(FGPU_SANITIZE)
  message(FATAL_ERROR "FGPU_FUZZ=ON brings its own sanitizers (address,undefined); leave FGPU_SANITIZE empty")
endif()
if(FGPU_BUILD_TESTS OR FGPU_BUILD_BENCH)
  message(STATUS "FGPU_FUZZ: FGPU_BUILD_TESTS=OFF and FGPU_BUILD_BENCH=OFF keep this build small (scripts/fuzz sets them)")
endif()

# Recover from nothing: a report must end the run, so that libFuzzer saves the input.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)

# fgpu's warnings are tuned for GCC, the compiler of every other build; Clang warns about other
# things in code this build does not own. Here they stay warnings (the GCC builds keep -Werror).
function(fgpu_target_defaults target)
  _fgpu_target_defaults(${target})
  target_compile_options(${target} PRIVATE -Wno-error)
endfunction()
