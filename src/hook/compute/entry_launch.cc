// The launch wrappers. cuLaunchKernel[_ptsz] is the hot path: one relaxed load of the real
// entry point, one check that no compute share is set, and the call — no lock, no syscall,
// no allocation, no logging. Otherwise (before init, or with compute shares) the out-of-line
// slow path runs. Each variant forwards to its own real twin, so the per-thread-default-stream
// choice the caller made is kept. cuLaunchKernelEx, cooperative launches and the deprecated legacy
// launches (cuLaunch, cuLaunchGrid[Async], cuLaunchCooperativeKernelMultiDevice) are less frequent
// and take the gate directly: they must not escape compute shares.
#include "hook/compute/compute_gate.h"
#include "hook/compute/launch_slow_path.h"
#include "hook/interpose/exports.h"
#include "hook/interpose/real_driver_internal.h"
#include "hook/memory/memory_hook.h"

namespace {

using LaunchFn = decltype(&::cuLaunchKernel);
using fgpu::compute::LaunchKind;

template <fgpu::hook::CudaSymbol kSymbol, LaunchFn kSlowPath>
inline CUresult Launch(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                       unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  const auto real = reinterpret_cast<LaunchFn>(fgpu::hook::LoadRealCuda(kSymbol));
  if (__builtin_expect(real != nullptr && !fgpu::hook::ComputeGateArmed(), 1)) {
    return real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, extra);
  }
  return kSlowPath(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                   kernelParams, extra);
}

template <typename Fn, typename... Args>
CUresult Gated(Fn real, CUstream stream, bool per_thread_stream, Args... args) {
  if (real == nullptr) return fgpu::hook::MissingRealCuda();
  if (!fgpu::hook::ComputeGateArmed()) return real(args...);
  const fgpu::hook::LaunchTicket ticket = fgpu::hook::BeforeLaunch(stream, per_thread_stream, LaunchKind::kKernel);
  const CUresult rc = real(args...);
  fgpu::hook::AfterLaunch(ticket, stream, per_thread_stream, LaunchKind::kKernel, rc);
  return rc;
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

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return Gated(FGPU_REAL_CUDA(cuLaunchKernelEx), config != nullptr ? config->hStream : nullptr, false, config, f,
               kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return Gated(FGPU_REAL_CUDA(cuLaunchKernelEx_ptsz), config != nullptr ? config->hStream : nullptr, true, config,
               f, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  return Gated(FGPU_REAL_CUDA(cuLaunchCooperativeKernel), hStream, false, f, gridDimX, gridDimY, gridDimZ,
               blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams) {
  return Gated(FGPU_REAL_CUDA(cuLaunchCooperativeKernel_ptsz), hStream, true, f, gridDimX, gridDimY, gridDimZ,
               blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

// The legacy launches: cuLaunch and cuLaunchGrid run on the legacy default stream.
CUresult cuLaunch(CUfunction f) { return Gated(FGPU_REAL_CUDA(cuLaunch), nullptr, false, f); }

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return Gated(FGPU_REAL_CUDA(cuLaunchGrid), nullptr, false, f, grid_width, grid_height);
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream) {
  return Gated(FGPU_REAL_CUDA(cuLaunchGridAsync), hStream, false, f, grid_width, grid_height, hStream);
}

// One admission for the whole list, on the current context's GPU and the first launch's stream:
// the gate knows one GPU per call (on a single-GPU slice, the one the list can name).
CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* launchParamsList, unsigned int numDevices,
                                              unsigned int flags) {
  const CUstream stream = launchParamsList != nullptr && numDevices > 0 ? launchParamsList[0].hStream : nullptr;
  return Gated(FGPU_REAL_CUDA(cuLaunchCooperativeKernelMultiDevice), stream, false, launchParamsList, numDevices,
               flags);
}

}  // extern "C"
