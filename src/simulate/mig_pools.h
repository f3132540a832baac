// MIG against slices on a trace (`fgpu simulate --mig`, docs/mig.md "MIG against slices"): the
// FGD protocol's arrivals placed three ways on the same cluster until requested GPU reaches
// 100 % of its capacity, with every GPU taken as one MIG model (the trace's GPUs have no MIG:
// the question is what MIG's same-size constraint would cost on this demand).
//
//  - slices: fgpu's slices placed by FGD+ (what `fgpu simulate` does); a pod gets exactly its
//    share.
//  - mig: each pod gets the smallest profile whose nominal compute (slices/7) and memory
//    (slices/8) both cover its share of the GPU (the trace has no GPU memory column: a share is
//    that share of both); instances are created on arrival at explicit starts (dynamic MIG: the
//    fullest GPU that can take it, then the start leaving the fewest free runs); a whole-GPU
//    pod takes a 7g instance per GPU.
//  - mixed: a seeded `mig_fraction` of the nodes run MIG, the rest slices; a pod whose profile
//    wastes at most 1/8 of a GPU goes to MIG first, any other to slices first, and to the other
//    pool when its own has no room.
//
// Reported at arrived 100 %, in % of the cluster's GPU capacity: what placed pods asked for,
// its complement (unallocated), and what MIG instances hold beyond what their pods asked
// (stranded compute and memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/mig_profiles.h"
#include "core/status.h"
#include "simulate/replay.h"

namespace fgpu::simulate {

enum class Pools : uint8_t { kSlices, kMig, kMixed };
std::string_view NameOf(Pools pools);

struct PoolsSpec {
  Pools pools = Pools::kMig;
  uint64_t seed = 42;
  double inflate = 1.3;
  fgpu::mig::Model model = fgpu::mig::Model::kH100_80GB;
  double mig_fraction = 0.5;  // mixed: the share of nodes that run MIG
};

struct PoolsResult {
  Pools pools = Pools::kMig;
  uint64_t seed = 0;
  int64_t arrivals = 0;  // up to arrived 100 %
  int64_t placed = 0;
  int64_t failed = 0;
  int64_t on_mig = 0;  // pods placed in MIG instances
  // % of the cluster's GPU capacity:
  double requested = 0;         // what placed pods asked for
  double unallocated = 0;       // 100 - requested
  double stranded_compute = 0;  // compute held by MIG instances beyond what their pods asked
  double stranded_memory = 0;   // memory likewise
  double stranded_memory_gib = 0;
};

// The smallest profile (never a +me one) whose compute_slices/7 and memory_slices/8 both reach
// `share` (0 < share <= 1); the 7g profile for a whole GPU.
const fgpu::mig::Profile& ProfileForShare(const fgpu::mig::ModelInfo& model, double share);

Result<PoolsResult> ReplayPools(const Scenario& scenario, const PoolsSpec& spec);

}  // namespace fgpu::simulate
