// The Ledger and SliceAdmin in one or a few processes: admission at the cap, release,
// live resize, slots across fork and exec, and reaping of dead, reused and corrupt slots.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/units.h"
#include "slice/layout.h"
#include "slice/process_liveness.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using testing::ForkChild;
using testing::OneDeviceSpec;
using testing::ScratchDir;
using testing::TwoDeviceSpec;
using testing::WaitChild;

// /proc/<pid>/stat field 3 ('?' when unreadable).
char ProcessState(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* file = std::fopen(path, "r");
  char state = '?';
  if (file != nullptr) {
    if (std::fscanf(file, "%*d (%*[^)]) %c", &state) != 1) state = '?';
    std::fclose(file);
  }
  return state;
}

// A fresh slice, its admin, and (on demand) this process's ledger.
class LedgerTest : public ::testing::Test {
 protected:
  void Create(const SliceSpec& spec) {
    Result<SliceAdmin> created = SliceAdmin::Create(scratch_.slice(), spec);
    ASSERT_TRUE(created.ok()) << created.status().message();
    admin_ = std::make_unique<SliceAdmin>(std::move(*created));
  }
  Ledger* Attach() {
    Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
    EXPECT_TRUE(ledger.ok()) << ledger.status().message();
    return ledger.ok() ? *ledger : nullptr;
  }
  std::string LedgerPath() const { return scratch_.slice() + "/ledger"; }
  size_t ChargedOffset(int slot, int device, uint32_t device_count) const {
    return layout::SlotsOffset(device_count) + static_cast<size_t>(slot) * layout::SlotSize(device_count) +
           sizeof(layout::SlotHeader) + static_cast<size_t>(device) * sizeof(layout::SlotDevice) +
           offsetof(layout::SlotDevice, charged);
  }
  // A process that is certainly alive for the whole test, and is not this one.
  static ProcessUsage LiveStranger() {
    ProcessUsage stranger;
    stranger.pid = ::getppid();
    stranger.start_time = ReadStartTime(stranger.pid);
    return stranger;
  }

  ScratchDir scratch_;
  std::unique_ptr<SliceAdmin> admin_;
};

TEST_F(LedgerTest, ReservesUpToTheCapExactly) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->Cap(0), kGiB);
  EXPECT_TRUE(ledger->Reserve(0, 600 * kMiB));
  EXPECT_FALSE(ledger->Reserve(0, 500 * kMiB));
  EXPECT_EQ(ledger->Used(0), 600 * kMiB);  // a refusal changes nothing
  EXPECT_TRUE(ledger->Reserve(0, 424 * kMiB));
  EXPECT_EQ(ledger->Used(0), kGiB);
  EXPECT_FALSE(ledger->Reserve(0, 1));
  EXPECT_TRUE(ledger->Reserve(0, 0));  // nothing to charge
  EXPECT_FALSE(ledger->Reserve(0, ~uint64_t{0}));

  ledger->Release(0, 600 * kMiB);
  EXPECT_EQ(ledger->Used(0), 424 * kMiB);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 424 * kMiB);
  EXPECT_TRUE(ledger->Reserve(0, 600 * kMiB));
  EXPECT_EQ(admin_->Usage().used[0], kGiB);
}

TEST_F(LedgerTest, ReleaseIsClampedToThisProcessCharge) {
  Create(TwoDeviceSpec(kGiB, kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 100 * kMiB));
  ASSERT_TRUE(ledger->Reserve(1, 300 * kMiB));
  ledger->Release(0, 5 * kGiB);
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 0u);
  EXPECT_EQ(ledger->Used(1), 300 * kMiB);  // the other device is untouched
  ledger->Release(0, 1);                   // nothing charged: a no-op
  EXPECT_EQ(ledger->Used(0), 0u);
}

