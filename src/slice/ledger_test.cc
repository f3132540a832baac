// The Ledger and SliceAdmin in one or a few processes: admission at the cap, release,
// live resize, slots across fork and exec, and reaping of dead, reused and corrupt slots.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/units.h"
#include "slice/compute_spec.h"
#include "slice/layout.h"
#include "slice/process_liveness.h"
#include "slice/test_crash.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using testing::ForkChild;
using testing::LiveStranger;
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
  size_t ChargedOffset(int slot, int device, int lane, uint32_t device_count) const {
    return layout::SlotsOffset(device_count) + static_cast<size_t>(slot) * layout::SlotSize(device_count) +
           layout::SlotDeviceOffset(device, lane) + offsetof(layout::SlotDevice, charged);
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

TEST_F(LedgerTest, ReserveOverCapChargesPastTheCapAndReleasesAsUsual) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 900 * kMiB));
  EXPECT_TRUE(ledger->ReserveOverCap(0, 200 * kMiB));
  EXPECT_EQ(ledger->Used(0), 1100 * kMiB);
  EXPECT_EQ(admin_->Usage().used[0], 1100 * kMiB);
  EXPECT_FALSE(ledger->Reserve(0, 1)) << "over the cap: nothing more is admitted";
  EXPECT_FALSE(ledger->ReserveOverCap(1, 1)) << "a device outside the slice";
  EXPECT_FALSE(ledger->ReserveOverCap(0, ~uint64_t{0}));
  ledger->Release(0, 200 * kMiB);
  EXPECT_EQ(ledger->Used(0), 900 * kMiB);
  EXPECT_TRUE(ledger->Reserve(0, 124 * kMiB));
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
  Result<int> huge_credit = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {0});
  ASSERT_TRUE(negative_pid.ok() && huge_charge.ok() && bad_state.ok() && huge_credit.ok());
  testing::Poke<uint64_t>(LedgerPath(), ChargedOffset(*huge_charge, 0, 0, 1), uint64_t{1} << 60);
  testing::Poke<uint32_t>(LedgerPath(), layout::SlotsOffset(1) + *bad_state * layout::SlotSize(1), 9);
  // A lane below -1 PiB is as corrupt as one above +1 PiB; crediting it would lock the slice out.
  testing::Poke<int64_t>(LedgerPath(), ChargedOffset(*huge_credit, 0, 5, 1), -(int64_t{1} << 60));
  EXPECT_EQ(admin_->ReapDeadProcesses(), 4);
  EXPECT_EQ(admin_->Usage().used[0], 0u);  // the garbage charge was clamped, never wrapped
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 0u);
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->Reserve(0, kGiB));
}

TEST_F(LedgerTest, CreditsPastWhatTheSlotHoldsAreGarbage) {
  // Found by fuzz/slice_files_fuzzer: lanes each just inside -1 PiB passed the per-lane check,
  // and together credited the device total past 1 PiB, which made the ledger unmappable.
  Create(OneDeviceSpec(kGiB));
  const ProcessUsage stranger = LiveStranger();
  Result<int> slot = admin_->TEST_PlantProcess(stranger.pid, stranger.start_time + 1, {0});
  ASSERT_TRUE(slot.ok());
  for (int lane = 1; lane < 8; ++lane)
    testing::Poke<int64_t>(LedgerPath(), ChargedOffset(*slot, 0, lane, 1), -(int64_t{1} << 49));
  EXPECT_EQ(admin_->ReapDeadProcesses(), 1);
  EXPECT_EQ(admin_->Usage().used[0], 0u);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 0u);
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_TRUE(ledger->Reserve(0, kGiB));
  EXPECT_FALSE(ledger->Reserve(0, 1));
}

TEST_F(LedgerTest, AGarbageLastOpIsIgnored) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, kMiB));
  testing::Poke<uint64_t>(LedgerPath(), sizeof(layout::LedgerHeader) + offsetof(layout::DeviceWord, last),
                          0xffffffffffffffffull);  // names slot 510, lane 7
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

// ---- compute fields ----------------------------------------------------------------------------

