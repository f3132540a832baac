// What real_driver.cc shares with the entry files beyond real_driver.h: the real dlsym, the
// re-entry guard, the hot-path read of a real entry point, and the init failure report.
//
// Contract
// - RealDlsym() is the C library's dlsym, found with dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")
//   (then "GLIBC_2.2.5") on first use, lock-free and independent of HookState(): every dlsym
//   of a name we do not hook needs it, including lookups made before main or by the dynamic
//   loader's clients, and those must never trigger the hook's init. NULL only for a lookup
//   nested inside that bootstrap (a dlsym from within dlvsym itself).
// - InsideHookInit() is true on the thread running the hook's init (and the dlsym bootstrap):
//   whatever the driver or libc call back into from there (dlsym, a hooked entry point) goes
//   straight to the real function or sees the state as far as init got, instead of waiting
//   on the init it is part of.
// - RealDlopen()/RealDlmopen() likewise, for the dlopen/dlmopen overrides (entry_dlopen.cc).
// - LoadRealCuda(symbol) is the hot path's read: one relaxed atomic load of the real entry
//   point, no init, no lock. NULL until init resolved it; callers then take a slow path that
//   runs HookState().
#pragma once

#include <dlfcn.h>

#include <atomic>

#include "hook/interpose/real_driver.h"
#include "hook/interpose/symbol_map.h"

// For the dlsym pass-through path (the override, InsideHookInit, IsHookedName, RealDlsym): a
// sanitizer runtime looks up its interceptors' targets with dlsym(RTLD_NEXT, ...) during its
// own initialisation, before its shadow memory exists, so when libfgpu itself is instrumented
// that path must carry no instrumentation and call no instrumented function (no C++ library
// templates, which are out of line at -O0).
#define FGPU_HOOK_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

namespace fgpu::hook {

using DlsymFn = void* (*)(void* handle, const char* name) noexcept;
using DlopenFn = void* (*)(const char* file, int mode) noexcept;
using DlmopenFn = void* (*)(Lmid_t namespace_id, const char* file, int mode) noexcept;

FGPU_HOOK_UNINSTRUMENTED DlsymFn RealDlsym();
FGPU_HOOK_UNINSTRUMENTED bool InsideHookInit();
// The C library's dlopen / dlmopen, found like RealDlsym (dlvsym(RTLD_NEXT, name, "GLIBC_2.34"),
// then the pre-2.34 version), lock-free and without init. NULL only for a call nested inside
// that bootstrap.
FGPU_HOOK_UNINSTRUMENTED DlopenFn RealDlopen();
FGPU_HOOK_UNINSTRUMENTED DlmopenFn RealDlmopen();
// The hook's state if init has finished, else NULL; never starts init.
const State* ReadyHookState();

// Storage behind HookState(); written only by init (through atomic_ref for real_cuda).
extern State g_hook_state;

inline void* LoadRealCuda(CudaSymbol symbol) {
  return std::atomic_ref<void*>(g_hook_state.real_cuda[static_cast<size_t>(symbol)])
      .load(std::memory_order_relaxed);
}

// The real-address/wrapper map built at init (initialises the hook if needed).
const AddressMap& HookAddresses();

// In Mode::kFailed, prints "fgpu: <reason>; set FGPU_DISABLE=1 to run without fgpu" on stderr
// the first time it is called in this process; nothing afterwards or in other modes.
void ReportInitFailureOnce();

}  // namespace fgpu::hook
