// The hook's process state: options, the real driver and NVML, the slice, built once.
//
// Init runs under pthread_once on the first call that needs it (a hooked entry point, the
// dlsym override for a hooked name, cuGetProcAddress), never from a constructor: the CUDA
// runtime asks for cuGetProcAddress before cuInit, and a process that never touches CUDA
// never pays for (or is disturbed by) the hook.
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstdio>

#include "hook/interpose/log.h"
#include "hook/interpose/options.h"
#include "hook/interpose/real_driver.h"
#include "hook/interpose/real_driver_internal.h"
#include "hook/interpose/slice_policy.h"
#include "hook/interpose/symbol_map.h"
#include "hook/interpose/wrapper_table.h"
#include "slice/slice.h"

extern char** environ;

namespace fgpu::hook {

// Constant-initialised (State's members have constant initialisers) and never destroyed
// (trivial destructor): usable from any constructor or destructor of any other library.
State g_hook_state;

namespace {

constexpr const char* kCudaLibrary = "libcuda.so.1";
constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// Initial-exec TLS: no __tls_get_addr (which may allocate for a dlopen'd library) on the
// dlsym path, which a malloc interposer may enter from inside malloc.
constinit thread_local bool t_in_init __attribute__((tls_model("initial-exec"))) = false;
constinit thread_local bool t_in_dlsym_bootstrap __attribute__((tls_model("initial-exec"))) = false;
constinit thread_local bool t_in_dlopen_bootstrap __attribute__((tls_model("initial-exec"))) = false;

// Accessed with __atomic builtins, not std::atomic: RealDlsym must call nothing instrumented.
DlsymFn g_real_dlsym = nullptr;
void* g_real_dlopen = nullptr;   // a DlopenFn
void* g_real_dlmopen = nullptr;  // a DlmopenFn
pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_ready{false};
void* g_cuda_library = nullptr;
void* g_nvml_library = nullptr;
AddressMap g_addresses;
char g_failure_reason[1024];  // why mode is kFailed
// What the failure line ends with: how to run without fgpu, or (on a managed node) where the
// node's slices are.
char g_failure_advice[PATH_MAX + 128];
std::atomic<bool> g_failure_reported{false};

void* g_cuda_wrappers[kCudaSymbolCount];
void* g_nvml_wrappers[kNvmlSymbolCount];

class InitScope {
 public:
  InitScope() { t_in_init = true; }
  ~InitScope() { t_in_init = false; }
  InitScope(const InitScope&) = delete;
  InitScope& operator=(const InitScope&) = delete;
};

__attribute__((format(printf, 2, 3))) void Fail(CUresult error, const char* format, ...) {
  g_hook_state.mode = Mode::kFailed;
  g_hook_state.init_error = error;
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_failure_reason, sizeof(g_failure_reason), format, args);
  va_end(args);
}

// The library by soname: the one the application gets (the simulated driver under `fgpu sim
// run`, which puts it first on LD_LIBRARY_PATH). RTLD_LOCAL: we add nothing to the global
// scope the application would not have had. Resolves every hooked name through the real dlsym
// on this handle, whose scope is the library and its dependencies: never our own exports.
// On failure, copies dlerror()'s text (valid only until the next dl* call) into `error`.
void* LoadLibrary(const char* soname, size_t count, const char* (*name_of)(size_t), void** real, char* error,
                  size_t error_size) {
  void* library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* text = dlerror();
    std::snprintf(error, error_size, "%s", text != nullptr ? text : "unknown error");
    return nullptr;
  }
  const DlsymFn real_dlsym = RealDlsym();
  for (size_t i = 0; i < count; ++i) {
    void* address = real_dlsym(library, name_of(i));  // NULL: this driver lacks the variant
    std::atomic_ref<void*>(real[i]).store(address, std::memory_order_relaxed);
  }
  return library;
}