TEST_F(LedgerTest, ComputeFieldsRoundTripAndChangeLive) {
  SliceSpec spec = TwoDeviceSpec(kGiB, kGiB);
  spec.devices[0].compute_share = 30;
  spec.devices[0].compute_mode = ComputeMode::kCap;
  spec.devices[0].tier = Tier::kLatency;
  // Device 1 keeps the defaults: 50 (TwoDeviceSpec), share, standard.
  Create(spec);
  Result<SliceAdmin> reopened = SliceAdmin::Open(scratch_.slice());
  ASSERT_TRUE(reopened.ok()) << reopened.status().message();
  const DeviceLimit& d0 = reopened->spec().devices[0];
  const DeviceLimit& d1 = reopened->spec().devices[1];
  EXPECT_EQ(d0.compute_share, 30u);
  EXPECT_EQ(d0.compute_mode, ComputeMode::kCap);
  EXPECT_EQ(d0.tier, Tier::kLatency);
  EXPECT_EQ(d1.compute_share, 50u);
  EXPECT_EQ(d1.compute_mode, ComputeMode::kShare);
  EXPECT_EQ(d1.tier, Tier::kStandard);

  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->ComputeShare(0), 30u);
  EXPECT_EQ(ledger->GetComputeMode(0), ComputeMode::kCap);
  EXPECT_EQ(ledger->GetTier(0), Tier::kLatency);
  EXPECT_EQ(ledger->ComputeShare(1), 50u);
  EXPECT_EQ(ledger->GetComputeMode(1), ComputeMode::kShare);
  EXPECT_EQ(ledger->GetTier(1), Tier::kStandard);
  // Outside the slice: the strictest values.
  EXPECT_EQ(ledger->ComputeShare(2), 0u);
  EXPECT_EQ(ledger->GetComputeMode(-1), ComputeMode::kCap);
  EXPECT_EQ(ledger->GetTier(16), Tier::kBatch);

  // A live change is seen by the attached ledger at once, with a new generation.
  const uint64_t generation = ledger->LimitsGeneration();
  ASSERT_TRUE(admin_->SetCompute(1, 75, ComputeMode::kCap, Tier::kBatch).ok());
  EXPECT_GT(ledger->LimitsGeneration(), generation);
  EXPECT_EQ(ledger->ComputeShare(1), 75u);
  EXPECT_EQ(ledger->GetComputeMode(1), ComputeMode::kCap);
  EXPECT_EQ(ledger->GetTier(1), Tier::kBatch);
  EXPECT_EQ(ledger->ComputeShare(0), 30u);  // the other device is untouched
  EXPECT_EQ(ledger->GetTier(0), Tier::kLatency);
  EXPECT_EQ(admin_->spec().devices[1].compute_share, 75u);
  EXPECT_EQ(SliceAdmin::Open(scratch_.slice())->spec().devices[1].tier, Tier::kBatch);
  ASSERT_TRUE(admin_->SetCompute(1, 100, ComputeMode::kShare, Tier::kLatency).ok());
  EXPECT_EQ(ledger->ComputeShare(1), 100u);
  EXPECT_EQ(ledger->GetComputeMode(1), ComputeMode::kShare);
  EXPECT_EQ(ledger->GetTier(1), Tier::kLatency);

  // Bad values change nothing.
  const uint64_t before_bad = ledger->LimitsGeneration();
  EXPECT_EQ(admin_->SetCompute(1, 0, ComputeMode::kCap, Tier::kBatch).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(admin_->SetCompute(1, 101, ComputeMode::kCap, Tier::kBatch).code(), StatusCode::kInvalidArgument);
  const Status bad_mode = admin_->SetCompute(1, 10, static_cast<ComputeMode>(2), Tier::kBatch);
  EXPECT_EQ(bad_mode.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_mode.message().find("compute mode"), std::string::npos) << bad_mode.message();
  const Status bad_tier = admin_->SetCompute(1, 10, ComputeMode::kCap, static_cast<Tier>(3));
  EXPECT_EQ(bad_tier.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_tier.message().find("tier"), std::string::npos) << bad_tier.message();
  EXPECT_EQ(admin_->SetCompute(2, 10, ComputeMode::kCap, Tier::kBatch).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger->LimitsGeneration(), before_bad);
  EXPECT_EQ(ledger->ComputeShare(1), 100u);
  EXPECT_EQ(ledger->GetComputeMode(1), ComputeMode::kShare);
  EXPECT_EQ(ledger->GetTier(1), Tier::kLatency);
}

