#include "hook/interpose/real_calls.h"

#include "hook/interpose/real_driver.h"

namespace fgpu::hook {
namespace {

template <typename Fn>
void ByName(Fn* slot, void* (*resolve)(const char*), const char* name) {
  *slot = reinterpret_cast<Fn>(resolve(name));
}

}  // namespace

RealCalls ResolveRealCalls() {
  RealCalls calls;
  ByName(&calls.ctx_get_current, RealCudaByName, "cuCtxGetCurrent");
  ByName(&calls.ctx_get_device, RealCudaByName, "cuCtxGetDevice");
  ByName(&calls.ctx_get_device_of, RealCudaByName, "cuCtxGetDevice_v2");
  ByName(&calls.stream_get_ctx, RealCudaByName, "cuStreamGetCtx");
  ByName(&calls.stream_get_ctx_ptsz, RealCudaByName, "cuStreamGetCtx_ptsz");
  ByName(&calls.device_get_uuid, RealCudaByName, "cuDeviceGetUuid_v2");
  if (calls.device_get_uuid == nullptr) ByName(&calls.device_get_uuid, RealCudaByName, "cuDeviceGetUuid");
  ByName(&calls.allocation_granularity, RealCudaByName, "cuMemGetAllocationGranularity");
  ByName(&calls.ctx_push_current, RealCudaByName, "cuCtxPushCurrent_v2");
  ByName(&calls.ctx_pop_current, RealCudaByName, "cuCtxPopCurrent_v2");
  ByName(&calls.primary_ctx_get_state, RealCudaByName, "cuDevicePrimaryCtxGetState");
  ByName(&calls.ctx_from_green_ctx, RealCudaByName, "cuCtxFromGreenCtx");
  ByName(&calls.ctx_set_current, RealCudaByName, "cuCtxSetCurrent");
  ByName(&calls.event_create, RealCudaByName, "cuEventCreate");
  ByName(&calls.event_record, RealCudaByName, "cuEventRecord");
  ByName(&calls.event_record_ptsz, RealCudaByName, "cuEventRecord_ptsz");
  ByName(&calls.event_synchronize, RealCudaByName, "cuEventSynchronize");
  ByName(&calls.event_elapsed, RealCudaByName, "cuEventElapsedTime_v2");
  if (calls.event_elapsed == nullptr) ByName(&calls.event_elapsed, RealCudaByName, "cuEventElapsedTime");
  ByName(&calls.event_destroy, RealCudaByName, "cuEventDestroy_v2");
  // Hooked by us: the real functions behind our wrappers.
  calls.mem_get_info = RealCuda<decltype(calls.mem_get_info)>(CudaSymbol::k_cuMemGetInfo_v2);
  calls.ctx_destroy = RealCuda<decltype(calls.ctx_destroy)>(CudaSymbol::k_cuCtxDestroy_v2);
  calls.primary_ctx_release =
      RealCuda<decltype(calls.primary_ctx_release)>(CudaSymbol::k_cuDevicePrimaryCtxRelease_v2);
  calls.green_ctx_destroy = RealCuda<decltype(calls.green_ctx_destroy)>(CudaSymbol::k_cuGreenCtxDestroy);
  ByName(&calls.nvml_init, RealNvmlByName, "nvmlInit_v2");
  ByName(&calls.nvml_get_handle_by_uuid, RealNvmlByName, "nvmlDeviceGetHandleByUUID");
  ByName(&calls.nvml_device_get_uuid, RealNvmlByName, "nvmlDeviceGetUUID");
  ByName(&calls.nvml_compute_processes, RealNvmlByName, "nvmlDeviceGetComputeRunningProcesses_v3");
  return calls;
}

}  // namespace fgpu::hook