void Init() {
  InitScope scope;
  State& state = g_hook_state;
  Options& options = state.options;
  ReadOptions(environ, &options);
  std::snprintf(g_failure_advice, sizeof(g_failure_advice), "%s", kDisableAdvice);

  for (size_t i = 0; i < kCudaSymbolCount; ++i) g_cuda_wrappers[i] = CudaWrapperAddress(static_cast<CudaSymbol>(i));
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) g_nvml_wrappers[i] = NvmlWrapperAddress(static_cast<NvmlSymbol>(i));

  char cuda_error[256] = "the C library's dlsym cannot be found";
  char nvml_error[256] = "";
  if (RealDlsym() != nullptr) {
    g_cuda_library = LoadLibrary(
        kCudaLibrary, kCudaSymbolCount, [](size_t i) { return CudaSymbolName(static_cast<CudaSymbol>(i)); },
        state.real_cuda, cuda_error, sizeof(cuda_error));
    // NVML is optional: a driver without it still gets its memory enforced (its error unused).
    g_nvml_library = LoadLibrary(
        kNvmlLibrary, kNvmlSymbolCount, [](size_t i) { return NvmlSymbolName(static_cast<NvmlSymbol>(i)); },
        state.real_nvml, nvml_error, sizeof(nvml_error));
  }
  g_addresses.Build(state.real_cuda, g_cuda_wrappers, state.real_nvml, g_nvml_wrappers);

  // A managed node may deny pass-through (node.conf pass_through = deny, the default there): the
  // process is then enforced as if FGPU_DISABLE were not set.
  std::string unreadable_policy;
  const bool pass_through = options.disabled && PassThroughAllowed(options, &unreadable_policy);
  if (options.disabled && !pass_through && unreadable_policy.empty()) {
    LogProblem("FGPU_DISABLE is not honoured on this node (its configuration says pass_through = deny): enforcing");
  }
  if (!unreadable_policy.empty()) {
    Fail(CUDA_ERROR_NOT_INITIALIZED, "%s", unreadable_policy.c_str());
  } else if (pass_through) {
    state.mode = Mode::kPassThrough;
    // Unenforced, and counted in the slice it was meant to run in (docs/hook.md "Counters"):
    // no slot, no failure, nothing kept mapped.
    if (options.slice_set) slice::Ledger::CountPassThrough(options.slice_dir);
  } else if (g_cuda_library == nullptr) {
    // The application cannot reach a driver either (it would need this soname); report it as
    // the driver-less machine it is.
    Fail(CUDA_ERROR_NO_DEVICE, "cannot load %s (%s)", kCudaLibrary, cuda_error);
  } else {
    // The node's policy decides which slice may be used (slice_policy.h): any FGPU_SLICE on an
    // unmanaged node, only root's slices under slice_root on a managed one.
    const SliceOutcome outcome = AttachSlice(&options);
    if (outcome.ledger != nullptr) {
      state.ledger = outcome.ledger;
      state.mode = Mode::kEnforcing;
    } else {
      Fail(CUDA_ERROR_NOT_INITIALIZED, "%s", outcome.reason.c_str());
      std::snprintf(g_failure_advice, sizeof(g_failure_advice), "%s", outcome.advice.c_str());
    }
  }
  // Leave no stale error for the application's `dlerror(); dlsym(...); dlerror()` idiom: our
  // lookups of variants this driver lacks set it on this thread.
  dlerror();
  g_ready.store(true, std::memory_order_release);
}

}  // namespace

FGPU_HOOK_UNINSTRUMENTED DlsymFn RealDlsym() {
  DlsymFn real = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
  if (real != nullptr || t_in_dlsym_bootstrap) return real;
  // Racing threads compute the same answer; the last store wins harmlessly. No pthread_once:
  // a dlsym nested inside dlvsym (a malloc interposer) must fail, not deadlock.
  t_in_dlsym_bootstrap = true;
  void* address = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (address == nullptr) address = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  t_in_dlsym_bootstrap = false;
  real = reinterpret_cast<DlsymFn>(address);
  __atomic_store_n(&g_real_dlsym, real, __ATOMIC_RELEASE);
  return real;
}

