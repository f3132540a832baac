// The ledger's counters of refusals and degraded modes: zero in a new ledger, counted by the
// processes of the slice, kept across a crash, read back by the admin's own mapping; a full
// ledger counts the process it refuses; pass-through counts without taking a slot.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/units.h"
#include "slice/layout.h"
#include "slice/ledger_counters_print.h"
#include "slice/process_liveness.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using testing::ForkChild;
using testing::LiveStranger;
using testing::OneDeviceSpec;
using testing::ScratchDir;
using testing::WaitChild;

LedgerCounters Expected(uint64_t oom, uint32_t fail_closed, uint32_t compute_unenforced, uint32_t no_free_slot,
                        uint32_t pass_through) {
  return LedgerCounters{oom, fail_closed, compute_unenforced, no_free_slot, pass_through};
}

class LedgerCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<SliceAdmin> created = SliceAdmin::Create(scratch_.slice(), OneDeviceSpec(kGiB));
    ASSERT_TRUE(created.ok()) << created.status().message();
    admin_ = std::make_unique<SliceAdmin>(std::move(*created));
  }
  // What a reader that opens the slice afresh (as the agent does) sees.
  LedgerCounters Fresh() const {
    Result<SliceAdmin> reader = SliceAdmin::Open(scratch_.slice());
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    if (!reader.ok()) return {};
    Result<LedgerCounters> counters = reader->Counters();
    EXPECT_TRUE(counters.ok()) << counters.status().message();
    return counters.ok() ? *counters : LedgerCounters{};
  }

  ScratchDir scratch_;
  std::unique_ptr<SliceAdmin> admin_;
};

TEST_F(LedgerCountersTest, TheHeaderPinsTheCountersWhereTheReservedBytesWere) {
  EXPECT_EQ(offsetof(layout::LedgerHeader, oom_refusals), 40u);
  EXPECT_EQ(offsetof(layout::LedgerHeader, pass_through) + sizeof(uint32_t), sizeof(layout::LedgerHeader));
  // A new ledger has zeros there, as has every ledger written before the counters existed (the
  // bytes were reserved, 0): nothing counted.
  std::ifstream ledger(scratch_.slice() + "/ledger", std::ios::binary);
  char header[sizeof(layout::LedgerHeader)];
  ASSERT_TRUE(ledger.read(header, sizeof(header)));
  for (size_t i = offsetof(layout::LedgerHeader, oom_refusals); i < sizeof(header); ++i) EXPECT_EQ(header[i], 0) << i;
}

TEST_F(LedgerCountersTest, StartAtZeroCountAndAreReadBackByAnotherMapping) {
  EXPECT_EQ(*admin_->Counters(), Expected(0, 0, 0, 0, 0));
  Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
  ASSERT_TRUE(ledger.ok()) << ledger.status().message();
  EXPECT_EQ((*ledger)->Counters(), Expected(0, 0, 0, 0, 0));

  (*ledger)->CountOomRefusal();
  (*ledger)->CountOomRefusal();
  (*ledger)->CountFailClosedRefusal();
  (*ledger)->CountComputeUnenforced();
  const LedgerCounters counted = Expected(2, 1, 1, 0, 0);
  EXPECT_EQ((*ledger)->Counters(), counted);
  EXPECT_EQ(*admin_->Counters(), counted);
  EXPECT_EQ(admin_->Usage().counters, counted) << "a usage snapshot carries them";
  EXPECT_EQ(Fresh(), counted);
}

TEST_F(LedgerCountersTest, CountsSurviveTheCrashOfTheProcessThatMadeThem) {
  const pid_t child = ForkChild([&] {
    Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
    if (!ledger.ok()) return 1;
    (*ledger)->CountOomRefusal();
    (*ledger)->CountFailClosedRefusal();
    ::raise(SIGKILL);
    return 2;
  });
  ASSERT_EQ(WaitChild(child), 128 + SIGKILL);
  EXPECT_EQ(admin_->ReapDeadProcesses(), 1);
  EXPECT_EQ(Fresh(), Expected(1, 1, 0, 0, 0)) << "reaping the dead does not touch the counters";
}

TEST_F(LedgerCountersTest, AFullLedgerCountsEveryProcessItRefuses) {
  const ProcessUsage stranger = LiveStranger();
  for (int i = 0; i < kMaxProcesses; ++i) {
    ASSERT_TRUE(admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {0}).ok());
  }
  for (int attempt = 1; attempt <= 2; ++attempt) {
    EXPECT_EQ(Ledger::Attach(scratch_.slice().c_str()).status().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(Fresh(), Expected(0, 0, 0, attempt, 0));
  }
}

