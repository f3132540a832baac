// cuLaunchKernel and cuLaunchKernel_ptsz: the hot path. One relaxed load of the real entry
// point and a tail call — no lock, no syscall, no allocation, no logging — as long as init
// has run (it has, for any caller that got here through cuInit, dlsym or cuGetProcAddress);
// otherwise the out-of-line slow path initialises first. Each variant forwards to its own
// real twin, so the per-thread-default-stream choice the caller made is kept.
#include "hook/exports.h"
#include "hook/launch_slow_path.h"
#include "hook/real_driver_internal.h"

namespace {

using LaunchFn = decltype(&::cuLaunchKernel);

template <fgpu::hook::CudaSymbol kSymbol, LaunchFn kSlowPath>
inline CUresult Launch(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                       unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  const auto real = reinterpret_cast<LaunchFn>(fgpu::hook::LoadRealCuda(kSymbol));
  if (__builtin_expect(real != nullptr, 1)) {
    return real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, extra);
  }
  return kSlowPath(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                   kernelParams, extra);
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch<fgpu::hook::CudaSymbol::k_cuLaunchKernel, fgpu::hook::LaunchKernelSlow>(
      f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch<fgpu::hook::CudaSymbol::k_cuLaunchKernel_ptsz, fgpu::hook::LaunchKernelPtszSlow>(
      f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

}  // extern "C"
