// Which GPU Slurm gave a job step, as the node agent names it (the physical index).
//
// Slurm's gres plugins (gpu and shard alike) export the step's GPUs as physical indices in
// SLURM_STEP_GPUS, and the batch step's as SLURM_JOB_GPUS; CUDA_VISIBLE_DEVICES is the last
// resort, because with ConstrainDevices=yes Slurm renumbers it from 0. An fgpu slice lives
// on one GPU, so a step with none or with several is refused with what to ask for instead.
// Pure; never throws except std::bad_alloc.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"

namespace fgpu::slurm {

struct StepGpuEnv {
  std::optional<std::string> step_gpus;             // SLURM_STEP_GPUS
  std::optional<std::string> job_gpus;              // SLURM_JOB_GPUS
  std::optional<std::string> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES
};

// The one GPU of the step ("0", "3", or a UUID when only CUDA_VISIBLE_DEVICES names one);
// InvalidArgument with the reason for none, several, or a malformed list.
Result<std::string> ChooseStepGpu(const StepGpuEnv& env);

}  // namespace fgpu::slurm
