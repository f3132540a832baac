#include "hook/memory/memory_hook.h"

#include <new>

#include "slice/slice.h"

namespace fgpu::hook {

MemoryHook::MemoryHook(slice::Ledger* ledger)
    : ledger_(ledger),
      calls_(ResolveRealCalls()),
      devices_(DeviceMapSources{ledger, calls_.device_get_uuid, calls_.allocation_granularity,
                                calls_.nvml_device_get_uuid}),
      accounting_(ledger, &devices_, &table_, &calls_),
      meter_(&calls_, &devices_),
      contexts_(&accounting_, &meter_, &calls_),
      loads_(&accounting_, &meter_, &contexts_) {}

MemoryView MemoryHook::View(int slice_device, uint64_t physical_total, uint64_t physical_free) const {
  const bool in_slice = slice_device != kNotInSlice;
  return VirtualMemoryView(in_slice ? ledger_->Cap(slice_device) : 0,
                           in_slice ? ledger_->Used(slice_device) : 0, physical_total, physical_free);
}

MemoryHook* EnforcingMemoryHook() {
  const State& state = HookState();
  if (state.mode != Mode::kEnforcing || state.ledger == nullptr) return nullptr;
  // Static storage, never destroyed: wrappers may still run from other threads or atexit
  // handlers while the process exits.
  alignas(MemoryHook) static unsigned char storage[sizeof(MemoryHook)];
  static auto* const hook = new (storage) MemoryHook(state.ledger);
  return hook;
}

CUresult MissingRealCuda() {
  return RealCuda<void*>(CudaSymbol::k_cuInit) == nullptr ? CUDA_ERROR_NOT_INITIALIZED
                                                          : CUDA_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t MissingRealNvml() {
  return RealNvmlByName("nvmlInit_v2") == nullptr ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_FUNCTION_NOT_FOUND;
}

}  // namespace fgpu::hook
