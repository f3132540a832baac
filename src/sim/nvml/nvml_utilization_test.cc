// Device and per-process utilization from kernels on the shared timeline.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sim/nvml/nvml_test_env.h"

namespace fgpu::sim::nvml {
namespace {

constexpr uint64_t kMs = 1'000'000;

// Enqueues `count` kernels of `busy_ms` each, one every `every_ms`, the first at
// `first_ns`: a duty cycle whose share of any window longer than the period is
// busy_ms / every_ms, give or take one kernel.
bool EnqueueDutyCycle(SharedDevices& shared, int device, uint64_t first_ns, int count, uint64_t busy_ms,
                      uint64_t every_ms) {
  for (int i = 0; i < count; ++i) {
    const uint64_t start = first_ns + static_cast<uint64_t>(i) * every_ms * kMs;
    const KernelSlot slot = shared.EnqueueKernel(device, start, busy_ms * kMs);
    if (slot.start_ns != start) return false;  // the pattern must not be pushed back
  }
  return true;
}

void SleepUntilNs(uint64_t monotonic_ns) {
  const uint64_t now = SharedDevices::NowNs();
  if (monotonic_ns > now) std::this_thread::sleep_for(std::chrono::nanoseconds(monotonic_ns - now));
}

class UtilizationTest : public NvmlTest {
 protected:
  void SetUp() override {
    NvmlTest::SetUp();
    UseConfig(R"({"devices": [{"count": 2}], "utilization_period_ms": 1000})");
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    auto shared = AttachFromEnvironment();
    ASSERT_TRUE(shared.ok()) << shared.status().message();
    shared_ = std::move(shared).value();
  }
  void TearDown() override {
    shared_.reset();
    NvmlTest::TearDown();
  }

  std::vector<nvmlProcessUtilizationSample_t> ProcessSamples(unsigned int device, unsigned long long last_seen,
                                                             nvmlReturn_t* rc) {
    std::vector<nvmlProcessUtilizationSample_t> samples(16);
    auto count = static_cast<unsigned int>(samples.size());
    *rc = nvmlDeviceGetProcessUtilization(Device(device), samples.data(), &count, last_seen);
    samples.resize(*rc == NVML_SUCCESS ? count : 0);
    return samples;
  }

  std::unique_ptr<SharedDevices> shared_;
};

TEST_F(UtilizationTest, IdleDeviceReportsZeroAndNoSamples) {
  nvmlUtilization_t utilization{99, 99};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(Device(0), &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 0u);
  EXPECT_EQ(utilization.memory, 0u);
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  unsigned int count = 5;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(Device(0), nullptr, &count, 0), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(Device(0), nullptr, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);

  nvmlProcessesUtilizationInfo_t info{};
  info.version = nvmlProcessesUtilizationInfo_v1;
  EXPECT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(0), &info), NVML_ERROR_NOT_FOUND);
}

TEST_F(UtilizationTest, HalfBusyLastSecondReadsFifty) {
  // 10 ms busy every 20 ms for 2 s; read after 1.5 s, when the last second is all pattern.
  const uint64_t start = SharedDevices::NowNs() + 50 * kMs;
  ASSERT_TRUE(EnqueueDutyCycle(*shared_, 0, start, 100, 10, 20));
  SleepUntilNs(start + 1500 * kMs);

  nvmlUtilization_t utilization{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(Device(0), &utilization), NVML_SUCCESS);
  EXPECT_NEAR(utilization.gpu, 50, 2);
  EXPECT_EQ(utilization.memory, utilization.gpu / 2) << "the documented memory model";

  ASSERT_EQ(nvmlDeviceGetUtilizationRates(Device(1), &utilization), NVML_SUCCESS);
  EXPECT_EQ(utilization.gpu, 0u) << "kernels on device 0 do not busy device 1";

  // The thermal model (board_model.h): 30 C idle, 70 C fully busy, linear in between.
  unsigned int celsius = 0;
  ASSERT_EQ(nvmlDeviceGetTemperature(Device(0), NVML_TEMPERATURE_GPU, &celsius), NVML_SUCCESS);
  EXPECT_NEAR(celsius, 50, 1);
  ASSERT_EQ(nvmlDeviceGetTemperature(Device(1), NVML_TEMPERATURE_GPU, &celsius), NVML_SUCCESS);
  EXPECT_EQ(celsius, 30u);
}

