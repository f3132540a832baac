#include "hook/compute/launch_slow_path.h"

#include "core/abi/cuda_api.h"
#include "hook/compute/compute_gate.h"
#include "hook/interpose/real_driver.h"

namespace fgpu::hook {

namespace {

// Both variants share one prototype, so one function type serves either symbol. Compute shares
// gate here (BeforeLaunch/AfterLaunch); before init the gate decides on its first call.
CUresult Launch(CudaSymbol symbol, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  const auto real = RealCuda<decltype(&::cuLaunchKernel)>(symbol);  // runs HookState() first
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  // The gate's two halves around a direct call: the arguments are passed once, as they came.
  const bool per_thread_stream = symbol == CudaSymbol::k_cuLaunchKernel_ptsz;
  const LaunchTicket ticket = ComputeGateArmed()
                                  ? BeforeLaunch(hStream, per_thread_stream, compute::LaunchKind::kKernel)
                                  : LaunchTicket{};
  const CUresult rc = real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                           kernelParams, extra);
  AfterLaunch(ticket, hStream, per_thread_stream, compute::LaunchKind::kKernel, rc);
  return rc;
}

}  // namespace

CUresult LaunchKernelSlow(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                          unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch(CudaSymbol::k_cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams, extra);
}

CUresult LaunchKernelPtszSlow(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                              unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                              unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch(CudaSymbol::k_cuLaunchKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

}  // namespace fgpu::hook
