// The kernel timeline and utilization: serialization across processes, lazy accounting
// (the future is never counted), accuracy, per-process shares.
#include <time.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "sim/state/shared_devices.h"
#include "sim/state/test_support.h"

namespace fgpu::sim {
namespace {

using testing::Channel;
using testing::ForkChild;
using testing::ScopedSegment;
using testing::SmallConfig;
using testing::WaitChild;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSecond = 1'000'000'000;

void SleepUntil(uint64_t monotonic_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(monotonic_ns / kSecond);
  ts.tv_nsec = static_cast<long>(monotonic_ns % kSecond);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

std::unique_ptr<SharedDevices> AttachOrDie(const std::string& name) {
  auto devices = SharedDevices::Attach(SmallConfig(2), name);
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return devices.ok() ? std::move(devices).value() : nullptr;
}

TEST(SharedDevicesTimeline, KernelsSerializeAndRespectNotBefore) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  const uint64_t before = SharedDevices::NowNs();
  const KernelSlot a = d->EnqueueKernel(0, 0, 500 * kMs);  // long: b is queued behind it even on a slow machine
  EXPECT_GE(a.start_ns, before);
  EXPECT_EQ(a.end_ns, a.start_ns + 500 * kMs);
  const KernelSlot b = d->EnqueueKernel(0, 0, 1 * kMs);
  EXPECT_EQ(b.start_ns, a.end_ns);  // queued behind a
  const KernelSlot c = d->EnqueueKernel(0, b.end_ns + 50 * kMs, 1 * kMs);
  EXPECT_EQ(c.start_ns, b.end_ns + 50 * kMs);
  const KernelSlot other_device = d->EnqueueKernel(1, 0, 1 * kMs);
  EXPECT_LT(other_device.start_ns, a.end_ns);  // devices have separate timelines
}

TEST(SharedDevicesTimeline, DegenerateCallsAreHarmless) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  const KernelSlot zero = d->EnqueueKernel(0, 0, 0);
  EXPECT_EQ(zero.start_ns, zero.end_ns);
  const KernelSlot bad = d->EnqueueKernel(7, 0, kMs);
  EXPECT_EQ(bad.end_ns - bad.start_ns, kMs);
  const KernelSlot huge = d->EnqueueKernel(0, UINT64_MAX - 5, kSecond);
  EXPECT_EQ(huge.end_ns, UINT64_MAX);  // saturates instead of wrapping
  EXPECT_EQ(d->UtilizationPercent(0, 0), 0u);
  EXPECT_EQ(d->UtilizationPercent(-1, kSecond), 0u);
  EXPECT_TRUE(d->ProcessUtilizations(9, 0, kSecond).empty());
  EXPECT_TRUE(d->ProcessUtilizations(0, UINT64_MAX, kSecond).empty());
}

TEST(SharedDevicesTimeline, KernelsOfTwoProcessesNeverOverlap) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  constexpr int kKernels = 300;
  Channel ready, go, results;
  const pid_t child = ForkChild([&]() {
    ready.CloseRead();
    go.CloseWrite();
    results.CloseRead();
    auto mine = SharedDevices::Attach(SmallConfig(2), segment.name());
    if (!mine.ok()) return 1;
    ready.Send(1);
    int token = 0;
    go.Receive(&token);
    for (int i = 0; i < kKernels; ++i) results.Send((*mine)->EnqueueKernel(0, 0, (i % 5 + 1) * 20 * kUs));
    return 0;
  });
  ready.CloseWrite();
  go.CloseRead();
  results.CloseWrite();
  int token = 0;
  ASSERT_TRUE(ready.Receive(&token));
  go.Send(1);
  std::vector<KernelSlot> all;
  for (int i = 0; i < kKernels; ++i) all.push_back(d->EnqueueKernel(0, 0, (i % 3 + 1) * 30 * kUs));
  KernelSlot slot;
  while (results.Receive(&slot)) all.push_back(slot);
  EXPECT_EQ(WaitChild(child), 0);
  ASSERT_EQ(all.size(), 2u * kKernels);
  std::sort(all.begin(), all.end(), [](const KernelSlot& a, const KernelSlot& b) { return a.start_ns < b.start_ns; });
  for (size_t i = 1; i < all.size(); ++i) {
    ASSERT_GE(all[i].start_ns, all[i - 1].end_ns) << "kernel " << i << " overlaps its predecessor";
  }
}

