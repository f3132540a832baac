// A guaranteed tail call from an exported libc override to the real function.
//
// glibc's dlsym, dlopen and dlmopen identify their caller by return address: RTLD_NEXT, the
// library search path (the caller's DT_RUNPATH/DT_RPATH, $ORIGIN) and the link-map namespace
// all follow it. An override that forwards by a tail call leaves the application's return
// address in place, so the real function sees the application, not libfgpu, as its caller.
// FGPU_SIBLING_CALLS asks GCC for sibling calls even in an unoptimised build (the call must be
// a `jmp`: ctest hook.overrides_tail_call disassembles the library); Clang enforces it with
// musttail.
#pragma once

#if defined(__clang__)
#define FGPU_TAIL_CALL [[clang::musttail]]
#define FGPU_SIBLING_CALLS
#else
#define FGPU_TAIL_CALL
#define FGPU_SIBLING_CALLS __attribute__((optimize("O2", "optimize-sibling-calls")))
#endif
