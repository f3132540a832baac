// The compute fields as text: every name parses back to its value, and anything else is
// refused with a message that names the choices and what was given.
#include "slice/compute_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace fgpu::slice {
namespace {

TEST(ComputeSpec, ModesRoundTrip) {
  for (ComputeMode mode : {ComputeMode::kCap, ComputeMode::kShare}) {
    Result<ComputeMode> parsed = ParseComputeMode(ToString(mode));
    ASSERT_TRUE(parsed.ok()) << ToString(mode);
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_STREQ(ToString(ComputeMode::kCap), "cap");
  EXPECT_STREQ(ToString(ComputeMode::kShare), "share");
  EXPECT_EQ(*ParseComputeMode("SHARE"), ComputeMode::kShare);
  EXPECT_STREQ(ToString(static_cast<ComputeMode>(7)), "unknown");
}

TEST(ComputeSpec, TiersRoundTrip) {
  for (Tier tier : {Tier::kBatch, Tier::kStandard, Tier::kLatency}) {
    Result<Tier> parsed = ParseTier(ToString(tier));
    ASSERT_TRUE(parsed.ok()) << ToString(tier);
    EXPECT_EQ(*parsed, tier);
  }
  EXPECT_STREQ(ToString(Tier::kBatch), "batch");
  EXPECT_STREQ(ToString(Tier::kStandard), "standard");
  EXPECT_STREQ(ToString(Tier::kLatency), "latency");
  EXPECT_EQ(*ParseTier("Latency"), Tier::kLatency);
  EXPECT_STREQ(ToString(static_cast<Tier>(9)), "unknown");
  // Higher number, higher priority.
  EXPECT_LT(static_cast<int>(Tier::kBatch), static_cast<int>(Tier::kStandard));
  EXPECT_LT(static_cast<int>(Tier::kStandard), static_cast<int>(Tier::kLatency));
}

TEST(ComputeSpec, BadTextIsRefusedNamingTheChoices) {
  for (const char* text : {"x", "", "caps", " cap", "0"}) {
    const Status status = ParseComputeMode(text).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(status.message(), "compute mode must be cap or share, got '" + std::string(text) + "'");
  }
  for (const char* text : {"gold", "", "standard ", "2"}) {
    const Status status = ParseTier(text).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(status.message(), "tier must be batch, standard or latency, got '" + std::string(text) + "'");
  }
}

TEST(ComputeSpec, TheDefaultsAreShareAndStandard) {
  const DeviceLimit limit;
  EXPECT_EQ(limit.compute_share, 100u);
  EXPECT_EQ(limit.compute_mode, ComputeMode::kShare);
  EXPECT_EQ(limit.tier, Tier::kStandard);
}

}  // namespace
}  // namespace fgpu::slice