TEST_F(LedgerTest, ComputeFieldsEditedUnderARunningWorkloadReadAsTheStrictest) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  const std::string limits = scratch_.slice() + "/limits";
  const size_t device0 = sizeof(layout::LimitsHeader);
  testing::Poke<uint32_t>(limits, device0 + offsetof(layout::LimitsDevice, compute_share), 250);
  testing::Poke<uint32_t>(limits, device0 + offsetof(layout::LimitsDevice, compute_mode),
                          layout::PackComputeWord(9, 9, 0));
  EXPECT_EQ(ledger->ComputeShare(0), 100u);
  EXPECT_EQ(ledger->GetComputeMode(0), ComputeMode::kCap);
  EXPECT_EQ(ledger->GetTier(0), Tier::kBatch);
}

// ---- lanes -----------------------------------------------------------------------------------

// Polls `done` for up to `limit`: a hang shows as false, not as a stuck test.
bool WaitFor(const std::atomic<bool>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done.load();
}

TEST_F(LedgerTest, AThreadStoppedInsideAnOpDoesNotBlockTheOtherThreadsOfItsProcess) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  // Thread A stops between its device CAS and its commit: its op is published in the device
  // word, its lane is held and its charge not yet committed.
  ASSERT_TRUE(ledger->TEST_PauseAt("after-device-cas"));
  std::atomic<bool> a_done{false};
  std::thread a([&] {
    EXPECT_TRUE(ledger->Reserve(0, 100 * kMiB));
    a_done.store(true);
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!ledger->TEST_IsPaused() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_TRUE(ledger->TEST_IsPaused()) << "thread A never reached after-device-cas";
  EXPECT_EQ(ledger->Used(0), 100 * kMiB);  // published...
  EXPECT_FALSE(a_done.load());            // ...and still inside the op

  // Thread B, same process, same device: reserves (committing A's op on the way, as any op
  // that overwrites the device word does), releases, and returns, all while A is stopped.
  std::atomic<bool> b_done{false};
  std::atomic<bool> b_admitted{false};
  std::thread b([&] {
    bool ok = ledger->Reserve(0, 200 * kMiB);
    ledger->Release(0, 200 * kMiB);
    ok = ok && ledger->Reserve(0, 924 * kMiB);  // with A's 100 MiB: the cap exactly
    ok = ok && !ledger->Reserve(0, 1);          // A's op counts against the cap
    ledger->Release(0, 924 * kMiB);
    b_admitted.store(ok);
    b_done.store(true);
  });
  const bool b_finished = WaitFor(b_done, std::chrono::seconds(20));
  EXPECT_TRUE(b_finished) << "thread B waited for the stopped thread A";
  EXPECT_TRUE(ledger->TEST_IsPaused());  // A was stopped all along
  if (b_finished) {
    EXPECT_TRUE(b_admitted.load());
    EXPECT_EQ(ledger->Used(0), 100 * kMiB);
    EXPECT_EQ(ledger->ChargedByThisProcess(0), 100 * kMiB);  // A's op, committed by B
  }
  ledger->TEST_ResumePaused();
  b.join();
  a.join();
  EXPECT_TRUE(a_done.load());
  EXPECT_EQ(ledger->Used(0), 100 * kMiB);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 100 * kMiB);
  ledger->Release(0, 100 * kMiB);
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 0u);
}

TEST_F(LedgerTest, MemoryReservedOnOneLaneIsReleasedOnAnother) {
  Create(OneDeviceSpec(kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->TEST_ReserveOnLane(0, 0, 300 * kMiB));
  ledger->TEST_ReleaseOnLane(0, 3, 100 * kMiB);
  EXPECT_EQ(ledger->TEST_LaneCharge(0, 0), int64_t{300} * int64_t{kMiB});
  EXPECT_EQ(ledger->TEST_LaneCharge(0, 3), -int64_t{100} * int64_t{kMiB});  // signed
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 200 * kMiB);
  EXPECT_EQ(ledger->Used(0), 200 * kMiB);
  ASSERT_EQ(admin_->Usage().processes.size(), 1u);
  EXPECT_EQ(admin_->Usage().processes[0].charged, std::vector<uint64_t>{200 * kMiB});
  // The release clamp is over the slot's lanes together: at most the 200 MiB still held.
  ledger->TEST_ReleaseOnLane(0, 5, kGiB);
  EXPECT_EQ(ledger->TEST_LaneCharge(0, 5), -int64_t{200} * int64_t{kMiB});
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 0u);
  EXPECT_EQ(ledger->Used(0), 0u);
  ledger->Release(0, kMiB);  // nothing held: a no-op
  EXPECT_EQ(ledger->Used(0), 0u);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 0u);
  EXPECT_TRUE(ledger->Reserve(0, kGiB));  // the whole cap, wherever it lands
  EXPECT_FALSE(ledger->TEST_ReserveOnLane(0, 8, 1));  // no such lane
}

