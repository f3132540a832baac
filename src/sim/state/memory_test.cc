// Memory charges across processes: sharing, out-of-memory, reaping the dead (killed,
// zombie, pid reused, corrupt), and a lock owner that dies.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/units.h"
#include "sim/state/process_identity.h"
#include "sim/state/segment_layout.h"
#include "sim/state/shared_devices.h"
#include "sim/state/test_support.h"

namespace fgpu::sim {
namespace {

using testing::Channel;
using testing::ForkChild;
using testing::ScopedSegment;
using testing::SmallConfig;
using testing::WaitChild;

std::unique_ptr<SharedDevices> AttachOrDie(const SimConfig& config, const std::string& name) {
  auto devices = SharedDevices::Attach(config, name);
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return devices.ok() ? std::move(devices).value() : nullptr;
}

// Forks a child that attaches (after the fork), charges `bytes` on device 0, reports
// its result and then waits until the parent closes `release`.
pid_t SpawnCharger(const std::string& name, uint64_t bytes, Channel& report, Channel& release) {
  return ForkChild([&]() {
    report.CloseRead();
    release.CloseWrite();
    auto devices = SharedDevices::Attach(SmallConfig(), name);
    const int ok = devices.ok() && (*devices)->TryCharge(0, bytes) ? 1 : 0;
    report.Send(ok);
    char byte = 0;
    (void)release.Receive(&byte);  // returns when the parent closes the pipe
    return ok ? 0 : 1;
  });
}

TEST(SharedDevicesMemory, OutOfMemoryAtTheConfiguredSizeChangesNothing) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(1, 64 * kMiB), segment.name());
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->TryCharge(0, 60 * kMiB));
  EXPECT_FALSE(d->TryCharge(0, 5 * kMiB));
  EXPECT_EQ(d->ChargedByThisProcess(0), 60 * kMiB);
  EXPECT_TRUE(d->TryCharge(0, 4 * kMiB));  // exactly the rest
  EXPECT_FALSE(d->TryCharge(0, 1));
  MemoryInfo m = d->Memory(0);
  EXPECT_EQ(m.used, 64 * kMiB);
  EXPECT_EQ(m.free, 0u);
  EXPECT_FALSE(d->TryCharge(0, UINT64_MAX));
  d->Credit(0, 16 * kMiB);
  EXPECT_EQ(d->Memory(0).free, 16 * kMiB);
  EXPECT_TRUE(d->TryCharge(0, 0));  // a zero charge always fits
}

TEST(SharedDevicesMemory, CreditClampsAtZero) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  ASSERT_TRUE(d->TryCharge(0, 3 * kMiB));
  d->Credit(0, 10 * kMiB);
  EXPECT_EQ(d->ChargedByThisProcess(0), 0u);
  EXPECT_EQ(d->Memory(0).used, 0u);
}

TEST(SharedDevicesMemory, DevicesAreSeparate) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(2, 64 * kMiB), segment.name());
  ASSERT_TRUE(d->TryCharge(1, 64 * kMiB));
  EXPECT_FALSE(d->TryCharge(1, 1));
  EXPECT_TRUE(d->TryCharge(0, 64 * kMiB));
  EXPECT_EQ(d->Memory(0).used, 64 * kMiB);
}

TEST(SharedDevicesMemory, BadDeviceIndexIsHarmless) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  for (int bad : {-1, 1, 16, 1 << 30}) {
    EXPECT_FALSE(d->TryCharge(bad, 1));
    d->Credit(bad, 1);
    EXPECT_EQ(d->ChargedByThisProcess(bad), 0u);
    EXPECT_EQ(d->Memory(bad).total, 0u);
    EXPECT_TRUE(d->Processes(bad).empty());
  }
}

TEST(SharedDevicesMemory, TwoProcessesSeeEachOthersCharges) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  ASSERT_TRUE(d->TryCharge(0, 8 * kMiB));
  Channel report, release;
  const pid_t child = SpawnCharger(segment.name(), 10 * kMiB, report, release);
  report.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(report.Receive(&ok));
  ASSERT_EQ(ok, 1);

  EXPECT_EQ(d->Memory(0).used, 18 * kMiB);
  std::vector<ProcessMemory> processes = d->Processes(0);
  std::sort(processes.begin(), processes.end(), [](auto& a, auto& b) { return a.used_bytes < b.used_bytes; });
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].pid, ::getpid());
  EXPECT_EQ(processes[0].used_bytes, 8 * kMiB);
  EXPECT_EQ(processes[1].pid, child);
  EXPECT_EQ(processes[1].used_bytes, 10 * kMiB);
  // The child's charge counts against us: only 46 MiB are left.
  EXPECT_FALSE(d->TryCharge(0, 47 * kMiB));
  EXPECT_TRUE(d->TryCharge(0, 46 * kMiB));
  d->Credit(0, 46 * kMiB);

  release.CloseWrite();  // the child exits without crediting: the exit releases its memory
  EXPECT_EQ(WaitChild(child), 0);
  EXPECT_EQ(d->Memory(0).used, 8 * kMiB);
  EXPECT_EQ(d->Processes(0).size(), 1u);
}

