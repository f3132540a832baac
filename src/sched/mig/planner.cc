#include "sched/mig/planner.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

namespace fgpu::sched::mig {
namespace {

bool Holds(std::span<const Placed> geometry, const Placed& instance) {
  return std::find(geometry.begin(), geometry.end(), instance) != geometry.end();
}

std::string ProfileName(const ModelInfo& model, uint32_t id) {
  const Profile* profile = fgpu::mig::FindProfile(model, id);
  return profile != nullptr ? std::string(profile->name) : "profile " + std::to_string(id);
}

// Profile ids are the same shapes on every model; the first model's table names them.
bool KnownProfile(uint32_t id) { return fgpu::mig::FindProfile(fgpu::mig::Models()[0], id) != nullptr; }

struct Choice {
  const Geometry* geometry = nullptr;
  std::tuple<int, int, int, int, int> score{-1, -1, -1, -1, -1};
};

// The busy instances the plan may not move, per profile id, over the node.
std::map<uint32_t, int> Unmovable(std::span<const GpuState> gpus, const PlanOptions& options) {
  std::map<uint32_t, int> count;
  if (options.move_busy) return count;
  for (const GpuState& gpu : gpus) {
    if (gpu.model == nullptr) continue;
    for (const Instance& instance : gpu.instances) count[instance.placed.profile_id] += instance.busy ? 1 : 0;
  }
  return count;
}

// One GPU's instances the plan may not move, per profile in the model's order.
std::array<int, kProfilesPerModel> UnmovableOn(const GpuState& gpu, const Catalog& catalog, const PlanOptions& options) {
  std::array<int, kProfilesPerModel> forced{};
  for (const Instance& instance : gpu.instances) {
    if (instance.busy && !options.move_busy) ++forced[static_cast<size_t>(catalog.IndexOf(instance.placed.profile_id))];
  }
  return forced;
}

// The best catalog geometry for one GPU given what is still demanded (per profile id) beside the
// GPU's unmovable instances (`forced`), which the demand has already been charged for.
Choice ChooseGeometry(const GpuState& gpu, const std::array<int, kProfilesPerModel>& forced,
                      const std::map<uint32_t, int>& remaining, const PlanOptions& options) {
  const Catalog& catalog = Catalog::Of(*gpu.model);
  const ModelInfo& model = catalog.model();
  std::array<int, kProfilesPerModel> allowed{};
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    const auto found = remaining.find(model.profiles[p].id);
    allowed[p] = (found == remaining.end() ? 0 : found->second) + forced[p];
  }
  Choice best;
  for (const Geometry& geometry : catalog.geometries()) {
    bool feasible = true;
    for (size_t p = 0; p < model.profiles.size() && feasible; ++p) feasible = geometry.count[p] <= allowed[p];
    if (!feasible) continue;
    int kept = 0;
    int busy_kept = 0;
    for (const Instance& instance : gpu.instances) {
      if (!Holds(geometry.instances, instance.placed)) {
        if (instance.busy && !options.move_busy) feasible = false;
        continue;
      }
      ++kept;
      busy_kept += instance.busy ? 1 : 0;
    }
    if (!feasible) continue;
    const std::tuple<int, int, int, int, int> score{geometry.memory_slices, geometry.compute_slices, busy_kept, kept,
                                                    -fgpu::mig::FreeRuns(geometry.occupied)};
    if (score > best.score) best = {&geometry, score};
  }
  return best;
}

}  // namespace

std::string Step::ToString(const ModelInfo& model) const {
  const char* verb = kind == Kind::kDrain ? "drain" : kind == Kind::kDestroy ? "destroy" : "create";
  return "GPU " + std::to_string(gpu) + ": " + verb + " " + ProfileName(model, instance.profile_id) + " at slot " +
         std::to_string(instance.start);
}

