#include "sched/policies/gpu_packing/gpu_packing.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

class GpuPackingPolicyTest : public ::testing::Test {
 protected:
  double ScoreOn(NodeId node, const Request& request) {
    return policy_.Score(cluster_.view(node), request).score;
  }

  // n0: idle 8 GPUs; n1: idle 2 GPUs; n2: GPU 0 has 400 left; n3: GPU 0 has 100 left.
  Cluster cluster_ = testing::MakeCluster({{"G2", 8}, {"T4", 2}, {"G2", 8}, {"G2", 8}});
  GpuPackingPolicy policy_;

  void SetUp() override {
    testing::Use(cluster_, 2, 0, 600);
    testing::Use(cluster_, 3, 0, 900);
  }
};

TEST_F(GpuPackingPolicyTest, SharedGpusScoreHighestByTheirFreeShare) {
  EXPECT_EQ(ScoreOn(2, testing::Gpus(1, 300)), 96);  // 100 − 40%/10
}

TEST_F(GpuPackingPolicyTest, FreeGpusOnAUsedNodeScoreInTheMiddleBand) {
  EXPECT_EQ(ScoreOn(3, testing::Gpus(1, 300)), 49);   // needs one fully free GPU
  EXPECT_EQ(ScoreOn(3, testing::Gpus(3, 1000)), 47);  // needs three
}

TEST_F(GpuPackingPolicyTest, IdleNodesScoreLowest) {
  EXPECT_EQ(ScoreOn(0, testing::Gpus(1, 300)), 25);  // max(33 − 8, 8)
  EXPECT_EQ(ScoreOn(1, testing::Gpus(1, 300)), 31);  // max(33 − 2, 2)
}

TEST_F(GpuPackingPolicyTest, RequestsWithoutGpusScoreZeroEverywhere) {
  EXPECT_EQ(ScoreOn(2, testing::CpuOnly(1'000)), 0);
  EXPECT_EQ(ScoreOn(0, testing::CpuOnly(1'000)), 0);
}

}  // namespace
}  // namespace fgpu::sched
