// Features the simulated H100 does not offer, answered as a driver without them answers, after
// the arguments are checked as documented (docs/sim-entry-points.md):
// - checkpoints (cuCheckpointProcess*): the simulator cannot suspend a process or move its
//   device state, so checkpointing is CUDA_ERROR_NOT_SUPPORTED;
// - multicast objects (cuMulticast*): need NVSwitch multicast; the device reports
//   CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED 0, so they are CUDA_ERROR_NOT_SUPPORTED;
// - graphics interop (cuGraphics*): resources come only from OpenGL, Direct3D, VDPAU or EGL
//   registration, which the simulated driver does not export, so no resource is ever valid
//   (CUDA_ERROR_INVALID_HANDLE).
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

template <typename Out>
CUresult Checkpoint(int pid, const Out* out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pid <= 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult MulticastProp(const CUmulticastObjectProp* prop) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (prop == nullptr || prop->numDevices == 0 || prop->size == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

// No multicast object can exist: every handle names none.
CUresult MulticastHandle() {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult GraphicsResource(CUgraphicsResource resource) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  (void)resource;  // no graphics API registers resources here: none is valid
  return CUDA_ERROR_INVALID_HANDLE;
}

CUresult GraphicsResources(unsigned count, const CUgraphicsResource* resources, CUstream handle, bool per_thread) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (count == 0) return CUDA_SUCCESS;
  if (resources == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state) { return sim::Checkpoint(pid, state); }
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) { return sim::Checkpoint(pid, tid); }
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
  (void)args;  // optional
  return sim::Checkpoint(pid, &pid);
}
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
  (void)args;
  return sim::Checkpoint(pid, &pid);
}
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
  (void)args;
  return sim::Checkpoint(pid, &pid);
}
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
  (void)args;
  return sim::Checkpoint(pid, &pid);
}

CUresult cuMulticastCreate(CUmemGenericAllocationHandle* mcHandle, const CUmulticastObjectProp* prop) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (mcHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return sim::MulticastProp(prop);
}
CUresult cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                   CUmulticastGranularity_flags option) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  int value = 0;
  std::memcpy(&value, &option, sizeof value);
  if (granularity == nullptr || value < CU_MULTICAST_GRANULARITY_MINIMUM ||
      value > CU_MULTICAST_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return sim::MulticastProp(prop);
}
CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  (void)mcHandle;
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return sim::MulticastHandle();
}
CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                            CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                            unsigned long long flags) {
  (void)mcHandle, (void)mcOffset, (void)memHandle, (void)memOffset, (void)size, (void)flags;
  return sim::MulticastHandle();
}
CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr, size_t size,
                             unsigned long long flags) {
  (void)mcHandle, (void)mcOffset, (void)memptr, (void)size, (void)flags;
  return sim::MulticastHandle();
}
CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size) {
  (void)mcHandle, (void)mcOffset, (void)size;
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return sim::MulticastHandle();
}

CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource) { return sim::GraphicsResource(resource); }
CUresult cuGraphicsSubResourceGetMappedArray(CUarray* pArray, CUgraphicsResource resource, unsigned int arrayIndex,
                                             unsigned int mipLevel) {
  (void)arrayIndex, (void)mipLevel;
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (pArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return sim::GraphicsResource(resource);
}
CUresult cuGraphicsResourceGetMappedMipmappedArray(CUmipmappedArray* pMipmappedArray, CUgraphicsResource resource) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (pMipmappedArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return sim::GraphicsResource(resource);
}
CUresult cuGraphicsResourceGetMappedPointer(CUdeviceptr_v1* pDevPtr, unsigned int* pSize, CUgraphicsResource resource) {
  (void)pDevPtr, (void)pSize;
  return sim::GraphicsResource(resource);
}
CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr* pDevPtr, size_t* pSize, CUgraphicsResource resource) {
  (void)pDevPtr, (void)pSize;
  return sim::GraphicsResource(resource);
}
CUresult cuGraphicsResourceSetMapFlags(CUgraphicsResource resource, unsigned int flags) {
  return cuGraphicsResourceSetMapFlags_v2(resource, flags);
}
CUresult cuGraphicsResourceSetMapFlags_v2(CUgraphicsResource resource, unsigned int flags) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (flags > CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD) return CUDA_ERROR_INVALID_VALUE;
  return sim::GraphicsResource(resource);
}
CUresult cuGraphicsMapResources(unsigned int count, CUgraphicsResource* resources, CUstream hStream) {
  return sim::Guarded([&] { return sim::GraphicsResources(count, resources, hStream, false); });
}
CUresult cuGraphicsMapResources_ptsz(unsigned int count, CUgraphicsResource* resources, CUstream hStream) {
  return sim::Guarded([&] { return sim::GraphicsResources(count, resources, hStream, true); });
}
CUresult cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource* resources, CUstream hStream) {
  return sim::Guarded([&] { return sim::GraphicsResources(count, resources, hStream, false); });
}
CUresult cuGraphicsUnmapResources_ptsz(unsigned int count, CUgraphicsResource* resources, CUstream hStream) {
  return sim::Guarded([&] { return sim::GraphicsResources(count, resources, hStream, true); });
}

}  // extern "C"
