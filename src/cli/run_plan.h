// The pure part of `fgpu run`: what slice to make and what environment the workload gets.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fgpu::cli {

// "512MiB", "10GiB", "1.5GiB", bytes, or "40%" of `device_total`. Zero, more than the device
// has, and malformed values are InvalidArgument naming the input.
Result<uint64_t> ParseMemoryLimit(const std::string& text, uint64_t device_total);

// A compute share: "30" or "30%", 1..100. Anything else is InvalidArgument naming the input.
Result<uint32_t> ParseComputeShare(const std::string& text);

using Environment = std::vector<std::pair<std::string, std::string>>;

// The workload's environment additions: the interposer first in LD_PRELOAD (`ld_preload`
// is the current value, nullptr if unset), the slice to enforce, and only the slice's GPU
// visible (by UUID, so CUDA ordinals and NVML indices cannot disagree about which it is).
Environment WorkloadEnvironment(const std::string& hook_library, const char* ld_preload,
                                const std::string& slice_dir, const std::string& gpu_uuid);

// The workload's environment additions for a slice the agent made: everything the slice's "env"
// names (the interposer, FGPU_SLICE, CUDA_VISIBLE_DEVICES and, under the simulator, its
// FGPU_SIM_* and LD_LIBRARY_PATH), so the workload reaches the agent's GPUs from any shell.
// Search paths are put first in the current value (`ld_preload`, `ld_library_path`; nullptr if
// unset), not replaced. An agent that names no interposer gets `own_hook` (this fgpu's).
Environment AgentSliceEnvironment(const Environment& slice_env, const std::string& own_hook, const char* ld_preload,
                                  const char* ld_library_path);

// What the agent tells launchers its slices' workloads need besides the interposer and the
// slice: under the simulator (`config` or `segment` — FGPU_SIM_CONFIG, FGPU_SIM_SEGMENT — set),
// those and `ld_library_path`, so that a workload another launcher starts (the Slurm plugin)
// reaches the agent's simulated GPUs; on a real machine nothing.
Environment SimulatorEnvironmentForWorkloads(const char* config, const char* segment, const char* ld_library_path);

// <dir of executable_path>/../lib/fgpu/libfgpu.so, lexically normalised.
std::string HookLibraryBeside(const std::string& executable_path);

}  // namespace fgpu::cli