TEST(SharedDevicesMemory, KilledProcessIsReleasedOnTheNextMemoryCall) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Channel report, release;
  const pid_t child = SpawnCharger(segment.name(), 32 * kMiB, report, release);
  report.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(report.Receive(&ok));
  ASSERT_EQ(ok, 1);
  EXPECT_EQ(d->Memory(0).used, 32 * kMiB);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
  EXPECT_EQ(d->Memory(0).used, 0u);
}

TEST(SharedDevicesMemory, ZombieIsReleasedBeforeItsParentWaits) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Channel report, release;
  const pid_t child = SpawnCharger(segment.name(), 32 * kMiB, report, release);
  report.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(report.Receive(&ok));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  // Not waited for: the child stays a zombie, which holds no memory on a real GPU.
  for (int i = 0; i < 200; ++i) {
    Result<ProcessStat> stat = ReadProcessStat(child);
    // Wait for the last thread too (sanitizer runtimes have helper threads).
    if (stat.ok() && stat->state == 'Z' && stat->num_threads <= 1) break;
    ::usleep(5000);
  }
  EXPECT_EQ(d->Memory(0).used, 0u);
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
}

TEST(SharedDevicesMemory, OutOfMemoryReapsTheDeadBeforeGivingUp) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Channel report, release;
  const pid_t child = SpawnCharger(segment.name(), 64 * kMiB, report, release);
  report.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(report.Receive(&ok));
  ASSERT_EQ(ok, 1);
  EXPECT_FALSE(d->TryCharge(0, kMiB));  // the child is alive and holds everything
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  WaitChild(child);
  EXPECT_TRUE(d->TryCharge(0, 64 * kMiB));  // no Memory() call in between
}

TEST(SharedDevicesMemory, ReusedPidWithAnotherStartTimeIsReaped) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Result<ProcessStat> init = ReadProcessStat(1);
  ASSERT_TRUE(init.ok()) << init.status().message();
  const int fake = d->TEST_OwnSlot() == 5 ? 6 : 5;
  // pid 1 is alive, but this slot says it started at another time: the pid was reused.
  ASSERT_TRUE(d->TEST_WriteSlot(fake, 1, init->start_time + 12345, 0, 16 * kMiB));
  // Our own pid with a wrong start time is the same situation.
  Result<ProcessStat> self = ReadProcessStat(::getpid());
  ASSERT_TRUE(self.ok());
  ASSERT_TRUE(d->TEST_WriteSlot(fake + 2, ::getpid(), self->start_time + 1, 0, 8 * kMiB));
  EXPECT_EQ(d->ReapDeadProcesses(), 2);
  EXPECT_EQ(d->Memory(0).used, 0u);
}

TEST(SharedDevicesMemory, LiveProcessWithTheRightStartTimeIsKept) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Result<ProcessStat> init = ReadProcessStat(1);
  ASSERT_TRUE(init.ok());
  const int fake = d->TEST_OwnSlot() == 5 ? 6 : 5;
  ASSERT_TRUE(d->TEST_WriteSlot(fake, 1, init->start_time, 0, 16 * kMiB));
  EXPECT_EQ(d->ReapDeadProcesses(), 0);
  EXPECT_EQ(d->Memory(0).used, 16 * kMiB);
  EXPECT_FALSE(d->TEST_WriteSlot(d->TEST_OwnSlot(), 1, 0, 0, 0));  // the hook spares our own slot
}

TEST(SharedDevicesMemory, CorruptSlotsAreClearedWithoutPoisoningOthers) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  ASSERT_TRUE(d->TryCharge(0, 4 * kMiB));
  const int own = d->TEST_OwnSlot();
  const int a = own == 10 ? 11 : 10;
  ASSERT_TRUE(d->TEST_WriteSlot(a, 0, 0, 0, kMiB));                 // pid 0
  ASSERT_TRUE(d->TEST_WriteSlot(a + 2, -7, 0, 0, kMiB));            // negative pid
  ASSERT_TRUE(d->TEST_WriteSlot(a + 4, 1, 0, 0, 1ull << 40));       // charge > device
  ASSERT_TRUE(d->TEST_WriteSlot(a + 6, 1, 0, 0, UINT64_MAX));       // would overflow a sum
  // A state word that is neither free nor live.
  const int fd = ::shm_open(segment.name().c_str(), O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  const uint32_t garbage = 0xdeadbeef;
  const off_t state_offset =
      static_cast<off_t>(offsetof(layout::SegmentPrefix, slots) + (a + 8) * sizeof(layout::ProcessSlot));
  ASSERT_EQ(::pwrite(fd, &garbage, sizeof(garbage), state_offset), 4);
  ::close(fd);

  // Allocation sees only the real charge, without a reap.
  EXPECT_TRUE(d->TryCharge(0, 60 * kMiB));
  EXPECT_EQ(d->Memory(0).used, 64 * kMiB);
  EXPECT_EQ(d->Processes(0).size(), 1u);
  EXPECT_EQ(d->ReapDeadProcesses(), 0);  // all cleared already
}

