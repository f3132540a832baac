// The MIG planner: per-GPU geometries for a demand mix, and the ordered steps that take a
// node's GPUs from their current geometry to the planned one.
//
// Contract
// - Demand is a count of instances wanted per profile, the ones running now included (a
//   fractional request becomes the smallest profile that holds it: SmallestProfileFor).
// - PlanNode gives each GPU a geometry from the catalog (every one valid by construction),
//   GPU after GPU, taking the geometry that places the most demanded memory slices, then
//   compute slices, then keeps the most current instances, then leaves the most room
//   contiguous (fewest separate free runs), so what is left on a GPU stays usable. Demand that
//   no GPU takes is reported as unplaced. Busy instances (running work) are kept where they
//   are unless `options.move_busy`; then each one that must go is drained first.
// - The steps touch only instances that change: every instance not in the target is drained
//   (when busy) and destroyed, then every target instance not present is created at its start.
//   Destroys come first, so every intermediate geometry is a subset of the current or the target
//   one and hence valid.
// - Deterministic: the same input gives the same plan. Not thread-safe (sched's rule).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/mig_profiles.h"
#include "core/status.h"
#include "sched/mig/catalog.h"

namespace fgpu::sched::mig {

struct Instance {
  Placed placed;
  bool busy = false;  // running work: moving it means draining it first
};

struct GpuState {
  const ModelInfo* model = nullptr;  // nullptr: the GPU has no MIG; the planner leaves it alone
  std::vector<Instance> instances;
};

struct Demand {
  std::vector<std::pair<uint32_t, int>> profiles;  // profile id, instances wanted
};

struct PlanOptions {
  bool move_busy = false;  // may busy instances be drained and moved
};

struct Step {
  enum class Kind : uint8_t { kDrain, kDestroy, kCreate };
  Kind kind = Kind::kCreate;
  int gpu = 0;
  Placed instance;
  std::string ToString(const ModelInfo& model) const;
};

struct NodePlan {
  std::vector<std::vector<Placed>> geometries;     // per GPU, the target (by start slot)
  std::vector<Step> steps;                         // in order
  std::vector<std::pair<uint32_t, int>> unplaced;  // profile id, instances no GPU took
  int free_memory_slices = 0;                      // left free on MIG GPUs after the plan
  int drained = 0;                                 // busy instances the plan drains
};

// The smallest profile of `model` (fewest memory slices, then compute slices; never a +me
// one) with at least `memory_bytes` and `compute` of the whole GPU's SMs (0..1); nullptr if
// none is large enough.
const Profile* SmallestProfileFor(const ModelInfo& model, uint64_t memory_bytes, double compute);

// Plans every MIG GPU of a node (GPUs may be of different models; the demand names profile
// ids, which mean the same shape on every model). InvalidArgument for a current geometry that
// is not valid or a demand for an unknown profile or a negative count.
Result<NodePlan> PlanNode(std::span<const GpuState> gpus, const Demand& demand, const PlanOptions& options = {});

// The steps that take one GPU from `current` to `target` (both valid geometries of its model).
std::vector<Step> StepsBetween(int gpu, std::span<const Instance> current, std::span<const Placed> target);

}  // namespace fgpu::sched::mig
