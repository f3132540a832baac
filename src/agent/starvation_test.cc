// The starvation rule: waiting in the gate yet getting less than a part of the share, per window.
#include "agent/starvation.h"

#include <gtest/gtest.h>

namespace fgpu::agent {
namespace {

constexpr int64_t kWindowMs = 10'000;
constexpr uint64_t kNsPerMs = 1'000'000;

SliceRecord ShareSlice(const std::string& id, uint32_t share, slice::ComputeMode mode = slice::ComputeMode::kShare) {
  SliceRecord slice;
  slice.id = id;
  slice.compute_share = share;
  slice.compute_mode = mode;
  return slice;
}

// Counters after `ms` of a workload that got `busy` of the GPU and waited `waited` of the time.
ComputeSample After(double ms, double busy, double waited) {
  return {static_cast<uint64_t>(ms * busy) * kNsPerMs, static_cast<uint64_t>(ms * waited) * kNsPerMs};
}

TEST(StarvationWatch, ASliceThatWaitsAndGetsTooLittleIsStarvedOncePerWindow) {
  StarvationWatch watch(0.5, kWindowMs);
  const SliceRecord slice = ShareSlice("s1", 60);
  EXPECT_FALSE(watch.Observe(slice, {}, 0).starved);  // the first reading opens a window
  EXPECT_FALSE(watch.Observe(slice, After(5'000, 0.1, 0.9), 5'000).decided);
  const StarvationVerdict verdict = watch.Observe(slice, After(10'000, 0.1, 0.9), 10'000);
  EXPECT_TRUE(verdict.decided);
  EXPECT_TRUE(verdict.starved);
  EXPECT_NEAR(verdict.achieved, 0.1, 1e-9);
  // The verdict holds (not decided again) until the next window closes.
  const StarvationVerdict held = watch.Observe(slice, After(15'000, 0.1, 0.9), 15'000);
  EXPECT_TRUE(held.starved);
  EXPECT_FALSE(held.decided);
}

TEST(StarvationWatch, EnoughOfTheShareOrNoWaitingIsNotStarvation) {
  StarvationWatch watch(0.5, kWindowMs);
  const SliceRecord fed = ShareSlice("fed", 60);           // waits, but gets 40 % of 60 % (above half)
  const SliceRecord host_bound = ShareSlice("host", 60);   // gets 5 % but never waits for the GPU
  const SliceRecord capped = ShareSlice("cap", 60, slice::ComputeMode::kCap);  // held back on purpose
  for (const SliceRecord* slice : {&fed, &host_bound, &capped}) watch.Observe(*slice, {}, 0);
  EXPECT_FALSE(watch.Observe(fed, After(10'000, 0.4, 0.9), 10'000).starved);
  EXPECT_FALSE(watch.Observe(host_bound, After(10'000, 0.05, 0.1), 10'000).starved);
  EXPECT_FALSE(watch.Observe(capped, After(10'000, 0.05, 0.9), 10'000).starved);
}

TEST(StarvationWatch, ARecoveredSliceIsNoLongerStarvedAndAResetCounterCountsFromZero) {
  StarvationWatch watch(0.5, kWindowMs);
  const SliceRecord slice = ShareSlice("s1", 50);
  watch.Observe(slice, {}, 0);
  ASSERT_TRUE(watch.Observe(slice, After(10'000, 0.0, 1.0), 10'000).starved);
  // The next window: 40 % of the GPU (above half of 50 %).
  const ComputeSample later{After(10'000, 0.0, 1.0).busy_ns + 4'000 * kNsPerMs, After(20'000, 0.0, 1.0).throttled_ns};
  EXPECT_FALSE(watch.Observe(slice, later, 20'000).starved);
  // The board was re-created: counters below the last reading are all new.
  EXPECT_TRUE(watch.Observe(slice, After(10'000, 0.1, 0.5), 30'000).starved);
}

TEST(StarvationWatch, GoneSlicesAreForgotten) {
  StarvationWatch watch(0.5, kWindowMs);
  const SliceRecord slice = ShareSlice("s1", 50);
  watch.Observe(slice, {}, 0);
  watch.Retain({});
  // A new window opens: no verdict from the forgotten one.
  EXPECT_FALSE(watch.Observe(slice, After(10'000, 0.0, 1.0), 10'000).decided);
}

}  // namespace
}  // namespace fgpu::agent
