// Unified (managed) memory hints: prefetching. Managed memory is resident on its device from
// allocation on and never migrates (docs/sim-memory.md), so a prefetch moves nothing: it is
// validated as the driver validates it and, taking no device time, is ordered on its stream by
// construction.
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

// The range must lie inside one managed allocation (cuMemAllocManaged).
bool ManagedRange(uint64_t ptr, uint64_t count) {
  const auto found = MemoryRegistry::Get().Find(ptr);
  return found && found->kind == AllocKind::kManaged && count <= found->end() - ptr;
}

// A device of this process, or the host (one NUMA node, 0, as cuMemCreate's host locations).
CUresult CheckLocation(const CUmemLocation& location) {
  int type = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&type, &location.type, sizeof type);
  switch (type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return Runtime::Get().CheckDevice(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return CUDA_SUCCESS;  // the id is ignored, as documented
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Prefetch(uint64_t ptr, uint64_t count, const CUmemLocation& location, unsigned flags, CUstream handle,
                  bool per_thread) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // reserved, must be zero
  if (CUresult rc = CheckLocation(location); rc != CUDA_SUCCESS) return rc;
  if (!ManagedRange(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  // Graphs have no node for it yet, as for copies.
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// The 8.0 form names a device, or CU_DEVICE_CPU for the host.
CUmemLocation LocationOf(CUdevice device) {
  CUmemLocation location{};
  location.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device;
  return location;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, sim::LocationOf(dstDevice), 0, hStream, false); });
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, sim::LocationOf(dstDevice), 0, hStream, true); });
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                               CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, location, flags, hStream, false); });
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                    CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, location, flags, hStream, true); });
}

}  // extern "C"
