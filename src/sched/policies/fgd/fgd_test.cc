#include "sched/policies/fgd/fgd.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

// A 500-milli share and a whole GPU, equally likely.
TargetWorkload ShareAndWhole() {
  return TargetWorkload({{.cpu_milli = 1'000, .gpu_milli = 500, .gpu_count = 1, .weight = 1},
                         {.cpu_milli = 1'000, .gpu_milli = 1000, .gpu_count = 1, .weight = 1}});
}

class FgdPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::Use(cluster_, 0, 1, 500); }  // GPUs free: 1000, 500
  Cluster cluster_ = testing::MakeCluster({{"T4", 2}});
};

TEST_F(FgdPolicyTest, ExactScoreIsTheFragmentationItAvoids) {
  FgdPolicy policy(ShareAndWhole(), FgdPolicy::Scoring::kExact);
  // Now F = 0.5·500 (the 500 GPU is too small for a whole GPU). The share on GPU 1 closes it
  // (F' = 0, Δ = +250); on GPU 0 it would leave two 500s (F' = 0.5·1000, Δ = −250).
  const NodeScore share = policy.Score(cluster_.view(0), testing::Gpus(1, 500));
  EXPECT_DOUBLE_EQ(share.score, 250);
  EXPECT_EQ(share.gpus, GpuBit(1));
  // A whole GPU takes GPU 0, leaving 500 that no whole GPU fits: F' = 0.5·500, Δ = 0.
  const NodeScore whole = policy.Score(cluster_.view(0), testing::Gpus(1, 1000));
  EXPECT_DOUBLE_EQ(whole.score, 0);
  EXPECT_EQ(whole.gpus, GpuBit(0));
}

TEST_F(FgdPolicyTest, AuthorsScoreIsTheTruncatedSigmoid) {
  FgdPolicy policy(ShareAndWhole(), FgdPolicy::Scoring::kAuthorsInteger);
  EXPECT_EQ(policy.Score(cluster_.view(0), testing::Gpus(1, 500)).score, 56);  // 100·σ(0.25) = 56.2
  EXPECT_EQ(policy.Score(cluster_.view(0), testing::Gpus(1, 1000)).score, 50);
  EXPECT_EQ(policy.name(), "FGD");
}

TEST_F(FgdPolicyTest, CpuOnlyRequestsScoreByTheTasksTheyStarveOfCpu) {
  FgdPolicy policy(ShareAndWhole(), FgdPolicy::Scoring::kExact);
  // Leaving 500 CPU starves both tasks (1000 CPU each): all 1500 idle becomes fragment.
  const double starving = policy.Score(cluster_.view(0), testing::CpuOnly(96'000 - 500)).score;
  EXPECT_DOUBLE_EQ(starving, 250 - 1500);
  EXPECT_DOUBLE_EQ(policy.Score(cluster_.view(0), testing::CpuOnly(1'000)).score, 0);
}

}  // namespace
}  // namespace fgpu::sched
