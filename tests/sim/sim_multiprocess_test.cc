// The simulated GPU as several processes see it, driven through the real fgpu-probe
// binary: shared memory accounting, OOM at the configured size, release of a killed
// process's memory, time-sliced compute shares and NVML utilization.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <fcntl.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "sim/state/shared_devices.h"
#include "probe_runner.h"

namespace fgpu::testing {
namespace {

// 4 GiB device with 300 MiB context overhead: fills are quick, arithmetic exact.
class SimMultiProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string tag = std::to_string(getpid()) + "-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    segment_ = "/fgpu-mp-" + tag;
    config_ = "/tmp/fgpu-mp-" + tag + ".json";
    std::ofstream(config_) << R"({"devices": [{"memory": "4GiB", "context_overhead": "300MiB", "sm_count": 132}],
                                  "utilization_period_ms": 1000})";
  }
  void TearDown() override {
    sim::SharedDevices::Remove(segment_).ok();
    unlink(config_.c_str());
  }
  ProbeResult Run(const std::vector<std::string>& args) { return RunProbe(segment_, config_, args); }
  std::unique_ptr<RunningProbe> Start(const std::vector<std::string>& args) {
    return std::make_unique<RunningProbe>(segment_, config_, args);
  }

  std::string segment_;
  std::string config_;
};

TEST_F(SimMultiProcess, ProcessesSeeEachOthersMemory) {
  auto holder = Start({"alloc", "--bytes", "1GiB", "--hold-ms", "20000"});
  ASSERT_TRUE(holder->WaitForEvent("mem_get_info"));
  ProbeResult info = Run({"info"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  const auto event = info.Event("info");
  // The observer's own context (300 MiB) plus the holder's context and 1 GiB.
  EXPECT_EQ(event["mem_get_info"]["free"].get<uint64_t>(), 4096 * kMiB - 300 * kMiB - 300 * kMiB - 1024 * kMiB);
  bool holder_listed = false;
  for (const auto& process : event["nvml"]["processes"]) {
    if (process["pid"].get<int>() == holder->pid()) {
      holder_listed = true;
      EXPECT_EQ(process["used"].get<uint64_t>(), 1324 * kMiB);
    }
  }
  EXPECT_TRUE(holder_listed) << event.dump();
}

TEST_F(SimMultiProcess, OutOfMemoryAtConfiguredSizeMinusContext) {
  ProbeResult fill = Run({"fill", "--chunk", "64MiB"});
  ASSERT_EQ(fill.exit_code, 0) << fill.stderr_text;
  const auto event = fill.Event("fill");
  EXPECT_EQ(event["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY");
  // 3796 MiB are left after the context; 59 chunks of 64 MiB fit.
  EXPECT_EQ(event["allocated_bytes"].get<uint64_t>(), 59 * 64 * kMiB);
  // Everything was released on exit.
  ProbeResult info = Run({"info"});
  EXPECT_EQ(info.Event("info")["mem_get_info"]["free"].get<uint64_t>(), 4096 * kMiB - 300 * kMiB);
}

TEST_F(SimMultiProcess, KilledProcessMemoryIsReleased) {
  auto victim = Start({"alloc", "--bytes", "2GiB", "--hold-ms", "60000"});
  ASSERT_TRUE(victim->WaitForEvent("mem_get_info"));
  victim->Kill();
  victim->Wait();
  ProbeResult info = Run({"info"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  const auto event = info.Event("info");
  EXPECT_EQ(event["mem_get_info"]["free"].get<uint64_t>(), 4096 * kMiB - 300 * kMiB);
  for (const auto& process : event["nvml"]["processes"]) {
    EXPECT_NE(process["pid"].get<int>(), victim->pid());
  }
}

// N processes each asking for the whole device get 100/N each (time-slicing), and the
// device reads 100% busy. 10 ms kernels with two in flight keep the device busy through the
// scheduling hiccups of a loaded 2-core machine; the tests also run alone (RUN_SERIAL).
void ExpectFairShares(SimMultiProcess& test, int processes, const std::string& segment, const std::string& config) {
  std::vector<std::unique_ptr<RunningProbe>> spinners;
  for (int i = 0; i < processes; ++i) {
    spinners.push_back(std::make_unique<RunningProbe>(
        segment, config, std::vector<std::string>{"spin", "--duty", "100", "--seconds", "3", "--kernel-us", "10000"}));
  }
  (void)test;
  usleep(2'000'000);
  ProbeResult info = RunProbe(segment, config, {"info"});
  for (auto& spinner : spinners) {
    ProbeResult result = spinner->Wait();
    ASSERT_EQ(result.exit_code, 0) << result.stderr_text;
    const double achieved = result.Event("spin")["achieved_duty"].get<double>();
    EXPECT_NEAR(achieved, 100.0 / processes, 3.0) << "with " << processes << " processes";
  }
  EXPECT_NEAR(info.Event("info")["nvml"]["utilization_gpu"].get<double>(), 100.0, 3.0);
}

TEST_F(SimMultiProcess, OneProcessGetsTheWholeDevice) { ExpectFairShares(*this, 1, segment_, config_); }
TEST_F(SimMultiProcess, TwoProcessesShareEqually) { ExpectFairShares(*this, 2, segment_, config_); }
TEST_F(SimMultiProcess, FourProcessesShareEqually) { ExpectFairShares(*this, 4, segment_, config_); }

TEST_F(SimMultiProcess, PartialDutyShowsInUtilization) {
  auto spinner = Start({"spin", "--duty", "40", "--seconds", "3", "--kernel-us", "10000"});
  usleep(2'000'000);
  ProbeResult info = Run({"info"});
  ProbeResult result = spinner->Wait();
  ASSERT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_NEAR(result.Event("spin")["achieved_duty"].get<double>(), 40.0, 3.0);
  EXPECT_NEAR(info.Event("info")["nvml"]["utilization_gpu"].get<double>(), 40.0, 3.0);
}

TEST_F(SimMultiProcess, SegmentOfAnotherVersionIsRefused) {
  ASSERT_EQ(Run({"info"}).exit_code, 0);
  // Overwrite the layout version (bytes 8..11, after the 8-byte magic) as another build would have.
  const int fd = shm_open(segment_.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  const uint32_t other_version = 0xFFFF;
  ASSERT_EQ(pwrite(fd, &other_version, sizeof(other_version), 8), static_cast<ssize_t>(sizeof(other_version)));
  close(fd);
  ProbeResult info = Run({"info"});
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_NE(info.stderr_text.find("fgpu-sim:"), std::string::npos) << info.stderr_text;
  EXPECT_NE(info.stderr_text.find("version"), std::string::npos) << info.stderr_text;
}

TEST_F(SimMultiProcess, CorruptConfigIsRefused) {
  std::ofstream(config_) << R"({"devices": [{"memroy": "4GiB"}]})";
  ProbeResult info = Run({"info"});
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_NE(info.stderr_text.find("memroy"), std::string::npos) << info.stderr_text;
}

}  // namespace
}  // namespace fgpu::testing
