// A slice's workload environment, built in one place: what the agent puts in every slice's
// "env", and how a launcher (`fgpu run`, the Slurm plugin, the Kubernetes plugin) applies it
// over the environment a workload already has, so each starts workloads exactly alike.
//
// A slice's env: the setup's extra variables (the simulator's, when the agent runs on it),
// LD_PRELOAD = the interposer, FGPU_SLICE = the slice directory and CUDA_VISIBLE_DEVICES = the
// GPU's UUID (only that GPU, named so that CUDA ordinals and NVML indices cannot disagree).
//
// Applying it: LD_PRELOAD and LD_LIBRARY_PATH are lists, so the slice's entries go first (the
// interposer and the driver it names must win), then the workload's own entries that are not
// among them (a Slurm step started from a batch script already carries the batch step's); no
// empty entries. Every other variable is set to the slice's value. Pure; never throws except
// std::bad_alloc.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "api/types.h"

namespace fgpu::api {

// What the agent knows at start about every slice's workloads.
struct WorkloadSetup {
  std::string preload;  // libfgpu.so; empty: unknown (the launcher must find it)
  Env extra;            // e.g. FGPU_SIM_SEGMENT, FGPU_SIM_CONFIG, LD_LIBRARY_PATH under the simulator
};

// The "env" of a slice in `dir` on the GPU `gpu_uuid`.
Env SliceEnv(const WorkloadSetup& setup, const std::string& dir, const std::string& gpu_uuid);

// The current value of a variable, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// This process's environment (getenv).
std::optional<std::string> ProcessEnv(const std::string& name);

// `slice_env` applied over `current`: the (name, value) pairs to set, in the slice's order.
Env MergeEnv(const Env& slice_env, const EnvLookup& current);

// `first`'s entries of a colon-separated list, then `rest`'s not among them; no empty entries.
std::string PrependPaths(const std::string& first, const std::string& rest);

}  // namespace fgpu::api
