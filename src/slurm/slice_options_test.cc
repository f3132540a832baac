#include "slurm/slice_options.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace fgpu::slurm {
namespace {

TEST(SliceOptions, MemoryTakesSizesAsPeopleWriteThem) {
  SliceOptions options;
  ASSERT_TRUE(SetMemory("30GiB", options).ok());
  EXPECT_EQ(*options.memory_bytes, 30 * kGiB);
  ASSERT_TRUE(SetMemory("512MiB", options).ok());
  EXPECT_EQ(*options.memory_bytes, 512ull << 20);
  ASSERT_TRUE(SetMemory("1.5GiB", options).ok());
  EXPECT_EQ(*options.memory_bytes, 3 * kGiB / 2);
  ASSERT_TRUE(SetMemory("1048576", options).ok());
  EXPECT_EQ(*options.memory_bytes, 1048576u);
  EXPECT_TRUE(options.Requested());
}

TEST(SliceOptions, BadMemoryIsRefusedNamingTheOptionAndKeepsTheOldValue) {
  SliceOptions options;
  ASSERT_TRUE(SetMemory("2GiB", options).ok());
  for (const char* bad : {"", "0", "0GiB", "lots", "-1GiB", "30 parsecs", "1e9", "GiB"}) {
    const Status status = SetMemory(bad, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("--gpu-memory='" + std::string(bad) + "'"), std::string::npos) << status.message();
    EXPECT_EQ(*options.memory_bytes, 2 * kGiB);
  }
  EXPECT_FALSE(SetMemory(nullptr, options).ok());
}

TEST(SliceOptions, ComputeIsAWholePercentFromOneToHundred) {
  SliceOptions options;
  ASSERT_TRUE(SetCompute("30", options).ok());
  EXPECT_EQ(*options.compute_percent, 30u);
  ASSERT_TRUE(SetCompute("100%", options).ok());
  EXPECT_EQ(*options.compute_percent, 100u);
  ASSERT_TRUE(SetCompute("1", options).ok());
  for (const char* bad : {"", "0", "101", "-5", "12.5", "50%%", "half", "%", " 30"}) {
    const Status status = SetCompute(bad, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("--gpu-compute"), std::string::npos);
  }
  EXPECT_EQ(*options.compute_percent, 1u);
}

TEST(SliceOptions, TierIsOneOfThree) {
  SliceOptions options;
  for (const char* tier : {"batch", "standard", "latency"}) {
    ASSERT_TRUE(SetTier(tier, options).ok());
    EXPECT_EQ(*options.tier, tier);
  }
  for (const char* bad : {"", "gold", "Batch", "latency "}) {
    const Status status = SetTier(bad, options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("expected batch, standard or latency"), std::string::npos);
  }
}

TEST(SliceOptions, ComputeOrTierWithoutMemoryIsIncomplete) {
  SliceOptions none;
  EXPECT_FALSE(none.Requested());
  EXPECT_TRUE(Complete(none).ok());
  SliceOptions compute_only;
  ASSERT_TRUE(SetCompute("20", compute_only).ok());
  EXPECT_TRUE(compute_only.Requested());
  EXPECT_NE(Complete(compute_only).message().find("--gpu-compute needs --gpu-memory"), std::string::npos);
  SliceOptions tier_only;
  ASSERT_TRUE(SetTier("batch", tier_only).ok());
  EXPECT_NE(Complete(tier_only).message().find("--gpu-tier needs --gpu-memory"), std::string::npos);
  ASSERT_TRUE(SetMemory("1GiB", tier_only).ok());
  EXPECT_TRUE(Complete(tier_only).ok());
}

}  // namespace
}  // namespace fgpu::slurm
