#include "hook/launch_slow_path.h"

#include "core/abi/cuda_api.h"
#include "hook/compute_gate.h"
#include "hook/real_driver.h"

namespace fgpu::hook {

namespace {

// Both variants share one prototype, so one function type serves either symbol. Compute shares
// gate here (GatedLaunch); before init the gate decides on its first call.
CUresult Launch(CudaSymbol symbol, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  const auto real = RealCuda<decltype(&::cuLaunchKernel)>(symbol);  // runs HookState() first
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const auto call = [&] {
    return real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, extra);
  };
  if (!ComputeGateArmed()) return call();
  return GatedLaunch(hStream, symbol == CudaSymbol::k_cuLaunchKernel_ptsz, compute::LaunchKind::kKernel, call);
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