FGPU_HOOK_UNINSTRUMENTED bool InsideHookInit() { return t_in_init || t_in_dlsym_bootstrap; }

namespace {

// The next definition of `name` after libfgpu, at glibc's current version or the one before
// 2.34 (when dlopen and dlmopen lived in libdl). Same rules as RealDlsym: racing threads store
// the same answer; a lookup nested inside the bootstrap (a malloc interposer that dlopens from
// inside dlvsym) gets NULL rather than recursing.
FGPU_HOOK_UNINSTRUMENTED void* BootstrapNext(void** cache, const char* name, const char* old_version) {
  void* real = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (real != nullptr || t_in_dlopen_bootstrap) return real;
  t_in_dlopen_bootstrap = true;
  real = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (real == nullptr) real = dlvsym(RTLD_NEXT, name, old_version);
  t_in_dlopen_bootstrap = false;
  __atomic_store_n(cache, real, __ATOMIC_RELEASE);
  return real;
}

}  // namespace

FGPU_HOOK_UNINSTRUMENTED DlopenFn RealDlopen() {
  return reinterpret_cast<DlopenFn>(BootstrapNext(&g_real_dlopen, "dlopen", "GLIBC_2.2.5"));
}

FGPU_HOOK_UNINSTRUMENTED DlmopenFn RealDlmopen() {
  return reinterpret_cast<DlmopenFn>(BootstrapNext(&g_real_dlmopen, "dlmopen", "GLIBC_2.3.4"));
}

const State* ReadyHookState() { return g_ready.load(std::memory_order_acquire) ? &g_hook_state : nullptr; }

const State& HookState() {
  if (g_ready.load(std::memory_order_acquire) || t_in_init) return g_hook_state;
  pthread_once(&g_init_once, Init);
  return g_hook_state;
}

const AddressMap& HookAddresses() {
  HookState();
  return g_addresses;
}

void ReportInitFailureOnce() {
  if (HookState().mode != Mode::kFailed) return;
  if (g_failure_reported.exchange(true, std::memory_order_relaxed)) return;
  LogProblem("%s%s", g_failure_reason, g_failure_advice);
}

void* RealCudaByName(const char* name) {
  HookState();
  if (g_cuda_library == nullptr || name == nullptr) return nullptr;
  return RealDlsym()(g_cuda_library, name);
}

void* RealNvmlByName(const char* name) {
  HookState();
  if (g_nvml_library == nullptr || name == nullptr) return nullptr;
  return RealDlsym()(g_nvml_library, name);
}

void* WrapperForRealAddress(const void* real) {
  const AddressMap::Entry* entry = HookAddresses().Find(real);
  return entry != nullptr ? entry->wrapper : nullptr;
}

void* WrapperForName(const char* name) {
  HookedSymbol symbol;
  if (!FindHookedName(name, &symbol)) return nullptr;
  return symbol.nvml ? NvmlWrapperAddress(static_cast<NvmlSymbol>(symbol.index))
                     : CudaWrapperAddress(static_cast<CudaSymbol>(symbol.index));
}

void* CudaWrapperAddress(CudaSymbol symbol) {
  switch (symbol) {
#define FGPU_HOOK(name)          \
  case CudaSymbol::k_##name: \
    return reinterpret_cast<void*>(kWrapperTable.name);
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
    case CudaSymbol::kCount:
      break;
  }
  return nullptr;
}

void* NvmlWrapperAddress(NvmlSymbol symbol) {
  switch (symbol) {
#define FGPU_HOOK_NVML(name)     \
  case NvmlSymbol::k_##name: \
    return reinterpret_cast<void*>(kWrapperTable.name);
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
    case NvmlSymbol::kCount:
      break;
  }
  return nullptr;
}

}  // namespace fgpu::hook