TEST_F(LedgerTest, DevicesAreFoundByUuidAndOutOfRangeIndexesAreHarmless) {
  Create(TwoDeviceSpec(kGiB, 2 * kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->device_count(), 2);
  EXPECT_EQ(ledger->FindDevice("gpu-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee"), 1);
  EXPECT_EQ(ledger->FindDevice(testing::kUuid0), 0);
  EXPECT_EQ(ledger->FindDevice("GPU-none"), -1);
  EXPECT_EQ(ledger->FindDevice(nullptr), -1);
  EXPECT_STREQ(ledger->device_uuid(1), testing::kUuid1);
  EXPECT_STREQ(ledger->device_uuid(2), "");
  EXPECT_EQ(ledger->Cap(1), 2 * kGiB);
  EXPECT_FALSE(ledger->Reserve(2, 1));
  EXPECT_FALSE(ledger->Reserve(-1, 1));
  ledger->Release(7, 1);
  EXPECT_EQ(ledger->Cap(-1), 0u);
  EXPECT_EQ(ledger->Used(16), 0u);
}

TEST_F(LedgerTest, ShrinkingBelowUsageRefusesNewButKeepsExistingAndGrowingIsImmediate) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  const uint64_t generation = ledger->LimitsGeneration();
  ASSERT_TRUE(ledger->Reserve(0, 800 * kMiB));

  ASSERT_TRUE(admin_->SetMemoryCap(0, 500 * kMiB).ok());
  EXPECT_EQ(ledger->Cap(0), 500 * kMiB);
  EXPECT_GT(ledger->LimitsGeneration(), generation);
  EXPECT_FALSE(ledger->Reserve(0, 1));
  EXPECT_EQ(ledger->Used(0), 800 * kMiB);  // existing charges stay
  ledger->Release(0, 400 * kMiB);
  EXPECT_FALSE(ledger->Reserve(0, 200 * kMiB));  // 600 MiB > 500 MiB
  EXPECT_TRUE(ledger->Reserve(0, 100 * kMiB));

  ASSERT_TRUE(admin_->SetMemoryCap(0, 2 * kGiB).ok());
  EXPECT_TRUE(ledger->Reserve(0, kGiB));
  EXPECT_EQ(ledger->Used(0), 1524 * kMiB);
  EXPECT_EQ(admin_->spec().devices[0].memory_cap, 2 * kGiB);
  EXPECT_EQ(SliceAdmin::Open(scratch_.slice())->spec().devices[0].memory_cap, 2 * kGiB);

  EXPECT_EQ(admin_->SetMemoryCap(1, kGiB).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(admin_->SetMemoryCap(0, (uint64_t{1} << 50) + 1).code(), StatusCode::kInvalidArgument);
}

TEST_F(LedgerTest, AttachingTwiceInAProcessReturnsTheSameLedger) {
  Create(OneDeviceSpec(kGiB));
  Ledger* first = Attach();
  Ledger* second = Attach();
  EXPECT_EQ(first, second);
  EXPECT_EQ(admin_->Usage().processes.size(), 1u);
}

TEST_F(LedgerTest, UsageListsLiveProcessesWithTheirCharges) {
  Create(TwoDeviceSpec(kGiB, kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(1, 7 * kMiB));
  const UsageSnapshot usage = admin_->Usage();
  ASSERT_EQ(usage.processes.size(), 1u);
  EXPECT_EQ(usage.processes[0].pid, ::getpid());
  EXPECT_EQ(usage.processes[0].start_time, ReadStartTime(::getpid()));
  EXPECT_EQ(usage.processes[0].charged, (std::vector<uint64_t>{0, 7 * kMiB}));
  EXPECT_EQ(usage.caps, (std::vector<uint64_t>{kGiB, kGiB}));
}

TEST_F(LedgerTest, AForkedChildChargesItsOwnSlotAndIsReapedWhenItDies) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 100 * kMiB));
  const int parent_slot = ledger->TEST_slot();
  const pid_t child = ForkChild([&] {
    // The inherited Ledger got a new slot in the fork handler; attaching again returns it.
    Result<Ledger*> again = Ledger::Attach(scratch_.slice().c_str());
    if (!again.ok() || *again != ledger) return 1;
    if (ledger->TEST_slot() < 0 || ledger->TEST_slot() == parent_slot) return 2;
    if (ledger->ChargedByThisProcess(0) != 0) return 3;
    if (!ledger->Reserve(0, 200 * kMiB)) return 4;
    return 0;  // dies holding 200 MiB
  });
  ASSERT_EQ(WaitChild(child), 0);
  EXPECT_EQ(ledger->Used(0), 300 * kMiB);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 100 * kMiB);
  EXPECT_EQ(ledger->ReapDeadProcesses(), 1);
  EXPECT_EQ(ledger->Used(0), 100 * kMiB);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 100 * kMiB);
}

TEST_F(LedgerTest, AFailedReserveReapsTheDeadAndRetries) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  const pid_t child = ForkChild([&] { return ledger->Reserve(0, kGiB) ? 0 : 1; });
  ASSERT_EQ(WaitChild(child), 0);
  EXPECT_EQ(ledger->Used(0), kGiB);
  EXPECT_TRUE(ledger->Reserve(0, 512 * kMiB));  // refused at first, then the dead child is reaped
  EXPECT_EQ(ledger->Used(0), 512 * kMiB);
}

TEST_F(LedgerTest, AttachReapsTheDead) {
  Create(OneDeviceSpec(kGiB));
  const pid_t child = ForkChild([&] {
    Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
    return ledger.ok() && (*ledger)->Reserve(0, kGiB) ? 0 : 1;
  });
  ASSERT_EQ(WaitChild(child), 0);
  EXPECT_EQ(admin_->Usage().used[0], kGiB);
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_TRUE(ledger->Reserve(0, kGiB));
}

TEST_F(LedgerTest, AZombieIsDead) {
  Create(OneDeviceSpec(kGiB));
  const pid_t child = ForkChild([&] {
    Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
    return ledger.ok() && (*ledger)->Reserve(0, kGiB) ? 0 : 1;
  });
  // Not waited for yet: the child is a zombie once it exits. (Its leader turns 'Z' while
  // other threads, e.g. a sanitizer's, may still be exiting: that is not dead yet.)
  for (int i = 0; i < 10000 && ProcessState(child) != 'Z'; ++i) ::usleep(1000);
  ASSERT_EQ(ProcessState(child), 'Z');
  int reaped = 0;
  for (int i = 0; i < 10000 && reaped == 0; ++i, ::usleep(1000)) reaped = admin_->ReapDeadProcesses();
  EXPECT_EQ(reaped, 1);
  EXPECT_EQ(ProcessState(child), 'Z');  // still unwaited: it was reaped as a zombie
  EXPECT_EQ(admin_->Usage().used[0], 0u);
  EXPECT_EQ(WaitChild(child), 0);
}

