// libfgpu_hook_deepbind.so: a plugin that brings its own driver, for
// interpose/deep_bind_test.cc. It links libcuda.so.1, so opened with RTLD_DEEPBIND its cu* calls
// would bind inside its own scope — the driver — and never reach libfgpu's wrappers; with the flag
// cleared they bind through the global scope, where the preloaded libfgpu comes first.
#include "core/abi/cuda_api.h"

extern "C" {

// cuInit, device 0, its primary context made current. The first failing CUresult, or 0.
__attribute__((visibility("default"))) int fgpu_deepbind_start() {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&device, 0);
  if (rc == CUDA_SUCCESS) rc = cuDevicePrimaryCtxRetain(&context, device);
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(context);
  return static_cast<int>(rc);
}

// Allocates `bytes` and keeps them (the test counts what fits under the cap).
__attribute__((visibility("default"))) int fgpu_deepbind_alloc(unsigned long long bytes) {
  CUdeviceptr pointer = 0;
  return static_cast<int>(cuMemAlloc_v2(&pointer, static_cast<size_t>(bytes)));
}

// cuMemGetInfo_v2's total: the slice's cap under the hook, the device's without.
__attribute__((visibility("default"))) unsigned long long fgpu_deepbind_total() {
  size_t free = 0, total = 0;
  return cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS ? total : 0;
}

// cuMemAlloc_v2 as this library's references bind it (the helper asks dladdr where it lies).
__attribute__((visibility("default"))) void* fgpu_deepbind_alloc_function() {
  return reinterpret_cast<void*>(&cuMemAlloc_v2);
}

}  // extern "C"
