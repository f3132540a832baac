// Kernel launches: validation, the device-time model, and execution on a stream.
//
// Time model: a kernel occupies the whole device for waves × wave time, where
// waves = ceil(blocks / sm_count) and the wave time comes from the config's per-function
// table, or, for the probe's `fgpu_spin` kernel, from its first parameter (u64 ns), or the
// config default. Kernels of all processes serialise on the device's shared timeline.
#pragma once

#include <cstdint>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

inline constexpr const char* kSpinKernelName = "fgpu_spin";

// Builds a KernelLaunch from launch arguments, validating them as the driver does.
CUresult PrepareLaunch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                       void** kernel_params, void** extra, bool cooperative, KernelLaunch* out);

// Device time of one launch on `device`.
uint64_t KernelDurationNs(const KernelLaunch& launch, int device);

// Runs (or, while the stream is captured, records) a prepared launch on `stream`.
CUresult ExecuteLaunch(const KernelLaunch& launch, CUstream stream, bool per_thread);

}  // namespace fgpu::sim::cuda