TEST(SharedDevicesMemory, AllSlotsHeldByLiveProcessesIsResourceExhausted) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  Result<ProcessStat> init = ReadProcessStat(1);
  ASSERT_TRUE(init.ok());
  for (int i = 0; i < kMaxProcessSlots; ++i) {
    if (i != d->TEST_OwnSlot()) {
      ASSERT_TRUE(d->TEST_WriteSlot(i, 1, init->start_time, 0, 0));
    }
  }
  Channel report;
  const pid_t child = ForkChild([&]() {
    report.CloseRead();
    auto other = SharedDevices::Attach(SmallConfig(), segment.name());
    const int code = other.ok() ? 0 : static_cast<int>(other.status().code());
    report.Send(code);
    return 0;
  });
  report.CloseWrite();
  int code = -1;
  ASSERT_TRUE(report.Receive(&code));
  EXPECT_EQ(code, static_cast<int>(StatusCode::kResourceExhausted));
  EXPECT_EQ(WaitChild(child), 0);
  // A dead slot frees room: the same attach then works.
  ASSERT_TRUE(d->TEST_WriteSlot(d->TEST_OwnSlot() == 0 ? 1 : 0, 1, init->start_time + 1, 0, 0));
  const pid_t second = ForkChild([&]() { return SharedDevices::Attach(SmallConfig(), segment.name()).ok() ? 0 : 1; });
  EXPECT_EQ(WaitChild(second), 0);
}

TEST(SharedDevicesMemory, ProcessKilledWhileHoldingTheLockDoesNotDeadlock) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  ASSERT_TRUE(d->TryCharge(0, 2 * kMiB));
  Channel report;
  const pid_t child = ForkChild([&]() {
    report.CloseRead();
    auto mine = SharedDevices::Attach(SmallConfig(), segment.name());
    if (!mine.ok() || !(*mine)->TryCharge(0, 6 * kMiB)) return 1;
    (*mine)->TEST_LockAndAbandon();
    report.Send(1);
    ::raise(SIGKILL);
    return 2;
  });
  report.CloseWrite();
  int locked = 0;
  ASSERT_TRUE(report.Receive(&locked));
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
  // A deadlock would hang here: the alarm turns it into a failure.
  ::alarm(20);
  EXPECT_EQ(d->Memory(0).used, 2 * kMiB);  // the dead owner's charge is reaped too
  EXPECT_TRUE(d->TryCharge(0, 62 * kMiB));
  EXPECT_EQ(d->Memory(0).free, 0u);
  auto another = SharedDevices::Attach(SmallConfig(), segment.name());
  EXPECT_TRUE(another.ok());
  ::alarm(0);
}

TEST(SharedDevicesMemory, ConcurrentThreadsAndProcessesKeepExactTotals) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(1, 1ull << 30), segment.name());
  constexpr int kRounds = 2000;
  auto churn = [](SharedDevices& devices) {
    int failures = 0;
    for (int i = 0; i < kRounds; ++i) {
      const uint64_t bytes = static_cast<uint64_t>((i % 7) + 1) * kMiB;
      if (devices.TryCharge(0, bytes)) {
        devices.Credit(0, bytes);
      } else {
        ++failures;
      }
    }
    return failures;
  };
  const pid_t child = ForkChild([&]() {
    auto mine = SharedDevices::Attach(SmallConfig(1, 1ull << 30), segment.name());
    if (!mine.ok()) return 1;
    return churn(**mine) == 0 && (*mine)->ChargedByThisProcess(0) == 0 ? 0 : 2;
  });
  std::vector<std::thread> threads;
  std::vector<int> failures(3, 0);
  for (int t = 0; t < 3; ++t) threads.emplace_back([&, t]() { failures[t] = churn(*d); });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(WaitChild(child), 0);
  for (int f : failures) EXPECT_EQ(f, 0);
  EXPECT_EQ(d->ChargedByThisProcess(0), 0u);
  EXPECT_EQ(d->Memory(0).used, 0u);
}

TEST(SharedDevicesMemory, ForkedChildUsingItsParentsObjectGetsItsOwnSlot) {
  ScopedSegment segment;
  auto d = AttachOrDie(SmallConfig(), segment.name());
  ASSERT_TRUE(d->TryCharge(0, 4 * kMiB));
  Channel report, release;
  const pid_t child = ForkChild([&]() {
    report.CloseRead();
    release.CloseWrite();
    // The inherited object must not charge the parent's slot.
    const int ok = d->ChargedByThisProcess(0) == 0 && d->TryCharge(0, 8 * kMiB) ? 1 : 0;
    report.Send(ok);
    char byte = 0;
    (void)release.Receive(&byte);
    return 0;
  });
  report.CloseWrite();
  release.CloseRead();
  int ok = 0;
  ASSERT_TRUE(report.Receive(&ok));
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(d->ChargedByThisProcess(0), 4 * kMiB);
  EXPECT_EQ(d->Memory(0).used, 12 * kMiB);
  release.CloseWrite();
  EXPECT_EQ(WaitChild(child), 0);
  EXPECT_EQ(d->Memory(0).used, 4 * kMiB);
}

}  // namespace
}  // namespace fgpu::sim
