#include "sched/policies/random/random.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

TEST(RandomPolicyTest, EveryNodeScoresTheSameAndTiesAreRandom) {
  Cluster cluster = testing::MakeCluster({{"G2", 8}, {"T4", 2}});
  testing::Use(cluster, 0, 0, 700);
  RandomPolicy policy;
  const Request share = testing::Gpus(1, 200);
  EXPECT_EQ(policy.Score(cluster.view(0), share).score, policy.Score(cluster.view(1), share).score);
  EXPECT_TRUE(policy.random_ties());
  Rng rng(3);
  GpuSet chosen = 0;
  for (int draw = 0; draw < 300; ++draw) chosen |= policy.ChooseGpus(cluster.view(0), share, {}, rng);
  EXPECT_EQ(chosen, 0xFF);  // any of the 8 GPUs, including the used one with 300 left
  EXPECT_EQ(policy.ChooseGpus(cluster.view(0), testing::Gpus(2, 1000), {}, rng), GpuBit(1) | GpuBit(2));
}

}  // namespace
}  // namespace fgpu::sched
