// MemoryHook: the process's memory-enforcement objects (pointer table, device map, accounting,
// context accounting), built once, on the first wrapper call that finds the hook enforcing a
// slice, and never destroyed (wrappers may run during exit).
//
// Contract
// - EnforcingMemoryHook() is null unless HookState().mode is kEnforcing: the wrappers then
//   forward untouched (FGPU_DISABLE=1, or a failed init whose cuInit already failed closed).
// - After the first call it costs one acquire load beyond HookState().
// - Real() / MissingReal*(): the real function behind a wrapper, and what a wrapper returns when
//   the real library lacks it (not loaded at all: not initialised; an older driver: not
//   supported / function not found), never a call through null.
#pragma once

#include "hook/interpose/real_calls.h"
#include "hook/interpose/real_driver.h"
#include "hook/memory/accounting.h"
#include "hook/memory/context_accounting.h"
#include "hook/memory/context_meter.h"
#include "hook/memory/device_map.h"
#include "hook/memory/device_view.h"
#include "hook/memory/load_accounting.h"
#include "hook/memory/pointer_table.h"

namespace fgpu::hook {

class MemoryHook {
 public:
  explicit MemoryHook(slice::Ledger* ledger);
  MemoryHook(const MemoryHook&) = delete;
  MemoryHook& operator=(const MemoryHook&) = delete;

  MemoryAccounting& accounting() { return accounting_; }
  ContextAccounting& contexts() { return contexts_; }
  LoadAccounting& loads() { return loads_; }
  DeviceMap& devices() { return devices_; }

  // The virtual view of a slice device (kNotInSlice: cap 0) over the driver's physical numbers.
  MemoryView View(int slice_device, uint64_t physical_total, uint64_t physical_free) const;

 private:
  slice::Ledger* ledger_;
  RealCalls calls_;
  PointerTable table_;
  DeviceMap devices_;
  MemoryAccounting accounting_;
  ContextMeter meter_;
  ContextAccounting contexts_;
  LoadAccounting loads_;
};

MemoryHook* EnforcingMemoryHook();

CUresult MissingRealCuda();
nvmlReturn_t MissingRealNvml();

}  // namespace fgpu::hook

// The real function behind wrapper `name` (its exact prototype), e.g. FGPU_REAL_CUDA(cuMemAlloc_v2).
#define FGPU_REAL_CUDA(name) ::fgpu::hook::RealCuda<decltype(&::name)>(::fgpu::hook::CudaSymbol::k_##name)
#define FGPU_REAL_NVML(name) ::fgpu::hook::RealNvml<decltype(&::name)>(::fgpu::hook::NvmlSymbol::k_##name)
// Calls it, if the driver has it (the undo paths, whose result nobody can act on).
#define FGPU_CALL_REAL_CUDA(name, ...)                                     \
  do {                                                                     \
    if (const auto real_fn_ = FGPU_REAL_CUDA(name); real_fn_ != nullptr) { \
      real_fn_(__VA_ARGS__);                                               \
    }                                                                      \
  } while (0)
