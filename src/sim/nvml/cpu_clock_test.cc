#include "sim/nvml/cpu_clock.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace fgpu::sim::nvml {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr int64_t kOffset = 1'700'000'000'000'000'000;  // a realistic REALTIME - MONOTONIC

TEST(CpuClockTest, ConvertsAndRoundsUpToMicroseconds) {
  EXPECT_EQ(MonotonicNsToCpuMicros(5'000, kOffset), 1'700'000'000'000'005u);
  EXPECT_EQ(MonotonicNsToCpuMicros(5'001, kOffset), 1'700'000'000'000'006u);
  EXPECT_EQ(MonotonicNsToCpuMicros(5'999, kOffset), 1'700'000'000'000'006u);
  EXPECT_EQ(CpuMicrosToMonotonicNs(1'700'000'000'000'006u, kOffset), 6'000u);
}

TEST(CpuClockTest, ATimestampHandedBackExcludesItsOwnInstant) {
  for (uint64_t ns : {0ull, 1ull, 999ull, 1'000ull, 123'456'789ull}) {
    const uint64_t us = MonotonicNsToCpuMicros(ns, kOffset);
    const uint64_t back = CpuMicrosToMonotonicNs(us, kOffset);
    EXPECT_GE(back, ns);
    EXPECT_LT(back - ns, 1'000u);
  }
}

TEST(CpuClockTest, Saturates) {
  EXPECT_EQ(CpuMicrosToMonotonicNs(0, kOffset), 0u) << "before the monotonic epoch";
  EXPECT_EQ(CpuMicrosToMonotonicNs(kMaxU64, kOffset), kMaxU64);
  EXPECT_EQ(CpuMicrosToMonotonicNs(kMaxU64 / 1000, -1), kMaxU64 / 1000 * 1000 + 1);
  EXPECT_EQ(CpuMicrosToMonotonicNs(10, std::numeric_limits<int64_t>::min()), 10'000 + (uint64_t{1} << 63));
  EXPECT_EQ(MonotonicNsToCpuMicros(kMaxU64, kOffset), kMaxU64 / 1000 + 1);
  EXPECT_EQ(MonotonicNsToCpuMicros(10, -1'000'000), 0u);
  EXPECT_EQ(MonotonicNsToCpuMicros(10, std::numeric_limits<int64_t>::min()), 0u);
}

}  // namespace
}  // namespace fgpu::sim::nvml