TEST_F(LedgerTest, AKilledProcessWithNegativeLanesIsReapedToZero) {
  Create(TwoDeviceSpec(kGiB, kGiB));
  Ledger* ledger = Attach();
  ASSERT_NE(ledger, nullptr);
  ASSERT_TRUE(ledger->Reserve(0, 64 * kMiB));  // this process's own, which must survive the reap
  const uint64_t before0 = ledger->Used(0);
  const uint64_t before1 = ledger->Used(1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ForkChild([&] {
    // Reserve on lanes 0 and 1, release across: lanes 2, 4 and 7 go negative.
    if (!ledger->TEST_ReserveOnLane(0, 0, 500 * kMiB)) return 1;
    if (!ledger->TEST_ReserveOnLane(0, 1, 200 * kMiB)) return 2;
    ledger->TEST_ReleaseOnLane(0, 2, 300 * kMiB);
    ledger->TEST_ReleaseOnLane(0, 7, 150 * kMiB);
    if (!ledger->TEST_ReserveOnLane(1, 6, 100 * kMiB)) return 3;
    ledger->TEST_ReleaseOnLane(1, 4, 100 * kMiB);  // device 1: +100 and -100
    if (ledger->TEST_LaneCharge(0, 2) >= 0 || ledger->ChargedByThisProcess(0) != 250 * kMiB) return 4;
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) return 5;
    for (;;) ::pause();  // until SIGKILL
  });
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(ledger->Used(0), before0 + 250 * kMiB);
  EXPECT_EQ(ledger->Used(1), before1);
  ::kill(child, SIGKILL);
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 1);
  EXPECT_EQ(ledger->Used(0), before0);
  EXPECT_EQ(ledger->Used(1), before1);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 64 * kMiB);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(1), 0u);
  EXPECT_EQ(ledger->ChargedByThisProcess(0), 64 * kMiB);
}

TEST_F(LedgerTest, SettleCreditsNegativeLanesFirstSoTheTotalNeverDipsBelowTheOthers) {
  Create(TwoDeviceSpec(kGiB, kGiB));
  // The others' true usage: 500 MiB held by a live process. (This process does not attach, so
  // that the children below attach afresh and read the crash plan from the environment.)
  const ProcessUsage stranger = LiveStranger();
  ASSERT_TRUE(admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {500 * kMiB, 0}).ok());
  // A process that holds 200 MiB as +300 MiB (lane 1) and -100 MiB (lane 6), then dies.
  const pid_t victim = ForkChild([&] {
    Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
    if (!ledger.ok() || !(*ledger)->TEST_ReserveOnLane(0, 1, 300 * kMiB)) return 1;
    (*ledger)->TEST_ReleaseOnLane(0, 6, 100 * kMiB);
    return (*ledger)->TEST_LaneCharge(0, 6) == -int64_t{100} * int64_t{kMiB} ? 0 : 2;
  });
  ASSERT_EQ(WaitChild(victim), 0);
  EXPECT_EQ(admin_->Usage().used[0], 700 * kMiB);

  // A reaper (attaching reaps) that dies right after its first settle op on device 0. Credits
  // go first, so that op is lane 6's +100 MiB: the total rises to 800 MiB. Had the +300 MiB
  // lane gone first, the total would read 400 MiB, below the 500 MiB the others hold, and a
  // Reserve racing the reap could have been admitted past the cap.
  const pid_t reaper = ForkChild([&] {
    ::setenv(kCrashEnv, "after-reap-op:1", 1);
    return Ledger::Attach(scratch_.slice().c_str()).ok() ? 0 : 1;
  });
  ASSERT_EQ(WaitChild(reaper), 128 + SIGKILL) << "the reaper did not die at after-reap-op";
  EXPECT_EQ(admin_->Usage().used[0], 800 * kMiB);

  // The next reaper takes over the abandoned REAPING slot and finishes, in the same order.
  EXPECT_EQ(admin_->ReapDeadProcesses(), 1);
  const UsageSnapshot usage = admin_->Usage();
  EXPECT_EQ(usage.used[0], 500 * kMiB);
  EXPECT_EQ(usage.used[1], 0u);
  EXPECT_EQ(admin_->TEST_TotalSlotCharges(0), 500 * kMiB);
  ASSERT_EQ(usage.processes.size(), 1u);
  EXPECT_EQ(usage.processes[0].pid, stranger.pid);
}

}  // namespace
}  // namespace fgpu::slice
