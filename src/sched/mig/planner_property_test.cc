// Properties of the MIG planner on random nodes: every geometry it emits is valid, every step
// keeps the GPU valid and the steps reach the target, busy instances stay unless moving them is
// allowed (and then they are drained first), no more is placed than asked, the same input
// gives the same plan.
#include <gtest/gtest.h>

#include <map>

#include "sched/mig/planner.h"
#include "sched/rng.h"

namespace fgpu::sched::mig {
namespace {

using fgpu::mig::CheckGeometry;
using fgpu::mig::GeometryError;
using fgpu::mig::Models;

std::vector<GpuState> RandomNode(Rng& rng) {
  std::vector<GpuState> gpus(1 + rng.Next() % 8);
  for (GpuState& gpu : gpus) {
    if (rng.Next() % 8 == 0) continue;  // a GPU without MIG
    gpu.model = &Models()[rng.Next() % Models().size()];
    const std::vector<Geometry>& all = Catalog::Of(*gpu.model).geometries();
    for (const Placed& placed : all[rng.Next() % all.size()].instances) {
      gpu.instances.push_back({placed, rng.Next() % 3 == 0});
    }
  }
  return gpus;
}

Demand RandomDemand(Rng& rng) {
  Demand demand;
  for (const fgpu::mig::Profile& profile : Models()[0].profiles) {
    demand.profiles.emplace_back(profile.id, static_cast<int>(rng.Next() % 5));
  }
  return demand;
}

// Applies the steps one by one, checking each intermediate geometry.
void ReplaySteps(const std::vector<GpuState>& gpus, const NodePlan& plan, bool move_busy) {
  std::vector<std::vector<Placed>> now(gpus.size());
  std::vector<std::vector<Placed>> drained(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (const Instance& instance : gpus[g].instances) now[g].push_back(instance.placed);
  }
  for (const Step& step : plan.steps) {
    auto& geometry = now[static_cast<size_t>(step.gpu)];
    const GpuState& gpu = gpus[static_cast<size_t>(step.gpu)];
    const auto found = std::find(geometry.begin(), geometry.end(), step.instance);
    switch (step.kind) {
      case Step::Kind::kDrain:
        ASSERT_TRUE(move_busy) << "a drain without permission";
        ASSERT_NE(found, geometry.end());
        drained[static_cast<size_t>(step.gpu)].push_back(step.instance);
        break;
      case Step::Kind::kDestroy: {
        ASSERT_NE(found, geometry.end());
        const bool busy = std::any_of(gpu.instances.begin(), gpu.instances.end(),
                                      [&](const Instance& i) { return i.busy && i.placed == step.instance; });
        if (busy) {
          const auto& d = drained[static_cast<size_t>(step.gpu)];
          ASSERT_NE(std::find(d.begin(), d.end(), step.instance), d.end()) << "a busy instance destroyed undrained";
        }
        geometry.erase(found);
        break;
      }
      case Step::Kind::kCreate:
        ASSERT_EQ(found, geometry.end());
        geometry.push_back(step.instance);
        break;
    }
    ASSERT_EQ(CheckGeometry(*gpu.model, geometry), GeometryError::kNone) << step.ToString(*gpu.model);
  }
  for (size_t g = 0; g < gpus.size(); ++g) {
    std::sort(now[g].begin(), now[g].end(), [](const Placed& a, const Placed& b) { return a.start < b.start; });
    EXPECT_EQ(now[g], plan.geometries[g]) << "GPU " << g;
  }
}

TEST(MigPlannerPropertyTest, PlansAreValidReachableAndKeepWhatTheyMust) {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    const std::vector<GpuState> gpus = RandomNode(rng);
    const Demand demand = RandomDemand(rng);
    const PlanOptions options{.move_busy = seed % 2 == 0};
    const Result<NodePlan> plan = PlanNode(gpus, demand, options);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    std::map<uint32_t, int> placed;
    std::map<uint32_t, int> busy_kept;
    for (size_t g = 0; g < gpus.size(); ++g) {
      if (gpus[g].model == nullptr) {
        EXPECT_TRUE(plan->geometries[g].empty());
        continue;
      }
      EXPECT_EQ(CheckGeometry(*gpus[g].model, plan->geometries[g]), GeometryError::kNone);
      for (const Placed& p : plan->geometries[g]) ++placed[p.profile_id];
      for (const Instance& instance : gpus[g].instances) {
        const bool kept = std::find(plan->geometries[g].begin(), plan->geometries[g].end(), instance.placed) !=
                          plan->geometries[g].end();
        if (instance.busy && !options.move_busy) {
          EXPECT_TRUE(kept) << "a busy instance moved";
        }
        if (instance.busy && kept) ++busy_kept[instance.placed.profile_id];
      }
    }
    for (const auto& [id, wanted] : demand.profiles) {
      // Beyond the demand only busy instances the plan was not allowed to move.
      EXPECT_LE(placed[id], std::max(wanted, options.move_busy ? wanted : busy_kept[id])) << "profile " << id;
    }
    ReplaySteps(gpus, *plan, options.move_busy);
    const Result<NodePlan> again = PlanNode(gpus, demand, options);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->geometries, plan->geometries);
  }
}

}  // namespace
}  // namespace fgpu::sched::mig