TEST_F(LedgerCountersTest, AForkedChildWithoutASlotIsCountedOnceNotAtEveryRefusal) {
  Result<Ledger*> ledger = Ledger::Attach(scratch_.slice().c_str());
  ASSERT_TRUE(ledger.ok()) << ledger.status().message();
  const ProcessUsage stranger = LiveStranger();
  for (int i = 0; i < kMaxProcesses - 1; ++i) {
    ASSERT_TRUE(admin_->TEST_PlantProcess(stranger.pid, stranger.start_time, {0}).ok());
  }
  const pid_t child = ForkChild([&] {
    if ((*ledger)->TEST_slot() >= 0) return 1;  // the fork handler found no slot
    if ((*ledger)->Reserve(0, kMiB)) return 2;  // so every reservation is refused (fail closed)
    (*ledger)->CountOomRefusal();               // ... which is not the cap's doing
    return 0;
  });
  ASSERT_EQ(WaitChild(child), 0);
  EXPECT_EQ(Fresh(), Expected(0, 0, 0, 1, 0));
}

TEST_F(LedgerCountersTest, PassThroughCountsWithoutTakingASlot) {
  EXPECT_TRUE(Ledger::CountPassThrough(scratch_.slice().c_str()));
  EXPECT_TRUE(Ledger::CountPassThrough(scratch_.slice().c_str()));
  EXPECT_EQ(Fresh(), Expected(0, 0, 0, 0, 2));
  EXPECT_TRUE(admin_->Usage().processes.empty()) << "no slot was claimed";
}

TEST_F(LedgerCountersTest, PassThroughIgnoresWhatIsNotAUsableSlice) {
  EXPECT_FALSE(Ledger::CountPassThrough(nullptr));
  EXPECT_FALSE(Ledger::CountPassThrough(""));
  EXPECT_FALSE(Ledger::CountPassThrough((scratch_.path() + "/no-such-slice").c_str()));
  const std::string garbage = scratch_.path() + "/garbage";
  std::filesystem::create_directory(garbage);
  std::ofstream(garbage + "/limits") << std::string(4096, 'x');
  std::ofstream(garbage + "/ledger") << std::string(4096, 'y');
  EXPECT_FALSE(Ledger::CountPassThrough(garbage.c_str()));
  // A FIFO in place of the limits: refused at once, never waited on for a writer (a plain
  // read-only open of a FIFO blocks until one comes).
  std::filesystem::remove(scratch_.slice() + "/limits");
  ASSERT_EQ(::mkfifo((scratch_.slice() + "/limits").c_str(), 0644), 0);
  EXPECT_FALSE(Ledger::CountPassThrough(scratch_.slice().c_str()));
}

TEST_F(LedgerCountersTest, ATruncatedLedgerIsUnreadableToTheAdminNotACrash) {
  std::filesystem::resize_file(scratch_.slice() + "/ledger", 64);
  const Result<LedgerCounters> counters = admin_->Counters();
  EXPECT_EQ(counters.status().code(), StatusCode::kCorrupt) << counters.status().message();
  const UsageSnapshot usage = admin_->Usage();
  EXPECT_TRUE(usage.used.empty());
  EXPECT_NE(usage.problem.find("does not match"), std::string::npos) << usage.problem;
  EXPECT_EQ(usage.counters, LedgerCounters{});
}

TEST_F(LedgerCountersTest, ALedgerShrunkRegrownOrScribbledIsReportedNeverTrusted) {
  const std::string ledger = scratch_.slice() + "/ledger";
  const uintmax_t size = std::filesystem::file_size(ledger);
  // Shrunk and grown back: a mapping would now hold zero pages; the copy reads a bad header.
  std::filesystem::resize_file(ledger, 0);
  std::filesystem::resize_file(ledger, size);
  EXPECT_TRUE(admin_->Usage().used.empty());
  EXPECT_FALSE(admin_->Counters().ok());
  // Grown past a ledger's size.
  std::filesystem::resize_file(ledger, size + 4096);
  EXPECT_TRUE(admin_->Usage().used.empty());
  // A header that claims 2^60 bytes charged.
  std::filesystem::resize_file(ledger, size);
  ASSERT_TRUE(SliceAdmin::Create(scratch_.path() + "/fresh", OneDeviceSpec(kGiB)).ok());
  std::filesystem::copy_file(scratch_.path() + "/fresh/ledger", ledger,
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream file(ledger, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(sizeof(layout::LedgerHeader));
    const uint64_t huge = uint64_t{1} << 60;
    file.write(reinterpret_cast<const char*>(&huge), sizeof(huge));
  }
  const UsageSnapshot usage = admin_->Usage();
  EXPECT_TRUE(usage.used.empty());
  EXPECT_NE(usage.problem.find("over 1 PiB"), std::string::npos) << usage.problem;
}

}  // namespace
}  // namespace fgpu::slice
