#include "simulate/mig_pools.h"

#include <gtest/gtest.h>

#include <array>

#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

TEST(MigPoolsTest, ASharePicksTheSmallestProfileCoveringItsComputeAndMemory) {
  const fgpu::mig::ModelInfo& h100 = fgpu::mig::InfoOf(fgpu::mig::Model::kH100_80GB);
  EXPECT_EQ(ProfileForShare(h100, 0.1).name, "1g.10gb");   // 1/7 and 1/8
  EXPECT_EQ(ProfileForShare(h100, 0.14).name, "1g.20gb");  // 1/8 of memory is too little
  EXPECT_EQ(ProfileForShare(h100, 0.25).name, "2g.20gb");
  EXPECT_EQ(ProfileForShare(h100, 0.3).name, "3g.40gb");
  EXPECT_EQ(ProfileForShare(h100, 0.5).name, "4g.40gb");
  EXPECT_EQ(ProfileForShare(h100, 0.6).name, "7g.80gb");
  EXPECT_EQ(ProfileForShare(h100, 1.0).name, "7g.80gb");
}

TEST(MigPoolsTest, MigStrandsWhatSlicesGiveAndMixedSitsBetween) {
  std::array<PoolsResult, 3> results;
  for (const Pools pools : {Pools::kSlices, Pools::kMig, Pools::kMixed}) {
    Result<PoolsResult> run = ReplayPools(testing::SmallScenario(), PoolsSpec{.pools = pools, .seed = 42});
    ASSERT_TRUE(run.ok()) << run.status().message();
    results[static_cast<size_t>(pools)] = *run;
    EXPECT_EQ(run->placed + run->failed, run->arrivals);
    EXPECT_NEAR(run->requested + run->unallocated, 100, 1e-9);
    EXPECT_GE(run->stranded_compute, 0);
    EXPECT_GE(run->stranded_memory, 0);
  }
  const PoolsResult& slices = results[0];
  const PoolsResult& mig = results[1];
  const PoolsResult& mixed = results[2];
  EXPECT_EQ(slices.on_mig, 0);
  EXPECT_EQ(slices.stranded_compute, 0);
  EXPECT_GT(mig.on_mig, 0);
  EXPECT_GT(mig.stranded_compute, 0);  // the trace's shares are rarely a profile's exact size
  EXPECT_GT(mig.unallocated, slices.unallocated);
  EXPECT_GT(mixed.on_mig, 0);
  EXPECT_LT(mixed.on_mig, mixed.placed);
  EXPECT_EQ(slices.arrivals, mig.arrivals);  // the same arrivals, up to arrived 100 %
  // Deterministic.
  Result<PoolsResult> again = ReplayPools(testing::SmallScenario(), PoolsSpec{.pools = Pools::kMixed, .seed = 42});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->placed, mixed.placed);
  EXPECT_EQ(again->stranded_memory, mixed.stranded_memory);
}

TEST(MigPoolsTest, ABadShareOfMigNodesIsRefused) {
  EXPECT_FALSE(ReplayPools(testing::SmallScenario(), PoolsSpec{.pools = Pools::kMixed, .mig_fraction = 1.5}).ok());
}

}  // namespace
}  // namespace fgpu::simulate
