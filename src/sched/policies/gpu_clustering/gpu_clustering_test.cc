#include "sched/policies/gpu_clustering/gpu_clustering.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

class GpuClusteringPolicyTest : public ::testing::Test {
 protected:
  void Place(NodeId node, const Request& request) {
    const NodeView view = cluster_.view(node);
    const Placement placement = MakePlacement(node, policy_.Score(view, request).gpus, request);
    ASSERT_TRUE(cluster_.Apply(placement).ok());
    policy_.OnPlaced(cluster_.view(node), placement);
  }
  double ScoreOn(NodeId node, const Request& request) {
    return policy_.Score(cluster_.view(node), request).score;
  }

  Cluster cluster_ = testing::MakeCluster({{"G2", 8}, {"G2", 8}, {"G2", 8}, {"G2", 8}});
  GpuClusteringPolicy policy_;
};

TEST_F(GpuClusteringPolicyTest, BandsFollowWhatTheNodeHosts) {
  const Request share = testing::Gpus(1, 500);
  Place(1, share);  // n1: shares only
  Place(2, share);  // n2: shares and whole GPUs
  Place(2, testing::Gpus(2, 1000));
  Place(3, testing::Gpus(1, 1000));  // n3: a whole GPU only
  // Used GPU adds 25·(8000 − idle)/8000, integer: 500 used → 1, 2500 → 7, 1000 → 3.
  EXPECT_EQ(ScoreOn(1, share), 76);  // only this class: (75, 100]
  EXPECT_EQ(ScoreOn(2, share), 57);  // this and others: (50, 75]
  EXPECT_EQ(ScoreOn(0, share), 25);  // empty: (25, 50]
  EXPECT_EQ(ScoreOn(3, share), 3);   // only others: (0, 25]
  EXPECT_EQ(ScoreOn(3, testing::Gpus(1, 1000)), 78);
  EXPECT_EQ(ScoreOn(1, testing::CpuOnly(1'000)), 0);
}

TEST_F(GpuClusteringPolicyTest, RemovingThePlacementForgetsItsClass) {
  const Request share = testing::Gpus(1, 500);
  Place(1, share);
  const Placement placement = MakePlacement(1, GpuBit(0), share);
  ASSERT_TRUE(cluster_.Remove(placement).ok());
  policy_.OnRemoved(cluster_.view(1), placement);
  EXPECT_EQ(ScoreOn(1, share), 25);
}

}  // namespace
}  // namespace fgpu::sched
