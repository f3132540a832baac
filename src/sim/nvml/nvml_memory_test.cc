// Memory info and running-process lists, across processes.
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "sim/nvml/nvml_test_env.h"

namespace fgpu::sim::nvml {
namespace {

constexpr unsigned long long kGiB = 1ull << 30;
constexpr unsigned long long kDeviceBytes = 16 * kGiB;

class MemoryTest : public NvmlTest {
 protected:
  void SetUp() override {
    NvmlTest::SetUp();
    UseConfig(R"({"devices": [{"count": 2, "memory": "16GiB", "granularity": "2MiB"}]})");
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }

  // The v3 list, or an empty one after a test failure.
  std::vector<nvmlProcessInfo_t> ComputeProcesses(unsigned int device) {
    std::vector<nvmlProcessInfo_t> infos(8);
    auto count = static_cast<unsigned int>(infos.size());
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(device), &count, infos.data()), NVML_SUCCESS);
    infos.resize(count);
    return infos;
  }

  static const nvmlProcessInfo_t* FindPid(const std::vector<nvmlProcessInfo_t>& infos, pid_t pid) {
    auto it = std::find_if(infos.begin(), infos.end(),
                           [&](const nvmlProcessInfo_t& info) { return info.pid == static_cast<unsigned int>(pid); });
    return it == infos.end() ? nullptr : &*it;
  }
};

TEST_F(MemoryTest, IdleDeviceIsAllFree) {
  nvmlMemory_t memory{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, kDeviceBytes);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(memory.free, kDeviceBytes);
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(ComputeProcesses(0).empty());
}

TEST_F(MemoryTest, MemoryInfoV2ChecksTheVersion) {
  auto shared = AttachFromEnvironment();
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  ASSERT_TRUE((*shared)->TryCharge(1, 3 * kGiB));

  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(Device(1), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.version, nvmlMemory_v2);
  EXPECT_EQ(memory.total, kDeviceBytes);
  EXPECT_EQ(memory.reserved, 0u);
  EXPECT_EQ(memory.used, 3 * kGiB);
  EXPECT_EQ(memory.free, kDeviceBytes - 3 * kGiB);

  for (unsigned int wrong : {0u, 1u << 24 | 40u, 2u << 24 | 32u, nvmlMemory_v2 + (1u << 24)}) {
    nvmlMemory_v2_t stale{};
    stale.version = wrong;
    EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(Device(1), &stale), NVML_ERROR_ARGUMENT_VERSION_MISMATCH) << wrong;
    EXPECT_EQ(stale.total, 0u) << "nothing written on a version mismatch";
  }
  EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(Device(1), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  (*shared)->Credit(1, 3 * kGiB);
}

TEST_F(MemoryTest, ThisProcessChargesAreListedAndReturned) {
  auto shared = AttachFromEnvironment();
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  ASSERT_TRUE((*shared)->TryCharge(0, 2 * kGiB));

  nvmlMemory_t memory{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 2 * kGiB);
  EXPECT_EQ(memory.free, kDeviceBytes - 2 * kGiB);
  const auto infos = ComputeProcesses(0);
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].pid, static_cast<unsigned int>(::getpid()));
  EXPECT_EQ(infos[0].usedGpuMemory, 2 * kGiB);
  EXPECT_TRUE(ComputeProcesses(1).empty()) << "charges are per device";

  (*shared)->Credit(0, 2 * kGiB);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_TRUE(ComputeProcesses(0).empty());
}

TEST_F(MemoryTest, ForkedChildChargeIsVisibleUntilItIsKilled) {
  ChildProcess child([](SharedDevices& shared) { return shared.TryCharge(0, 5 * kGiB); });
  ASSERT_TRUE(child.WaitReady());

  nvmlMemory_t memory{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 5 * kGiB);
  EXPECT_EQ(memory.free, kDeviceBytes - 5 * kGiB);

  const auto v3 = ComputeProcesses(0);
  const nvmlProcessInfo_t* found = FindPid(v3, child.pid());
  ASSERT_NE(found, nullptr) << "child pid " << child.pid();
  EXPECT_EQ(found->usedGpuMemory, 5 * kGiB);
  EXPECT_EQ(found->gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(found->computeInstanceId, 0xFFFFFFFFu);

  nvmlProcessInfo_v1_t v1[4]{};
  unsigned int count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses(Device(0), &count, v1), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(v1[0].pid, static_cast<unsigned int>(child.pid()));
  EXPECT_EQ(v1[0].usedGpuMemory, 5 * kGiB);

  nvmlProcessInfo_v2_t v2[4]{};
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v2(Device(0), &count, v2), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(v2[0].pid, static_cast<unsigned int>(child.pid()));
  EXPECT_EQ(v2[0].usedGpuMemory, 5 * kGiB);
  EXPECT_EQ(v2[0].gpuInstanceId, 0xFFFFFFFFu);

  child.KillAndReap();
  EXPECT_TRUE(ComputeProcesses(0).empty()) << "a dead process's charge is reclaimed";
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(Device(0), &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 0u);
}

TEST_F(MemoryTest, ProcessListSizing) {
  unsigned int count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(0), &count, nullptr), NVML_SUCCESS)
      << "nothing to list: the sizing call succeeds";
  EXPECT_EQ(count, 0u);

  ChildProcess first([](SharedDevices& shared) { return shared.TryCharge(0, kGiB); });
  ChildProcess second([](SharedDevices& shared) { return shared.TryCharge(0, 2 * kGiB); });
  ASSERT_TRUE(first.WaitReady());
  ASSERT_TRUE(second.WaitReady());

  count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(0), &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  nvmlProcessInfo_t one[1]{};
  count = 1;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(0), &count, one), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  count = 1;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(0), &count, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(Device(0), nullptr, one), NVML_ERROR_INVALID_ARGUMENT);

  const auto infos = ComputeProcesses(0);
  ASSERT_EQ(infos.size(), 2u);
  ASSERT_NE(FindPid(infos, first.pid()), nullptr);
  ASSERT_NE(FindPid(infos, second.pid()), nullptr);
  EXPECT_EQ(FindPid(infos, first.pid())->usedGpuMemory, kGiB);
  EXPECT_EQ(FindPid(infos, second.pid())->usedGpuMemory, 2 * kGiB);
}

TEST_F(MemoryTest, GraphicsAndMpsListsAreEmpty) {
  ChildProcess child([](SharedDevices& shared) { return shared.TryCharge(0, kGiB); });
  ASSERT_TRUE(child.WaitReady());
  nvmlProcessInfo_t infos[4]{};
  nvmlProcessInfo_v2_t infos_v2[4]{};
  nvmlProcessInfo_v1_t infos_v1[4]{};
  unsigned int count = 4;
  EXPECT_EQ(nvmlDeviceGetGraphicsRunningProcesses_v3(Device(0), &count, infos), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 4;
  EXPECT_EQ(nvmlDeviceGetGraphicsRunningProcesses_v2(Device(0), &count, infos_v2), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 4;
  EXPECT_EQ(nvmlDeviceGetGraphicsRunningProcesses(Device(0), &count, infos_v1), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 4;
  EXPECT_EQ(nvmlDeviceGetMPSComputeRunningProcesses_v3(Device(0), &count, infos), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 4;
  EXPECT_EQ(nvmlDeviceGetMPSComputeRunningProcesses_v2(Device(0), &count, infos_v2), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 0;
  EXPECT_EQ(nvmlDeviceGetMPSComputeRunningProcesses(Device(0), &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(nvmlDeviceGetMPSComputeRunningProcesses(Device(0), nullptr, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace fgpu::sim::nvml
