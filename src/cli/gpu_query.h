// Which physical GPU a slice goes on, asked of NVML (the same libnvidia-ml.so.1 the workload
// will see: the real one, or the simulated one under `fgpu sim run`). NVML is loaded with
// dlopen at run time, so the fgpu binary needs no GPU library to start.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace fgpu::cli {

struct GpuInfo {
  int nvml_index = 0;
  std::string uuid;  // "GPU-..."
  std::string name;
  uint64_t total_bytes = 0;
};

// `selector` is an NVML index ("0", "1" — as nvidia-smi numbers GPUs) or a UUID ("GPU-...").
// Unavailable when NVML cannot be loaded or initialised; NotFound for an unknown GPU.
Result<GpuInfo> QueryGpu(const std::string& selector);

}  // namespace fgpu::cli