TEST(SharedDevicesTimeline, HalfDutyPatternReadsFiftyPercent) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  // 10 ms busy every 20 ms for 1.5 s: every window of whole periods inside it is 50 % busy.
  const uint64_t t0 = SharedDevices::NowNs() + 20 * kMs;
  for (uint64_t k = 0; k < 75; ++k) {
    const KernelSlot s = d->EnqueueKernel(0, t0 + k * 20 * kMs, 10 * kMs);
    ASSERT_EQ(s.start_ns, t0 + k * 20 * kMs);
  }
  SleepUntil(t0 + 1200 * kMs);
  const uint32_t one_second = d->UtilizationPercent(0, kSecond);
  const uint32_t half_second = d->UtilizationPercent(0, 500 * kMs);
  EXPECT_GE(one_second, 49u);
  EXPECT_LE(one_second, 51u);
  EXPECT_GE(half_second, 49u);
  EXPECT_LE(half_second, 51u);
  std::vector<ProcessUtilization> processes = d->ProcessUtilizations(0, 0, kSecond);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].pid, ::getpid());
  EXPECT_GE(processes[0].sm_percent, 49u);
  EXPECT_LE(processes[0].sm_percent, 51u);
  EXPECT_EQ(d->UtilizationPercent(1, kSecond), 0u);  // the other device was idle
}

TEST(SharedDevicesTimeline, FutureBusyTimeIsNotCountedYet) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  const KernelSlot k = d->EnqueueKernel(0, 0, 800 * kMs);
  EXPECT_EQ(d->UtilizationPercent(0, kSecond), 0u);  // microseconds of it have elapsed
  SleepUntil(k.start_ns + 200 * kMs);
  EXPECT_EQ(d->UtilizationPercent(0, 100 * kMs), 100u);
  const uint32_t one_second = d->UtilizationPercent(0, kSecond);
  // 200 ms elapsed (more if this machine is slow); counting the future would say 80.
  EXPECT_GE(one_second, 20u);
  EXPECT_LE(one_second, 50u);
  std::vector<ProcessUtilization> processes = d->ProcessUtilizations(0, 0, kSecond);
  ASSERT_EQ(processes.size(), 1u);
  const uint64_t now = SharedDevices::NowNs();
  EXPECT_LE(processes[0].last_seen_ns, now);
  EXPECT_GE(processes[0].last_seen_ns, k.start_ns + 200 * kMs);
}

