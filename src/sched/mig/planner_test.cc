#include "sched/mig/planner.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace fgpu::sched::mig {
namespace {

using fgpu::mig::InfoOf;
using fgpu::mig::Model;
using Kind = Step::Kind;

constexpr uint32_t k1g = 19, k1g2m = 15, k2g = 14, k3g = 9, k4g = 5, k7g = 0;

const ModelInfo& H100() { return InfoOf(Model::kH100_80GB); }

GpuState Gpu(std::vector<Instance> instances = {}) { return GpuState{&H100(), std::move(instances)}; }

int Count(const std::vector<Placed>& geometry, uint32_t id) {
  return static_cast<int>(std::count_if(geometry.begin(), geometry.end(), [&](const Placed& p) { return p.profile_id == id; }));
}

TEST(MigPlannerTest, AFractionalRequestGetsTheSmallestProfileThatHoldsIt) {
  EXPECT_EQ(SmallestProfileFor(H100(), 9 * kGiB, 0.1)->name, "1g.10gb");
  EXPECT_EQ(SmallestProfileFor(H100(), 10 * kGiB, 0.1)->name, "1g.20gb");  // 1g.10gb holds 9.75 GiB
  EXPECT_EQ(SmallestProfileFor(H100(), 5 * kGiB, 0.3)->name, "3g.40gb");   // 30 % of 132 SMs: 40 > 32
  EXPECT_EQ(SmallestProfileFor(H100(), 40 * kGiB, 0.1)->name, "7g.80gb");  // 4g.40gb holds 39.5 GiB
  EXPECT_EQ(SmallestProfileFor(H100(), 100 * kGiB, 0.1), nullptr);
  EXPECT_EQ(SmallestProfileFor(InfoOf(Model::kA100_40GB), 4 * kGiB, 0.1)->name, "1g.5gb");
}

TEST(MigPlannerTest, AnEmptyGpuGetsTheMixAsCreates) {
  const std::vector<GpuState> gpus{Gpu()};
  const Result<NodePlan> plan = PlanNode(gpus, Demand{{{k3g, 1}, {k2g, 2}}});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Count(plan->geometries[0], k3g), 1);
  EXPECT_EQ(Count(plan->geometries[0], k2g), 2);
  EXPECT_EQ(fgpu::mig::CheckGeometry(H100(), plan->geometries[0]), fgpu::mig::GeometryError::kNone);
  ASSERT_EQ(plan->steps.size(), 3u);
  for (const Step& step : plan->steps) EXPECT_EQ(step.kind, Kind::kCreate);
  EXPECT_TRUE(plan->unplaced.empty());
  EXPECT_EQ(plan->free_memory_slices, 0);
}

TEST(MigPlannerTest, DemandNoGpuCanHoldIsReportedUnplaced) {
  const std::vector<GpuState> gpus{Gpu(), Gpu()};
  const Result<NodePlan> plan = PlanNode(gpus, Demand{{{k4g, 3}, {k3g, 2}}});
  ASSERT_TRUE(plan.ok());
  // Each GPU takes a 4g (max one) and a 3g beside it; the third 4g has nowhere to go.
  for (const auto& geometry : plan->geometries) {
    EXPECT_EQ(Count(geometry, k4g), 1);
    EXPECT_EQ(Count(geometry, k3g), 1);
  }
  ASSERT_EQ(plan->unplaced.size(), 1u);
  EXPECT_EQ(plan->unplaced[0], std::make_pair(k4g, 1));
}

TEST(MigPlannerTest, BusyInstancesStayAndTheRestGoesElsewhere) {
  const std::vector<GpuState> gpus{Gpu({{{k1g, 0}, true}}), Gpu()};
  const Result<NodePlan> plan = PlanNode(gpus, Demand{{{k7g, 1}, {k1g, 1}}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->geometries[0], (std::vector<Placed>{{k1g, 0}}));
  EXPECT_EQ(plan->geometries[1], (std::vector<Placed>{{k7g, 0}}));
  EXPECT_EQ(plan->drained, 0);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].ToString(H100()), "GPU 1: create 7g.80gb at slot 0");
}

TEST(MigPlannerTest, ABusyInstanceInTheWayIsDrainedOnlyWhenAllowed) {
  const std::vector<GpuState> gpus{Gpu({{{k1g, 3}, true}})};
  const Demand demand{{{k4g, 1}, {k3g, 1}}};
  const Result<NodePlan> kept = PlanNode(gpus, demand);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->geometries[0], (std::vector<Placed>{{k1g, 3}, {k3g, 4}}));
  EXPECT_EQ(kept->unplaced, (std::vector<std::pair<uint32_t, int>>{{k4g, 1}}));
  const Result<NodePlan> moved = PlanNode(gpus, demand, PlanOptions{.move_busy = true});
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->geometries[0], (std::vector<Placed>{{k4g, 0}, {k3g, 4}}));
  ASSERT_EQ(moved->steps.size(), 4u);
  EXPECT_EQ(moved->steps[0].kind, Kind::kDrain);
  EXPECT_EQ(moved->steps[1].kind, Kind::kDestroy);
  EXPECT_EQ(moved->steps[0].ToString(H100()), "GPU 0: drain 1g.10gb at slot 3");
  EXPECT_EQ(moved->drained, 1);
}

TEST(MigPlannerTest, OnlyTheInstancesThatMustChangeAreTouched) {
  const std::vector<GpuState> gpus{Gpu({{{k3g, 0}, false}, {{k3g, 4}, false}})};
  const Result<NodePlan> plan = PlanNode(gpus, Demand{{{k3g, 1}, {k2g, 2}}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->geometries[0], (std::vector<Placed>{{k2g, 0}, {k2g, 2}, {k3g, 4}}));
  ASSERT_EQ(plan->steps.size(), 3u);  // the 3g at slot 4 stays
  EXPECT_EQ(plan->steps[0].ToString(H100()), "GPU 0: destroy 3g.40gb at slot 0");
  EXPECT_EQ(plan->steps[1].kind, Kind::kCreate);
  EXPECT_EQ(plan->steps[2].kind, Kind::kCreate);
}

TEST(MigPlannerTest, MoreSmallInstancesThanOneGpuHoldsSpreadAcrossGpus) {
  const std::vector<GpuState> gpus{Gpu(), Gpu(), GpuState{}};  // the third has no MIG
  const Result<NodePlan> plan = PlanNode(gpus, Demand{{{k1g, 9}, {k1g2m, 2}}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Count(plan->geometries[0], k1g) + Count(plan->geometries[1], k1g), 9);
  EXPECT_EQ(Count(plan->geometries[0], k1g2m) + Count(plan->geometries[1], k1g2m), 2);
  EXPECT_TRUE(plan->geometries[2].empty());
  EXPECT_TRUE(plan->unplaced.empty());
}

TEST(MigPlannerTest, BadInputIsRefusedWithTheReason) {
  const std::vector<GpuState> overlapping{Gpu({{{k3g, 0}, false}, {{k2g, 2}, false}})};
  const Result<NodePlan> bad = PlanNode(overlapping, Demand{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GPU 0's current MIG geometry has two instances share a memory slice"),
            std::string::npos)
      << bad.status().message();
  const std::vector<GpuState> one{Gpu()};
  EXPECT_FALSE(PlanNode(one, Demand{{{42, 1}}}).ok());
  EXPECT_FALSE(PlanNode(one, Demand{{{k1g, -1}}}).ok());
}

}  // namespace
}  // namespace fgpu::sched::mig
