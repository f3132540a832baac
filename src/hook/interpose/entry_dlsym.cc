// The dlsym override: how libfgpu reaches programs that load the driver themselves.
//
// A lookup on a library handle searches only that library's scope, where a preloaded
// definition is never found, so without this TensorFlow/XLA (dlsym on libcuda.so.1), the CUDA
// runtime (dlsym of cuGetProcAddress_v2) and NVML clients would bypass every wrapper
// (reference/cuda.md §0.1). For a name we hook, the real dlsym is asked first with the
// caller's handle: NULL stays NULL (the symbol is not there, and callers test for that),
// anything else becomes our wrapper, or in pass-through (FGPU_DISABLE=1) the real function.
//
// Every other name goes to the real dlsym as a guaranteed tail call (sibling call even at
// -O0): glibc's dlsym identifies its caller by return address, so RTLD_NEXT then still means
// "after the application's object", not "after libfgpu". For hooked names the real lookup is
// made from here, so RTLD_NEXT is relative to libfgpu — the documented limit of any dlsym
// interposer on glibc (docs/hook.md). That pass-through path is also uninstrumented
// (FGPU_HOOK_UNINSTRUMENTED): sanitizer runtimes call dlsym while they initialise.
#include <dlfcn.h>

#include "hook/interpose/exports.h"
#include "hook/interpose/real_driver.h"
#include "hook/interpose/real_driver_internal.h"
#include "hook/interpose/symbol_map.h"
#include "hook/interpose/tail_call.h"

namespace {

void* HookedLookup(void* handle, const char* name) {
  // Init first, so the application's lookup below is the last dl* call: its dlerror() state
  // is then exactly the real dlsym's.
  const fgpu::hook::State& state = fgpu::hook::HookState();
  const fgpu::hook::DlsymFn real_dlsym = fgpu::hook::RealDlsym();
  void* found = real_dlsym(handle, name);
  if (found == nullptr) return nullptr;
  void* wrapper = fgpu::hook::WrapperForName(name);
  if (found == wrapper) {
    // Our own export, reached through the global scope (RTLD_DEFAULT, the dlopen(NULL) handle):
    // answer what the scope would hold without us, i.e. what comes after libfgpu.
    found = real_dlsym(RTLD_NEXT, name);
    if (found == nullptr) return nullptr;
  }
  return state.mode == fgpu::hook::Mode::kPassThrough ? found : wrapper;
}

}  // namespace

extern "C" {

// Default visibility: <dlfcn.h> declares it without, and the library is built hidden.
__attribute__((visibility("default"))) FGPU_SIBLING_CALLS FGPU_HOOK_UNINSTRUMENTED void* dlsym(void* __restrict handle, const char* __restrict name) noexcept {
  if (fgpu::hook::InsideHookInit() || !fgpu::hook::IsHookedName(name)) {
    const fgpu::hook::DlsymFn real_dlsym = fgpu::hook::RealDlsym();
    if (__builtin_expect(real_dlsym == nullptr, 0)) return nullptr;
    FGPU_TAIL_CALL return real_dlsym(handle, name);
  }
  return HookedLookup(handle, name);
}

}  // extern "C"