const Profile* SmallestProfileFor(const ModelInfo& model, uint64_t memory_bytes, double compute) {
  const Profile* best = nullptr;
  for (const Profile& profile : model.profiles) {
    if (profile.media || profile.memory_bytes < memory_bytes) continue;
    if (static_cast<double>(profile.sms) < compute * static_cast<double>(model.sms) - 1e-9) continue;
    if (best == nullptr || std::tie(profile.memory_slices, profile.compute_slices) <
                               std::tie(best->memory_slices, best->compute_slices)) {
      best = &profile;
    }
  }
  return best;
}

std::vector<Step> StepsBetween(int gpu, std::span<const Instance> current, std::span<const Placed> target) {
  std::vector<Step> steps;
  for (const Instance& instance : current) {
    if (Holds(target, instance.placed)) continue;
    if (instance.busy) steps.push_back({Step::Kind::kDrain, gpu, instance.placed});
    steps.push_back({Step::Kind::kDestroy, gpu, instance.placed});
  }
  for (const Placed& placed : target) {
    const bool present = std::any_of(current.begin(), current.end(), [&](const Instance& i) { return i.placed == placed; });
    if (!present) steps.push_back({Step::Kind::kCreate, gpu, placed});
  }
  return steps;
}

Result<NodePlan> PlanNode(std::span<const GpuState> gpus, const Demand& demand, const PlanOptions& options) {
  std::map<uint32_t, int> remaining;
  for (const auto& [id, count] : demand.profiles) {
    if (!KnownProfile(id)) return Status::InvalidArgument("demand for MIG profile " + std::to_string(id) + ", which no GPU has");
    if (count < 0) return Status::InvalidArgument("demand of " + std::to_string(count) + " instances of profile " + std::to_string(id));
    remaining[id] += count;
  }
  for (const auto& [id, count] : Unmovable(gpus, options)) remaining[id] = std::max(0, remaining[id] - count);
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (gpus[g].model == nullptr) continue;
    std::vector<Placed> placed;
    for (const Instance& instance : gpus[g].instances) placed.push_back(instance.placed);
    const fgpu::mig::GeometryError error = fgpu::mig::CheckGeometry(*gpus[g].model, placed);
    if (error != fgpu::mig::GeometryError::kNone) {
      return Status::InvalidArgument("GPU " + std::to_string(g) + "'s current MIG geometry has " +
                                     std::string(fgpu::mig::Describe(error)));
    }
  }
  // GPUs whose busy instances constrain them go first, so the free ones take what is left.
  std::vector<size_t> order(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) order[g] = g;
  const auto busy = [&](size_t g) {
    return std::count_if(gpus[g].instances.begin(), gpus[g].instances.end(), [](const Instance& i) { return i.busy; });
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return busy(a) > busy(b); });

  NodePlan plan;
  plan.geometries.resize(gpus.size());
  std::vector<std::vector<Step>> steps(gpus.size());
  for (const size_t g : order) {
    const GpuState& gpu = gpus[g];
    if (gpu.model == nullptr) continue;
    const std::array<int, kProfilesPerModel> forced = UnmovableOn(gpu, Catalog::Of(*gpu.model), options);
    const Choice choice = ChooseGeometry(gpu, forced, remaining, options);
    const Geometry& geometry = *choice.geometry;  // the busy instances alone always qualify
    for (size_t p = 0; p < gpu.model->profiles.size(); ++p) {
      int& left = remaining[gpu.model->profiles[p].id];
      left = std::max(0, left - (geometry.count[p] - forced[p]));
    }
    plan.geometries[g] = geometry.instances;
    plan.free_memory_slices += fgpu::mig::kMemorySlices - geometry.memory_slices;
    steps[g] = StepsBetween(static_cast<int>(g), gpu.instances, geometry.instances);
  }
  for (std::vector<Step>& gpu_steps : steps) {
    for (const Step& step : gpu_steps) plan.drained += step.kind == Step::Kind::kDrain ? 1 : 0;
    plan.steps.insert(plan.steps.end(), gpu_steps.begin(), gpu_steps.end());
  }
  for (const auto& [id, count] : remaining) {
    if (count > 0) plan.unplaced.emplace_back(id, count);
  }
  return plan;
}

}  // namespace fgpu::sched::mig
