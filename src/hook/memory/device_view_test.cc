#include "hook/memory/device_view.h"

#include <gtest/gtest.h>

#include <random>

#include "core/units.h"

namespace fgpu::hook {
namespace {

TEST(DeviceViewTest, SliceWithinAnIdleDevice) {
  const MemoryView view = VirtualMemoryView(4 * kGiB, 1 * kGiB, 80 * kGiB, 70 * kGiB);
  EXPECT_EQ(view.total, 4 * kGiB);
  EXPECT_EQ(view.used, 1 * kGiB);
  EXPECT_EQ(view.free, 3 * kGiB);
}

TEST(DeviceViewTest, FreeNeverExceedsWhatTheDeviceHasFree) {
  const MemoryView view = VirtualMemoryView(4 * kGiB, 1 * kGiB, 80 * kGiB, kGiB / 2);  // others filled it
  EXPECT_EQ(view.total, 4 * kGiB);
  EXPECT_EQ(view.free, kGiB / 2);
}

TEST(DeviceViewTest, OverUseIsZeroFreeNotAnError) {
  const MemoryView view =
      VirtualMemoryView(1 * kGiB, 3 * kGiB, 80 * kGiB, 70 * kGiB);  // cap shrunk below use
  EXPECT_EQ(view.total, 1 * kGiB);
  EXPECT_EQ(view.used, 3 * kGiB);
  EXPECT_EQ(view.free, 0u);
}

TEST(DeviceViewTest, CapAboveTheDeviceShowsTheDevice) {
  const MemoryView view = VirtualMemoryView(UINT64_MAX, 1 * kGiB, 80 * kGiB, 79 * kGiB);
  EXPECT_EQ(view.total, 80 * kGiB);
  EXPECT_EQ(view.free, 79 * kGiB);
}

TEST(DeviceViewTest, DeviceOutsideTheSliceIsEmpty) {
  const MemoryView view = VirtualMemoryView(0, 0, 80 * kGiB, 80 * kGiB);
  EXPECT_EQ(view.total, 0u);
  EXPECT_EQ(view.free, 0u);
}

TEST(DeviceViewTest, LegacySaturation) {
  EXPECT_EQ(SaturateToUint(5 * kGiB), UINT32_MAX);
  EXPECT_EQ(SaturateToUint(UINT32_MAX), UINT32_MAX);
  EXPECT_EQ(SaturateToUint(123), 123u);
}

// Draws values that hit the edges (0, 1, near 2^64) as often as the middle.
uint64_t Draw(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0:
      return rng() % 4;
    case 1:
      return UINT64_MAX - rng() % 4;
    case 2:
      return rng() % (100 * kGiB);
    default:
      return rng();
  }
}

TEST(DeviceViewTest, PropertiesOverRandomTriples) {
  std::mt19937_64 rng(20240607);
  for (int i = 0; i < 1'000'000; ++i) {
    const uint64_t cap = Draw(rng);
    const uint64_t used = Draw(rng);
    const uint64_t physical_total = Draw(rng);
    const uint64_t physical_free =
        Draw(rng) % (physical_total == UINT64_MAX ? UINT64_MAX : physical_total + 1);
    const MemoryView view = VirtualMemoryView(cap, used, physical_total, physical_free);
    ASSERT_LE(view.total, cap);
    ASSERT_LE(view.total, physical_total);
    ASSERT_TRUE(view.total == cap || view.total == physical_total);
    ASSERT_EQ(view.used, used);
    ASSERT_LE(view.free, view.total) << cap << " " << used << " " << physical_free;
    ASSERT_LE(view.free, physical_free);
    if (used <= view.total) {
      ASSERT_LE(view.free, view.total - used);  // free + used <= total, without overflow
      ASSERT_EQ(view.free, std::min(view.total - used, physical_free));
    } else {
      ASSERT_EQ(view.free, 0u);
    }
  }
}

}  // namespace
}  // namespace fgpu::hook