TEST(SharedDevicesTimeline, PerProcessSharesAddUp) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  // Every 20 ms: this process 6 ms, then the child 4 ms. Enqueued in lockstep so that the
  // timeline (one FIFO of reservations) receives them in time order.
  constexpr uint64_t kPeriods = 75;
  const uint64_t t0 = SharedDevices::NowNs() + 100 * kMs;  // room for the handshake on a loaded machine
  Channel to_child, to_parent;
  const pid_t child = ForkChild([&]() {
    to_child.CloseWrite();
    to_parent.CloseRead();
    auto mine = SharedDevices::Attach(SmallConfig(2), segment.name());
    if (!mine.ok()) return 1;
    to_parent.Send(uint64_t{0});
    uint64_t k = 0;
    while (to_child.Receive(&k) && k < kPeriods) {
      const KernelSlot s = (*mine)->EnqueueKernel(0, t0 + k * 20 * kMs + 10 * kMs, 4 * kMs);
      to_parent.Send(s.start_ns);
    }
    return 0;  // k == kPeriods: the parent is done measuring
  });
  to_child.CloseRead();
  to_parent.CloseWrite();
  uint64_t child_start = 0;
  ASSERT_TRUE(to_parent.Receive(&child_start));
  for (uint64_t k = 0; k < kPeriods; ++k) {
    ASSERT_EQ(d->EnqueueKernel(0, t0 + k * 20 * kMs, 6 * kMs).start_ns, t0 + k * 20 * kMs);
    to_child.Send(k);
    ASSERT_TRUE(to_parent.Receive(&child_start));
    ASSERT_EQ(child_start, t0 + k * 20 * kMs + 10 * kMs);
  }
  SleepUntil(t0 + 1200 * kMs);
  std::vector<ProcessUtilization> processes = d->ProcessUtilizations(0, 0, kSecond);
  const uint32_t device = d->UtilizationPercent(0, kSecond);
  to_child.Send(kPeriods);
  EXPECT_EQ(WaitChild(child), 0);

  ASSERT_EQ(processes.size(), 2u);
  std::sort(processes.begin(), processes.end(), [](auto& a, auto& b) { return a.sm_percent > b.sm_percent; });
  EXPECT_EQ(processes[0].pid, ::getpid());
  EXPECT_NEAR(processes[0].sm_percent, 30.0, 1.0);
  EXPECT_EQ(processes[1].pid, child);
  EXPECT_NEAR(processes[1].sm_percent, 20.0, 1.0);
  EXPECT_NEAR(device, 50.0, 1.0);
  // since_ns narrows the window: nothing ran after the pattern ended.
  EXPECT_TRUE(d->ProcessUtilizations(0, t0 + 1500 * kMs, kSecond).empty());
}

TEST(SharedDevicesTimeline, AReusedSlotDoesNotInheritBusyTime) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  const pid_t busy_child = ForkChild([&]() {
    auto mine = SharedDevices::Attach(SmallConfig(2), segment.name());
    if (!mine.ok()) return 1;
    const KernelSlot k = (*mine)->EnqueueKernel(0, 0, 60 * kMs);
    SleepUntil(k.end_ns + kMs);
    return (*mine)->ProcessUtilizations(0, 0, kSecond).size() == 1 ? 0 : 2;
  });
  ASSERT_EQ(WaitChild(busy_child), 0);
  EXPECT_EQ(d->ReapDeadProcesses(), 1);
  Channel ready, release;
  const pid_t idle_child = ForkChild([&]() {
    ready.CloseRead();
    release.CloseWrite();
    auto mine = SharedDevices::Attach(SmallConfig(2), segment.name());
    ready.Send(mine.ok() ? 1 : 0);
    char byte = 0;
    (void)release.Receive(&byte);
    return 0;
  });
  ready.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(ready.Receive(&ok));
  ASSERT_EQ(ok, 1);
  EXPECT_TRUE(d->ProcessUtilizations(0, 0, kSecond).empty());  // idle child: no share
  EXPECT_GE(d->UtilizationPercent(0, kSecond), 5u);             // but the device was busy
  release.CloseWrite();
  EXPECT_EQ(WaitChild(idle_child), 0);
}

TEST(SharedDevicesTimeline, OverflowingThePendingQueueStaysSane) {
  ScopedSegment segment;
  auto d = AttachOrDie(segment.name());
  // 1500 separate 2 us kernels 10 us apart, all in the future: more distinct intervals
  // than the pending queue holds.
  const uint64_t t0 = SharedDevices::NowNs() + 50 * kMs;
  uint64_t last_end = 0;
  for (uint64_t k = 0; k < 1500; ++k) {
    const KernelSlot s = d->EnqueueKernel(0, t0 + k * 10 * kUs, 2 * kUs);
    ASSERT_GE(s.start_ns, last_end);
    last_end = s.end_ns;
  }
  EXPECT_LE(d->UtilizationPercent(0, 10 * kMs), 100u);
  SleepUntil(last_end + 100 * kMs);
  // 3 ms of busy time in the last 200 ms: 1.5 %.
  const uint32_t percent = d->UtilizationPercent(0, 200 * kMs);
  EXPECT_GE(percent, 1u);
  EXPECT_LE(percent, 2u);
}

}  // namespace
}  // namespace fgpu::sim
