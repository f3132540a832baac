// The dlopen and dlmopen overrides: RTLD_DEEPBIND cleared (deep_bind.h), nothing else touched.
//
// Every call is forwarded to the C library's function as a guaranteed tail call (tail_call.h):
// glibc takes the caller's identity from the return address — the search path of a bare name
// (the caller's DT_RUNPATH, or DT_RPATH), $ORIGIN, the namespace of the new library — and a
// tail call leaves the application's return address there, so a library is found exactly where
// it would be without libfgpu. A dlopen *called* from libfgpu would search with libfgpu's
// identity instead; so the overrides only rewrite the mode argument and jump, and nothing runs
// after the real function. Its return value and dlerror() reach the application untouched: it is
// the last dl* call (the one-time lookup of the real function comes before it).
//
// dlmopen: only in the base namespace (LM_ID_BASE) does RTLD_DEEPBIND decide whether libfgpu is
// seen. Another namespace never contains libfgpu (LD_PRELOAD applies to the base namespace only),
// so a library opened there with its own libcuda.so.1 bypasses the wrappers with or without the
// flag — a limit stated in docs/hook.md — and its call is forwarded untouched.
//
// Uninstrumented like the dlsym override: a sanitizer runtime may open libraries while it
// initialises, before its shadow memory exists.
#include <dlfcn.h>

#include "hook/interpose/deep_bind.h"
#include "hook/interpose/real_driver_internal.h"
#include "hook/interpose/tail_call.h"

extern "C" {

// Default visibility: <dlfcn.h> declares them without, and the library is built hidden.
__attribute__((visibility("default"))) FGPU_SIBLING_CALLS FGPU_HOOK_UNINSTRUMENTED void* dlopen(const char* file, int mode) noexcept {
  const fgpu::hook::DlopenFn real_dlopen = fgpu::hook::RealDlopen();
  if (__builtin_expect(real_dlopen == nullptr, 0)) return nullptr;
  if (__builtin_expect((mode & RTLD_DEEPBIND) != 0, 0)) mode = fgpu::hook::DlopenMode(mode);
  FGPU_TAIL_CALL return real_dlopen(file, mode);
}

__attribute__((visibility("default"))) FGPU_SIBLING_CALLS FGPU_HOOK_UNINSTRUMENTED void* dlmopen(Lmid_t namespace_id, const char* file, int mode) noexcept {
  const fgpu::hook::DlmopenFn real_dlmopen = fgpu::hook::RealDlmopen();
  if (__builtin_expect(real_dlmopen == nullptr, 0)) return nullptr;
  if (__builtin_expect((mode & RTLD_DEEPBIND) != 0 && namespace_id == LM_ID_BASE, 0)) {
    mode = fgpu::hook::DlopenMode(mode);
  }
  FGPU_TAIL_CALL return real_dlmopen(namespace_id, file, mode);
}

}  // extern "C"
