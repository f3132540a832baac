#include "sched/policies/best_fit/best_fit.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

TEST(BestFitPolicyTest, ScoresLeftoverCpuAndGpuAgainstTheLargestShape) {
  Cluster cluster = testing::MakeCluster({{"G2", 8, 96'000}, {"T4", 2, 104'000}});
  testing::Use(cluster, 0, 0, 500);
  BestFitPolicy policy;
  const Request request = testing::Gpus(1, 500, 4'000);
  // G2: 1 − (0.5·92000/128000 + 0.5·7000/8000) = 0.203 → 20; the share fits GPU 0 exactly.
  const NodeScore g2 = policy.Score(cluster.view(0), request);
  EXPECT_EQ(g2.score, 20);
  EXPECT_EQ(g2.gpus, GpuBit(0));
  // T4: 1 − (0.5·100000/128000 + 0.5·1500/8000) = 0.516 → 51: less left over, better.
  EXPECT_EQ(policy.Score(cluster.view(1), request).score, 51);
}

}  // namespace
}  // namespace fgpu::sched
