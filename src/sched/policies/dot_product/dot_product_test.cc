#include "sched/policies/dot_product/dot_product.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

TEST(DotProductPolicyTest, ScoresOneMinusHalfTheNormalisedDotProduct) {
  Cluster cluster = testing::MakeCluster({{"V100M32", 4, 64'000}, {"G2", 8, 128'000}});
  DotProductPolicy policy;
  const Request request = testing::Gpus(2, 1000, 32'000);
  // free (0.5, 0.5) · request (0.25, 0.25) = 0.25 → 100·(1 − 0.125) = 87.
  const NodeScore small = policy.Score(cluster.view(0), request);
  EXPECT_EQ(small.score, 87);
  EXPECT_EQ(small.gpus, GpuBit(0) | GpuBit(1));
  // free (1, 1) · (0.25, 0.25) = 0.5 → 75: the emptier node scores lower (a looser fit).
  EXPECT_EQ(policy.Score(cluster.view(1), request).score, 75);
}

}  // namespace
}  // namespace fgpu::sched