TEST_F(UtilizationTest, ProcessSamplesSplitTheDeviceByPid) {
  // The timeline runs kernels in submission order, so the child's 200 ms of work comes
  // first and this process's 200 ms follows; both fit in the last second when we read.
  // The start is far enough ahead that the child is attached before its first kernel.
  const uint64_t start = SharedDevices::NowNs() + 500 * kMs;
  ChildProcess child([start](SharedDevices& shared) { return EnqueueDutyCycle(shared, 0, start, 20, 10, 20); });
  ASSERT_TRUE(child.WaitReady());
  ASSERT_TRUE(EnqueueDutyCycle(*shared_, 0, start + 400 * kMs, 20, 10, 20));
  const unsigned long long wall_before = WallMicros();
  SleepUntilNs(start + 800 * kMs);

  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(Device(0), nullptr, &count, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  nvmlProcessUtilizationSample_t one[1]{};
  count = 1;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(Device(0), one, &count, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);

  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  const auto samples = ProcessSamples(0, 0, &rc);
  ASSERT_EQ(rc, NVML_SUCCESS);
  ASSERT_EQ(samples.size(), 2u);
  const unsigned long long wall_after = WallMicros();
  for (pid_t pid : {::getpid(), child.pid()}) {
    auto it = std::find_if(samples.begin(), samples.end(), [&](const nvmlProcessUtilizationSample_t& s) {
      return s.pid == static_cast<unsigned int>(pid);
    });
    ASSERT_NE(it, samples.end()) << "pid " << pid;
    EXPECT_NEAR(it->smUtil, 20, 2) << "pid " << pid;
    EXPECT_EQ(it->memUtil, it->smUtil / 2);
    EXPECT_EQ(it->encUtil, 0u);
    EXPECT_EQ(it->decUtil, 0u);
    EXPECT_GE(it->timeStamp, wall_before) << "CPU timestamps in microseconds";
    EXPECT_LE(it->timeStamp, wall_after + 1000);
  }
  nvmlUtilization_t utilization{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(Device(0), &utilization), NVML_SUCCESS);
  EXPECT_NEAR(utilization.gpu, 40, 2);
}

TEST_F(UtilizationTest, LastSeenTimeStampFiltersOldSamples) {
  const uint64_t start = SharedDevices::NowNs() + 50 * kMs;
  ASSERT_TRUE(EnqueueDutyCycle(*shared_, 0, start, 15, 10, 20));  // busy until start + 290 ms
  SleepUntilNs(start + 600 * kMs);

  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  const auto all = ProcessSamples(0, 0, &rc);
  ASSERT_EQ(rc, NVML_SUCCESS);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pid, static_cast<unsigned int>(::getpid()));
  EXPECT_NEAR(all[0].smUtil, 15, 2) << "150 ms busy in the last second";

  (void)ProcessSamples(0, all[0].timeStamp, &rc);
  EXPECT_EQ(rc, NVML_ERROR_NOT_FOUND) << "nothing ran after the sample's own timestamp";

  const auto recent = ProcessSamples(0, all[0].timeStamp - 100'000, &rc);  // the last 100 ms of work
  ASSERT_EQ(rc, NVML_SUCCESS);
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_GT(recent[0].smUtil, 0u);
  EXPECT_EQ(recent[0].timeStamp, all[0].timeStamp);

  (void)ProcessSamples(0, WallMicros() + 10'000'000, &rc);
  EXPECT_EQ(rc, NVML_ERROR_NOT_FOUND) << "a timestamp in the future";
}

TEST_F(UtilizationTest, ProcessesUtilizationInfoChecksVersionAndSizes) {
  const uint64_t start = SharedDevices::NowNs() + 50 * kMs;
  ASSERT_TRUE(EnqueueDutyCycle(*shared_, 1, start, 20, 10, 20));  // busy until start + 390 ms
  SleepUntilNs(start + 600 * kMs);

  nvmlProcessesUtilizationInfo_t info{};
  info.version = nvmlProcessesUtilizationInfo_v1 + 1;
  EXPECT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(1), &info), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(1), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  info.version = nvmlProcessesUtilizationInfo_v1;
  info.processSamplesCount = 0;
  info.procUtilArray = nullptr;
  ASSERT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(1), &info), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(info.processSamplesCount, 1u);

  std::vector<nvmlProcessUtilizationInfo_v1_t> entries(info.processSamplesCount);
  info.procUtilArray = entries.data();
  ASSERT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(1), &info), NVML_SUCCESS);
  ASSERT_EQ(info.processSamplesCount, 1u);
  EXPECT_EQ(entries[0].pid, static_cast<unsigned int>(::getpid()));
  EXPECT_NEAR(entries[0].smUtil, 20, 2) << "200 ms busy in the last second";
  EXPECT_EQ(entries[0].memUtil, entries[0].smUtil / 2);
  EXPECT_EQ(entries[0].jpgUtil, 0u);
  EXPECT_EQ(entries[0].ofaUtil, 0u);
  EXPECT_GT(entries[0].timeStamp, 0u);

  info.lastSeenTimeStamp = entries[0].timeStamp;
  EXPECT_EQ(nvmlDeviceGetProcessesUtilizationInfo(Device(1), &info), NVML_ERROR_NOT_FOUND);
}

}  // namespace
}  // namespace fgpu::sim::nvml
