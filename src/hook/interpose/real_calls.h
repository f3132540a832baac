// RealCalls: the real driver and NVML functions the memory hook calls on its own behalf
// (attribution, identity, measurement), resolved once, so no wrapper ever looks a name up on an
// allocation path. Tests substitute fakes.
//
// Contract: any pointer may be null when the real library lacks the symbol (an older driver, no
// NVML); every user checks and degrades as documented at its use. The hooked ones
// (cuMemGetInfo_v2, cuCtxDestroy_v2, cuDevicePrimaryCtxRelease_v2, cuGreenCtxDestroy) are the real functions
// behind our wrappers, never the wrappers.
#pragma once

#include <cstddef>

#include "core/abi/cuda_types.h"
#include "core/abi/nvml_types.h"

namespace fgpu::hook {

struct RealCalls {
  // Attribution
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*ctx_get_device_of)(CUdevice*, CUcontext) = nullptr;  // cuCtxGetDevice_v2 (CUDA 13)
  CUresult (*stream_get_ctx)(CUstream, CUcontext*) = nullptr;
  CUresult (*stream_get_ctx_ptsz)(CUstream, CUcontext*) = nullptr;
  // Identity
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*allocation_granularity)(size_t*, const CUmemAllocationProp*,
                                     CUmemAllocationGranularity_flags) = nullptr;
  // Context measurement and teardown
  CUresult (*mem_get_info)(size_t*, size_t*) = nullptr;
  CUresult (*ctx_push_current)(CUcontext) = nullptr;
  CUresult (*ctx_pop_current)(CUcontext*) = nullptr;
  CUresult (*ctx_destroy)(CUcontext) = nullptr;
  CUresult (*primary_ctx_get_state)(CUdevice, unsigned int*, int*) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  // Green contexts (CUDA 12.4+): the CUcontext allocations under one are attributed to, and undoing one
  CUresult (*ctx_from_green_ctx)(CUcontext*, CUgreenCtx) = nullptr;
  CUresult (*green_ctx_destroy)(CUgreenCtx) = nullptr;
  // Compute gate: completion markers and the device-timed span of a batch
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned int) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_record_ptsz)(CUevent, CUstream) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed)(float*, CUevent, CUevent) = nullptr;  // cuEventElapsedTime_v2 or v1
  CUresult (*event_destroy)(CUevent) = nullptr;
  // NVML
  nvmlReturn_t (*nvml_init)() = nullptr;
  nvmlReturn_t (*nvml_get_handle_by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*nvml_device_get_uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  // Declared with the 24-byte nvmlProcessInfo_t; the real stride is probed (docs/hook-memory.md).
  nvmlReturn_t (*nvml_compute_processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
};

// From the hook's real-symbol resolution (hook/interpose/real_driver.h). Call after HookState().
RealCalls ResolveRealCalls();

}  // namespace fgpu::hook
