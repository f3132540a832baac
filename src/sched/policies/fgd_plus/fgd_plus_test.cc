#include "sched/policies/fgd_plus/fgd_plus.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

TEST(StrandedGpuMilliTest, IsIdleGpuBeyondWhatFreeCpuFeeds) {
  EXPECT_DOUBLE_EQ(StrandedGpuMilli(8'000, 48'000, 12), 4'000);
  EXPECT_DOUBLE_EQ(StrandedGpuMilli(1'000, 48'000, 12), 0);
  EXPECT_DOUBLE_EQ(StrandedGpuMilli(0, 0, 12), 0);
  EXPECT_DOUBLE_EQ(StrandedGpuMilli(8'000, 0, 0), 0);  // no ratio: nothing is stranded
}

TEST(CpuPerGpuMilliTest, IsTheWeightedRatioOfTheGpuTasks) {
  const TargetWorkload workload({{.cpu_milli = 4'000, .gpu_milli = 500, .gpu_count = 1, .weight = 1},
                                 {.cpu_milli = 12'000, .gpu_milli = 1000, .gpu_count = 1, .weight = 1},
                                 {.cpu_milli = 64'000, .gpu_milli = 0, .gpu_count = 0, .weight = 5}});
  EXPECT_DOUBLE_EQ(CpuPerGpuMilli(workload), 16'000.0 / 1'500);
}

// T4: 2 nodes × 2 GPUs (4 GPUs); G2: 1 node × 8 GPUs.
Cluster TwoModels() {
  return testing::MakeCluster({{"T4", 2, 104'000}, {"T4", 2, 104'000}, {"G2", 8, 96'000}});
}

TEST(ModelScarcityTest, PressureComparesConstrainedDemandWithWhatTheModelHasLeft) {
  const Cluster cluster = TwoModels();
  ModelScarcity scarcity(100);
  scarcity.Attach(cluster);
  Request t4_only = testing::Gpus(1, 1000);
  t4_only.models = ModelSet{1} << 0;
  for (int copy = 0; copy < 5; ++copy) scarcity.Observe(t4_only);
  for (int copy = 0; copy < 5; ++copy) scarcity.Observe(testing::Gpus(1, 1000));
  // Half the demand needs T4, which holds a third of the free GPU: pressure 0.5 · 12/4 = 1.5.
  EXPECT_DOUBLE_EQ(scarcity.Pressure(0), 1.5);
  EXPECT_DOUBLE_EQ(scarcity.Pressure(1), 0);
  scarcity.Taken(1, 4'000);  // G2 half used: T4 is now 4 of 8 free GPUs
  EXPECT_DOUBLE_EQ(scarcity.Pressure(0), 1.0);
}

TEST(ModelScarcityTest, TheWindowForgetsOldArrivals) {
  const Cluster cluster = TwoModels();
  ModelScarcity scarcity(4);
  scarcity.Attach(cluster);
  Request t4_only = testing::Gpus(1, 1000);
  t4_only.models = ModelSet{1} << 0;
  scarcity.Observe(t4_only);
  for (int copy = 0; copy < 4; ++copy) scarcity.Observe(testing::Gpus(1, 1000));
  EXPECT_DOUBLE_EQ(scarcity.Pressure(0), 0);
}

TEST(FgdPlusPolicyTest, AnyModelRequestsPayForTakingAContestedModel) {
  const Cluster cluster = TwoModels();
  FgdPlusPolicy policy(TargetWorkload({{.cpu_milli = 4'000, .gpu_milli = 1000, .gpu_count = 1, .weight = 1}}),
                       {});
  policy.OnAttach(cluster);
  Request t4_only = testing::Gpus(1, 1000);
  t4_only.models = ModelSet{1} << 0;
  for (int copy = 0; copy < 5; ++copy) policy.Observe(t4_only);
  for (int copy = 0; copy < 5; ++copy) policy.Observe(testing::Gpus(1, 1000));
  // 1000 milli · min(1, 1.5) at the sigmoid's slope (25 points per 1000 milli).
  EXPECT_DOUBLE_EQ(policy.ModelBias(0, testing::Gpus(1, 1000)), -25);
  EXPECT_DOUBLE_EQ(policy.ModelBias(1, testing::Gpus(1, 1000)), 0);
  EXPECT_DOUBLE_EQ(policy.ModelBias(0, testing::CpuOnly(1'000)), 0);
}

TEST(FgdPlusPolicyTest, PrefersTheNodeWhereTheRequestStrandsNoGpu) {
  // ρ = 12 CPU per milli-GPU. n0 has 40 CPU for 8 idle GPUs (it feeds 3.3 of them); n1 has CPU
  // to spare. A CPU-heavy request (24 CPU, one GPU) leaves 16 CPU for 7 GPUs on n0: one more
  // GPU stranded (Δ = −1000: score 26), none on n1 (50). FGD alone sees no difference: the
  // typical task (12 CPU) still fits on both.
  Cluster cluster = testing::MakeCluster({{"G2", 8, 96'000}, {"G2", 8, 200'000}});
  testing::Use(cluster, 0, 0, 0, 56'000);
  FgdPlusPolicy policy(
      TargetWorkload({{.cpu_milli = 12'000, .gpu_milli = 1000, .gpu_count = 1, .weight = 1}}), {});
  policy.OnAttach(cluster);
  const Request heavy = testing::Gpus(1, 1000, 24'000);
  EXPECT_EQ(policy.Score(cluster.view(0), heavy).score, 26);
  EXPECT_EQ(policy.Score(cluster.view(1), heavy).score, 50);
  // With the stranding weight at 0 it is plain FGD: both nodes score alike.
  FgdPlusPolicy plain(TargetWorkload({{.cpu_milli = 12'000, .gpu_milli = 1000, .gpu_count = 1, .weight = 1}}),
                      {.scarcity_window = 0, .stranding_weight = 0});
  EXPECT_EQ(plain.Score(cluster.view(0), heavy).score, plain.Score(cluster.view(1), heavy).score);
}

}  // namespace
}  // namespace fgpu::sched
