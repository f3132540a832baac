// The arbitration rules one at a time, on made-up rows (policy.h): guarantees before tiers,
// tiers before turns, lending idle gaps, and strict priority.
#include "compute/policy.h"
#include "compute/test_units.h"

#include <gtest/gtest.h>

#include <vector>

namespace fgpu::compute {
namespace {

constexpr int64_t kNow = 1000 * kMs;

// A live row that asked to launch just now and is neither owed nor over its rate.
RowView Busy(uint32_t share, Tier tier) {
  RowView row;
  row.live = true;
  row.share = share;
  row.tier = tier;
  row.demand_ns = kNow;
  row.activity_ns = kNow;
  row.inflight_until_ns = kNow + kMs;
  row.tat_ns = kNow + kMs;  // slightly ahead of its share
  return row;
}
RowView Owed(RowView row) {
  row.tat_ns = kNow - 5 * kMs;  // 5 ms of its share not received
  return row;
}
RowView IdleFor(RowView row, int64_t gap_ns) {
  row.demand_ns = row.activity_ns = row.inflight_until_ns = kNow - gap_ns;
  return row;
}

// Row 0 owns the GPU; row 1 asks.
TakeReason Ask(const RowView& owner, const RowView& waiter, const Policy& policy = {}) {
  const std::vector<RowView> rows = {owner, waiter};
  return ShouldTake(rows, 0, 1, kNow, policy);
}

TEST(PolicyTest, AHigherTierTakesTheGpuFromAnOwnerThatIsNotOwed) {
  EXPECT_EQ(Ask(Busy(50, Tier::kBatch), Busy(50, Tier::kLatency)), TakeReason::kHigherTier);
}

TEST(PolicyTest, AHigherTierWaitsWhileTheOwnerCatchesUpOnItsShare) {
  EXPECT_EQ(Ask(Owed(Busy(50, Tier::kBatch)), Busy(50, Tier::kLatency)), TakeReason::kNo);
}

TEST(PolicyTest, AnOwedLowerTierTakesTheGpuFromAHigherTierThatHadItsShare) {
  EXPECT_EQ(Ask(Busy(20, Tier::kLatency), Owed(Busy(26, Tier::kBatch))), TakeReason::kOwed);
}

TEST(PolicyTest, ALowerTierThatHadItsShareWaitsForABusyHigherTier) {
  EXPECT_EQ(Ask(Busy(20, Tier::kLatency), Busy(26, Tier::kBatch)), TakeReason::kNo);
}

TEST(PolicyTest, ALowerTierUsesAHigherTiersGapAfterTheLendingDelay) {
  const Policy policy;
  const RowView waiter = Busy(50, Tier::kBatch);
  EXPECT_EQ(Ask(IdleFor(Busy(50, Tier::kLatency), policy.lend_idle_ns / 2), waiter), TakeReason::kNo);
  EXPECT_EQ(Ask(IdleFor(Busy(50, Tier::kLatency), 2 * policy.lend_idle_ns), waiter), TakeReason::kOwnerIdle);
}

TEST(PolicyTest, AnOwedOwnerLendsAWaiterWithLongKernelsOnlyAGapAsLong) {
  const Policy policy;
  RowView waiter = Busy(26, Tier::kBatch);
  waiter.launch_estimate_ns = 10 * kMs;
  const RowView owner = Owed(Busy(30, Tier::kStandard));
  EXPECT_EQ(Ask(IdleFor(owner, 3 * kMs), waiter), TakeReason::kNo);
  EXPECT_EQ(Ask(IdleFor(owner, 11 * kMs), waiter), TakeReason::kOwnerIdle);
  // The same waiter owed itself: the gap is its at once.
  EXPECT_EQ(Ask(IdleFor(owner, 3 * kMs), Owed(waiter)), TakeReason::kOwnerIdle);
}

TEST(PolicyTest, WithinATierTurnsFollowVirtualTime) {
  RowView owner = Busy(70, Tier::kStandard);
  RowView waiter = Busy(30, Tier::kStandard);
  owner.vtime = 100 * kMs;
  waiter.vtime = 100 * kMs;
  EXPECT_EQ(Ask(owner, waiter), TakeReason::kNo);
  owner.vtime = 106 * kMs;  // leads by more than the 5 ms slack
  EXPECT_EQ(Ask(owner, waiter), TakeReason::kTurnOver);
  // Owed or not makes no difference within a tier.
  EXPECT_EQ(Ask(Owed(owner), waiter), TakeReason::kTurnOver);
}

TEST(PolicyTest, AShareOfAHundredIsNeverOwed) {
  RowView row = Busy(100, Tier::kStandard);
  row.tat_ns = 0;
  EXPECT_FALSE(Owed(row, kNow, true, Policy{}));
  row.share = 99;
  EXPECT_TRUE(Owed(row, kNow, true, Policy{}));
}

TEST(PolicyTest, OnAFreeGpuAnOwedSliceGoesBeforeAHigherTier) {
  const std::vector<RowView> rows = {Busy(20, Tier::kLatency), Owed(Busy(26, Tier::kBatch))};
  EXPECT_EQ(ShouldTake(rows, -1, 0, kNow, Policy{}), TakeReason::kNo);
  EXPECT_EQ(ShouldTake(rows, -1, 1, kNow, Policy{}), TakeReason::kNobodyOwns);
}

TEST(PolicyTest, StrictPriorityPutsTheTierBeforeTheGuarantee) {
  const Policy strict{.strict_priority = true};
  EXPECT_EQ(Ask(Owed(Busy(50, Tier::kBatch)), Busy(50, Tier::kLatency), strict), TakeReason::kHigherTier);
  EXPECT_EQ(Ask(Busy(20, Tier::kLatency), Owed(Busy(26, Tier::kBatch)), strict), TakeReason::kNo);
  // A latency owner holds the GPU between its requests for its hold, not the lending delay.
  EXPECT_EQ(Ask(IdleFor(Busy(50, Tier::kLatency), 5 * kMs), Busy(50, Tier::kBatch), strict), TakeReason::kNo);
  EXPECT_EQ(Ask(IdleFor(Busy(50, Tier::kLatency), 25 * kMs), Busy(50, Tier::kBatch), strict),
            TakeReason::kOwnerIdle);
}

TEST(PolicyTest, ACapSliceOverItsRateNeitherTakesNorKeepsTheGpu) {
  RowView capped = Busy(30, Tier::kLatency);
  capped.mode = Mode::kCap;
  capped.tat_ns = kNow + 10 * kMs;  // far ahead of its rate
  EXPECT_EQ(Ask(Busy(50, Tier::kBatch), capped), TakeReason::kNo);
  EXPECT_EQ(Ask(capped, Busy(50, Tier::kBatch)), TakeReason::kOwnerCapped);
}

}  // namespace
}  // namespace fgpu::compute
