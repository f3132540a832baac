#include "sched/gpu_pick.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

using testing::Gpus;

TEST(BestFitGpusTest, ShareGoesToTheTightestGpuItFits) {
  Cluster cluster = testing::MakeCluster({{"G2", 4}});
  testing::Use(cluster, 0, 1, 300);                                  // 700 free
  testing::Use(cluster, 0, 2, 500);                                  // 500 free
  testing::Use(cluster, 0, 3, 500);                                  // 500 free
  EXPECT_EQ(BestFitGpus(cluster.view(0), Gpus(1, 450)), GpuBit(2));  // first of the tightest
  EXPECT_EQ(BestFitGpus(cluster.view(0), Gpus(1, 600)), GpuBit(1));
  EXPECT_EQ(BestFitGpus(cluster.view(0), Gpus(1, 1000)), GpuBit(0));
  EXPECT_EQ(BestFitGpus(cluster.view(0), Gpus(2, 1000)), 0);  // only one whole GPU
  EXPECT_EQ(BestFitGpus(cluster.view(0), testing::CpuOnly(10)), 0);
}

TEST(BestFitGpusTest, WholeGpusAreTheLowestIndexedFreeOnes) {
  Cluster cluster = testing::MakeCluster({{"G2", 8}});
  testing::Use(cluster, 0, 1, 100);
  EXPECT_EQ(BestFitGpus(cluster.view(0), Gpus(3, 1000)), GpuBit(0) | GpuBit(2) | GpuBit(3));
}

TEST(RandomFitGpusTest, PicksOnlyFittingGpusAndAllOfThem) {
  Cluster cluster = testing::MakeCluster({{"G2", 4}});
  testing::Use(cluster, 0, 2, 900);
  Rng rng(7);
  GpuSet seen = 0;
  for (int draw = 0; draw < 200; ++draw) seen |= RandomFitGpus(cluster.view(0), Gpus(1, 200), rng);
  EXPECT_EQ(seen, GpuBit(0) | GpuBit(1) | GpuBit(3));
}

}  // namespace
}  // namespace fgpu::sched
