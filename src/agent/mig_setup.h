// The machine's GPUs as the agent uses them: each GPU's isolation class from the configuration,
// and each MIG GPU's configured geometry applied through NVML at start, where no slice is in the
// way (docs/mig.md "Isolation classes").
//
// Contract
// - ChooseTarget: a geometry of exactly the profiles asked (names of the GPU's model) that keeps
//   every busy instance where it is and, of the rest, as many as can be. InvalidArgument for an
//   unknown profile or a mix no valid geometry holds; ResourceExhausted when the busy instances
//   cannot all stay, naming the first that would have to go and why it is busy.
// - SetUpGpus: a selector naming no GPU, a MIG class on a GPU without MIG or a geometry that
//   cannot be are InvalidArgument (the agent does not start: a misconfigured isolation is not
//   lifted silently). On a MIG GPU: MIG mode turned on; the configured geometry applied step
//   by step (only the instances that change are destroyed or created, destroys first); when a
//   slice is in the way, or the mode waits for the GPU to be idle, the GPU keeps what it has and
//   `mig_note` says why. Returns every placement target: each whole GPU (a MIG GPU too: it
//   takes no slice itself, but shows its note) followed by its MIG instances.
// - Needs root for any change (NVML's rule); reading needs nothing.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/nvml_client.h"
#include "agent/slice_record.h"
#include "core/mig_profiles.h"
#include "core/status.h"
#include "sched/mig/planner.h"

namespace fgpu::agent {

// Why an instance may not change ("" = it may), by its place in `current`.
using BusyReason = std::function<std::string(size_t instance)>;

Result<std::vector<mig::Placed>> ChooseTarget(const mig::ModelInfo& model,
                                              std::span<const std::string> profiles,
                                              std::span<const mig::Placed> current, const BusyReason& busy);

Result<std::vector<GpuState>> SetUpGpus(const NvmlClient& nvml, std::vector<GpuState> gpus,
                                        std::span<const GpuClassConfig> classes,
                                        std::span<const SliceRecord> slices);

}  // namespace fgpu::agent
