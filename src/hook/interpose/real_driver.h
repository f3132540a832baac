// How libfgpu reaches the real (or simulated) driver and NVML, and the hook's process state.
//
// Contract
// - RealCuda<Fn>(slot) returns the real driver's function for one of the hooked symbols, resolved
//   once at init through the real dlsym on a private dlopen("libcuda.so.1") handle (so our own
//   exported definitions are never found). Lookups after init are one relaxed atomic load.
// - HookState() is initialised exactly once (pthread_once) on the first call of any hooked entry
//   point or of dlsym for a cu*/nvml* name, never from a constructor, never with a lock held.
// - FGPU_DISABLE=1 makes every wrapper a pure pass-through and the dlsym override return the
//   real symbol.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/abi/cuda_types.h"
#include "core/abi/nvml_types.h"
#include "hook/interpose/options.h"

namespace fgpu::slice {
class Ledger;
}

namespace fgpu::hook {

enum class CudaSymbol : uint16_t {
#define FGPU_HOOK(name) k_##name,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
  kCount
};

enum class NvmlSymbol : uint16_t {
#define FGPU_HOOK_NVML(name) k_##name,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
  kCount
};

enum class Mode : uint8_t {
  kPassThrough,  // FGPU_DISABLE=1
  kEnforcing,    // a slice is attached
  kFailed,       // FGPU_SLICE missing/corrupt: cuInit fails closed with the reason on stderr
};

struct State {
  Mode mode = Mode::kFailed;
  slice::Ledger* ledger = nullptr;
  CUresult init_error = CUDA_ERROR_NOT_INITIALIZED;  // what cuInit returns in kFailed
  Options options;  // as read at init (the slice and compute board directories)
  void* real_cuda[static_cast<size_t>(CudaSymbol::kCount)] = {};
  void* real_nvml[static_cast<size_t>(NvmlSymbol::kCount)] = {};
};

// The process's hook state, initialised on first use.
const State& HookState();

template <typename Fn>
inline Fn RealCuda(CudaSymbol symbol) {
  return reinterpret_cast<Fn>(HookState().real_cuda[static_cast<size_t>(symbol)]);
}
template <typename Fn>
inline Fn RealNvml(NvmlSymbol symbol) {
  return reinterpret_cast<Fn>(HookState().real_nvml[static_cast<size_t>(symbol)]);
}

// Any real driver/NVML function by exported name (for the few calls the hook makes itself,
// e.g. cuDeviceGetUuid, cuMemGetInfo_v2 for physical free, nvmlDeviceGetUUID). NULL if absent.
void* RealCudaByName(const char* name);
void* RealNvmlByName(const char* name);

// Our wrapper for a real driver address, or NULL: what cuGetProcAddress substitutes.
void* WrapperForRealAddress(const void* real);
// Our wrapper for an exported cu*/nvml* name, or NULL: what the dlsym override returns.
void* WrapperForName(const char* name);

}  // namespace fgpu::hook
