#include "sched/governance/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fgpu::sched {
namespace {

constexpr double kHour = 3600;

TEST(FairShareTest, UsageIsTheDecayedIntegralOfTheDominantShare) {
  FairShare fair({.gpu_memory_bytes = 100, .gpu_milli = 1000}, /*half_life_seconds=*/kHour);
  fair.Advance(0);
  fair.Allocate("a", {.gpu_memory_bytes = 50, .gpu_milli = 100});  // dominant: memory, 1/2
  fair.Advance(kHour);
  // ∫0..H 0.5·2^(−(H−s)/H) ds = 0.5·H/ln2·(1 − 1/2)
  EXPECT_NEAR(fair.Usage("a"), 0.5 * kHour / std::log(2.0) * 0.5, 1e-6);
  const double at_one_hour = fair.Usage("a");
  fair.Allocate("a", {.gpu_memory_bytes = -50, .gpu_milli = -100});
  fair.Advance(2 * kHour);
  EXPECT_NEAR(fair.Usage("a"), at_one_hour / 2, 1e-6);  // idle for a half-life: half
  fair.Advance(kHour);                                   // the clock never goes back
  EXPECT_NEAR(fair.Usage("a"), at_one_hour / 2, 1e-6);
}

TEST(FairShareTest, TheTenantThatUsedLessThanItsShareGoesFirst) {
  FairShare fair({.gpu_memory_bytes = 0, .gpu_milli = 1000}, kHour);
  fair.SetShare("big", 3);
  fair.SetShare("small", 1);
  fair.Advance(0);
  fair.Allocate("big", {0, 600});
  fair.Allocate("small", {0, 400});
  fair.Advance(10 * kHour);
  // big used 60 % against a 75 % share, small 40 % against 25 %.
  EXPECT_GT(fair.Factor("big"), fair.Factor("small"));
  EXPECT_NEAR(fair.Factor("big"), std::exp2(-0.6 / 0.75), 1e-9);
  EXPECT_NEAR(fair.Factor("small"), std::exp2(-0.4 / 0.25), 1e-9);
  EXPECT_EQ(fair.Factor("newcomer"), 1.0);
}

}  // namespace
}  // namespace fgpu::sched
