// The machine's GPUs as the agent uses them: each GPU's isolation class from the configuration,
// MIG mode on for the GPUs of the mig class, and their instances as placement targets; and the
// geometry a MIG GPU is to have (docs/mig.md "Isolation classes"). MigManager (mig_manager.h)
// applies geometries; this file decides and reads.
//
// Contract
// - ChooseTarget: a geometry of exactly the profiles asked (names of the GPU's model) that keeps
//   as many busy instances, then as many others, where they are as can be; the busy instances it
//   cannot keep are `displaced`. InvalidArgument for an unknown profile or a mix no valid
//   geometry holds.
// - SetUpGpus: a selector naming no GPU, a mig class on a GPU without MIG, or a geometry that no
//   valid placement holds is InvalidArgument, before any GPU is changed (the agent does not
//   start: a misconfigured isolation is not lifted silently). A GPU of the
//   mig class gets MIG mode (pending: no instances, and `mig_note` says why); a GPU the
//   configuration does not name but that is in MIG mode is of the mig class. Returns every
//   placement target: each whole GPU (a MIG GPU too: it takes no slice itself) followed by its
//   MIG instances as NVML lists them now.
// - InstancesOf: a MIG GPU's instances as targets (those with a compute instance).
// - Needs root for any change (NVML's rule); reading needs nothing.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/nvml_client.h"
#include "core/mig_profiles.h"
#include "core/status.h"

namespace fgpu::agent {

// Why an instance may not change ("" = it may), by its place in `current`.
using BusyReason = std::function<std::string(size_t instance)>;

struct TargetChoice {
  std::vector<mig::Placed> geometry;  // by start slot
  std::vector<size_t> displaced;      // busy instances of `current` the geometry does not keep
};

Result<TargetChoice> ChooseTarget(const mig::ModelInfo& model, std::span<const std::string> profiles,
                                  std::span<const mig::Placed> current, const BusyReason& busy);

Result<std::vector<GpuState>> SetUpGpus(const NvmlClient& nvml, std::vector<GpuState> gpus,
                                        std::span<const GpuClassConfig> classes);

Result<std::vector<GpuState>> InstancesOf(const NvmlClient& nvml, const GpuState& gpu);

// What `current` takes of a GPU, as mig::Fits asks it for a new instance of `profile`: the memory
// slices occupied, whether a +me instance is among them, how many instances of `profile` it has.
struct Occupancy {
  uint8_t occupied = 0;
  bool media_used = false;
  int count = 0;
  bool Admits(const mig::Profile& profile, int start) const {
    return mig::Fits(profile, start, occupied, media_used, count);
  }
};
Occupancy OccupancyOf(const mig::ModelInfo& model, std::span<const mig::Placed> current, const mig::Profile& profile);

// Where a new instance of `profile` goes beside `current`: the valid start that leaves the most
// room (every placement of every profile still open, weighted by its size: a 1g.10gb on an empty
// H100 goes to slice 6, not 0, where 4g.40gb and 7g.80gb start), the highest on a tie; nullopt
// when it fits nowhere.
std::optional<int> ChoosePlacement(const mig::ModelInfo& model, const mig::Profile& profile,
                                   std::span<const mig::Placed> current);

// "3g.40gb + 2g.20gb": the profiles as the configuration lists them.
std::string JoinProfiles(std::span<const std::string> profiles);

}  // namespace fgpu::agent
