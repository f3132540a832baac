// The launch wrappers' slow path, kept out of line (noinline, another file) so the exported
// fast path stays a load, a test and a tail call. One function per variant, with exactly the
// wrapper's prototype, so the fast path reaches it by a plain jump too (no argument is moved).
// Taken before init has resolved the real entry point, and whenever compute shares are armed
// (compute_gate.h).
#pragma once

#include "core/abi/cuda_types.h"

namespace fgpu::hook {

// Initialise the hook, then launch through the real cuLaunchKernel / cuLaunchKernel_ptsz;
// CUDA_ERROR_NOT_INITIALIZED if the driver lacks it.
__attribute__((noinline)) CUresult LaunchKernelSlow(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void** kernelParams, void** extra);
__attribute__((noinline)) CUresult LaunchKernelPtszSlow(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void** kernelParams, void** extra);

}  // namespace fgpu::hook
