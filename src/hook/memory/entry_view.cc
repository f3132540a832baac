// Exported wrappers: the virtual device view (hook/memory/device_view.h) for CUDA and NVML.
//
// Each calls the real function first, so NULL outputs, invalid devices, a missing context or a
// wrong struct version get exactly the driver's answer; only a successful answer is rewritten,
// from the driver's physical numbers and the slice's cap and charges.
#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::Attribution;
using fgpu::hook::CudaDeviceFacts;
using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::kNotInSlice;
using fgpu::hook::MemoryHook;
using fgpu::hook::MemoryView;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::MissingRealNvml;
using fgpu::hook::SaturateToUint;

// The slice device of a CUDA device; kNotInSlice (cap 0) if its identity cannot be read.
int SliceDeviceOf(MemoryHook* hook, CUdevice device) {
  CudaDeviceFacts facts;
  return hook->devices().Cuda(device, &facts) ? facts.slice_device : kNotInSlice;
}

// The view of the current context's device. False: no current context to speak of (the real
// call succeeded anyway, so its answer stands).
bool CurrentContextView(MemoryHook* hook, uint64_t physical_total, uint64_t physical_free, MemoryView* view) {
  Attribution at;
  if (!hook->accounting().AttributeToCurrentContext(&at)) return false;
  *view = hook->View(SliceDeviceOf(hook, at.device), physical_total, physical_free);
  return true;
}

int SliceDeviceOf(MemoryHook* hook, nvmlDevice_t device) {
  int slice_device = kNotInSlice;
  return hook->devices().Nvml(device, &slice_device) ? slice_device : kNotInSlice;
}

}  // namespace

extern "C" {

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  const auto real = FGPU_REAL_CUDA(cuMemGetInfo_v2);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(free, total);
  MemoryHook* hook = rc == CUDA_SUCCESS ? EnforcingMemoryHook() : nullptr;
  MemoryView view;
  if (hook != nullptr && CurrentContextView(hook, *total, *free, &view)) {
    *free = view.free;
    *total = view.total;
  }
  return rc;
}

// The legacy answer is the physical one saturated at 4 GiB; the view of saturated inputs,
// saturated again, equals the saturated view (min commutes with saturation).
CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  const auto real = FGPU_REAL_CUDA(cuMemGetInfo);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(free, total);
  MemoryHook* hook = rc == CUDA_SUCCESS ? EnforcingMemoryHook() : nullptr;
  MemoryView view;
  if (hook != nullptr && CurrentContextView(hook, *total, *free, &view)) {
    *free = SaturateToUint(view.free);
    *total = SaturateToUint(view.total);
  }
  return rc;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDeviceTotalMem_v2);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(bytes, dev);
  MemoryHook* hook = rc == CUDA_SUCCESS ? EnforcingMemoryHook() : nullptr;
  if (hook != nullptr) *bytes = hook->View(SliceDeviceOf(hook, dev), *bytes, *bytes).total;
  return rc;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDeviceTotalMem);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(bytes, dev);
  MemoryHook* hook = rc == CUDA_SUCCESS ? EnforcingMemoryHook() : nullptr;
  if (hook != nullptr) *bytes = SaturateToUint(hook->View(SliceDeviceOf(hook, dev), *bytes, *bytes).total);
  return rc;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  const auto real = FGPU_REAL_NVML(nvmlDeviceGetMemoryInfo);
  if (real == nullptr) return MissingRealNvml();
  const nvmlReturn_t rc = real(device, memory);
  MemoryHook* hook = rc == NVML_SUCCESS ? EnforcingMemoryHook() : nullptr;
  if (hook != nullptr) {
    const MemoryView view = hook->View(SliceDeviceOf(hook, device), memory->total, memory->free);
    memory->total = view.total;
    memory->free = view.free;
    memory->used = view.used;
  }
  return rc;
}

// The real call has checked memory->version. Reserved is 0: the slice's charges are all "used".
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  const auto real = FGPU_REAL_NVML(nvmlDeviceGetMemoryInfo_v2);
  if (real == nullptr) return MissingRealNvml();
  const nvmlReturn_t rc = real(device, memory);
  MemoryHook* hook = rc == NVML_SUCCESS ? EnforcingMemoryHook() : nullptr;
  if (hook != nullptr) {
    const MemoryView view = hook->View(SliceDeviceOf(hook, device), memory->total, memory->free);
    memory->total = view.total;
    memory->reserved = 0;
    memory->free = view.free;
    memory->used = view.used;
  }
  return rc;
}

}  // extern "C"