TEST_F(LedgerTest, PidReuseIsDetectedByStartTime) {
  Create(OneDeviceSpec(kGiB));
  const ProcessUsage stranger = LiveStranger();
  ASSERT_NE(stranger.start_time, 0u);
  // Same live pid, wrong start time: the recorded process is dead and its pid reused.
  Result<int> reused = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time + 12345, {300 * kMiB});
  Result<int> genuine = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {200 * kMiB});
  ASSERT_TRUE(reused.ok() && genuine.ok());
  EXPECT_EQ(admin_->Usage().used[0], 500 * kMiB);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 1);
  const UsageSnapshot usage = admin_->Usage();
  EXPECT_EQ(usage.used[0], 200 * kMiB);
  ASSERT_EQ(usage.processes.size(), 1u);
  EXPECT_EQ(usage.processes[0].start_time, stranger.start_time);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 0);  // the genuine one stays
}

TEST_F(LedgerTest, CorruptSlotsAreTreatedAsDead) {
  Create(OneDeviceSpec(kGiB));
  const ProcessUsage stranger = LiveStranger();
  Result<int> negative_pid = admin_->TEST_PlantProcess(-5, 1, {100 * kMiB});
  Result<int> huge_charge = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {100 * kMiB});
  Result<int> bad_state = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {100 * kMiB});
  ASSERT_TRUE(negative_pid.ok() && huge_charge.ok() && bad_state.ok());
  testing::Poke<uint64_t>(LedgerPath(), ChargedOffset(*huge_charge, 0, 1), uint64_t{1} << 60);
  testing::Poke<uint32_t>(LedgerPath(), layout::SlotsOffset(1) + *bad_state * layout::SlotSize(1), 9);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 3);
  EXPECT_EQ(admin_->Usage().used[0], 0u);  // the garbage charge was clamped, never wrapped
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 0u);
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->Reserve(0, kGiB));
}

TEST_F(LedgerTest, AGarbageLastOpIsIgnored) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, kMiB));
  testing::Poke<uint64_t>(LedgerPath(), sizeof(layout::LedgerHeader) + offsetof(layout::DeviceWord, last),
                          0xffffffffffffffffull);  // names slot 4094
  EXPECT_TRUE(ledger->Reserve(0, kMiB));
  ledger->Release(0, 2 * kMiB);
  EXPECT_EQ(ledger->Used(0), 0u);
}

TEST_F(LedgerTest, ASlotLeftByAPreviousImageOfThisProcessIsAdopted) {
  // What an exec leaves behind: a slot with this pid and start time, charges the old image's
  // device memory no longer backs.
  Create(OneDeviceSpec(kGiB));
  Result<int> leftover = admin_->TEST_PlantProcess(::getpid(), ReadStartTime(::getpid()), {300 * kMiB});
  ASSERT_TRUE(leftover.ok());
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->TEST_slot(), *leftover);
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 0u);
  EXPECT_EQ(admin_->Usage().processes.size(), 1u);
}

TEST_F(LedgerTest, AFullLedgerIsResourceExhaustedUnlessSomeoneIsDead) {
  Create(OneDeviceSpec(kGiB));
  const ProcessUsage stranger = LiveStranger();
  for (int i = 0; i < kMaxProcesses - 1; ++i) {
    ASSERT_TRUE(admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {0}).ok());
  }
  ASSERT_TRUE(admin_->TEST_PlantProcess(stranger.pid, stranger.start_time + 1, {kMiB}).ok());  // dead
  Ledger* ledger = Attach();  // reaps the dead one, takes its slot
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->Used(0), 0u);

  ScratchDir other;
  Result<SliceAdmin> full = SliceAdmin::Create(other.slice(), OneDeviceSpec(kGiB));
  ASSERT_TRUE(full.ok());
  for (int i = 0; i < kMaxProcesses; ++i) {
    ASSERT_TRUE(full->TEST_PlantProcess(stranger.pid, stranger.start_time, {0}).ok());
  }
  const Status status = Ledger::Attach(other.slice().c_str()).status();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.message();
  EXPECT_NE(status.message().find("256 process slots"), std::string::npos) << status.message();
}

TEST_F(LedgerTest, ATruncatedLedgerDoesNotCrashTheAdmin) {
  Create(OneDeviceSpec(kGiB));
  std::filesystem::resize_file(LedgerPath(), 64);
  const UsageSnapshot usage = admin_->Usage();
  EXPECT_TRUE(usage.used.empty());
  EXPECT_EQ(usage.caps.size(), 1u);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 0);
}

}  // namespace
}  // namespace fgpu::slice
