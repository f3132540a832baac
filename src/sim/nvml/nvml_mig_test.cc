// The simulated NVML's MIG API on an H100 80GB: profiles, placements, instances, capacity,
// errors, MIG device handles.
#include <stdlib.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/abi/nvml_api.h"
#include "sim/nvml/nvml_test_env.h"

namespace fgpu::sim::nvml {
namespace {

class MigTest : public NvmlTest {
 protected:
  void SetUp() override {
    NvmlTest::SetUp();
    ::setenv("FGPU_SIM_MIG_PRIVILEGED", "1", 1);
    UseConfig(R"({"devices": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA L4", "memory": "24GiB"}]})");
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }
  void TearDown() override {
    ::unsetenv("FGPU_SIM_MIG_PRIVILEGED");
    NvmlTest::TearDown();
  }
  void EnableMig() {
    nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
    ASSERT_EQ(nvmlDeviceSetMigMode(Device(0), NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    ASSERT_EQ(activation, NVML_SUCCESS);
  }
};

TEST_F(MigTest, ModeAndCapability) {
  unsigned current = 9, pending = 9;
  ASSERT_EQ(nvmlDeviceGetMigMode(Device(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(nvmlDeviceGetMigMode(Device(1), &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(nvmlDeviceSetMigMode(Device(1), NVML_DEVICE_MIG_ENABLE, &activation), NVML_ERROR_NOT_SUPPORTED);
  ::setenv("FGPU_SIM_MIG_PRIVILEGED", "0", 1);
  EXPECT_EQ(nvmlDeviceSetMigMode(Device(0), NVML_DEVICE_MIG_ENABLE, &activation), NVML_ERROR_NO_PERMISSION);
  ::setenv("FGPU_SIM_MIG_PRIVILEGED", "1", 1);
  EnableMig();
  ASSERT_EQ(nvmlDeviceGetMigMode(Device(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 1u);
}

TEST_F(MigTest, ProfilesAndPlacementsAreNvidias) {
  nvmlGpuInstanceProfileInfo_t info{};
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(Device(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);  // MIG disabled
  EnableMig();
  ASSERT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(Device(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 9u);
  EXPECT_EQ(info.sliceCount, 3u);
  EXPECT_EQ(info.instanceCount, 2u);
  EXPECT_EQ(info.multiprocessorCount, 60u);
  EXPECT_EQ(info.memorySizeMB, 40448u);
  nvmlGpuInstanceProfileInfo_v3_t v3{};
  v3.version = nvmlGpuInstanceProfileInfo_v3;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceProfileInfoV(Device(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
                                                 reinterpret_cast<nvmlGpuInstanceProfileInfo_v2_t*>(&v3)),
            NVML_SUCCESS);
  EXPECT_EQ(v3.id, 15u);
  EXPECT_STREQ(v3.name, "MIG 1g.20gb");
  nvmlGpuInstanceProfileInfo_v2_t bad{};
  bad.version = 1;
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfoV(Device(0), 0, &bad), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(Device(0), NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);

  // cuda.md §4.3, nvidia-smi mig -lgipp.
  const std::vector<std::pair<unsigned, std::vector<unsigned>>> expected = {
      {19, {0, 1, 2, 3, 4, 5, 6}}, {20, {0, 1, 2, 3, 4, 5, 6}}, {15, {0, 2, 4, 6}}, {14, {0, 2, 4}},
      {9, {0, 4}},                 {5, {0}},                    {0, {0}}};
  for (const auto& [profile, starts] : expected) {
    unsigned count = 0;
    ASSERT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(Device(0), profile, nullptr, &count), NVML_SUCCESS);
    ASSERT_EQ(count, starts.size()) << profile;
    std::vector<nvmlGpuInstancePlacement_t> placements(count);
    ASSERT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(Device(0), profile, placements.data(), &count),
              NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) EXPECT_EQ(placements[i].start, starts[i]) << profile;
  }
}

TEST_F(MigTest, CreateMixCapacityErrorsAndHandles) {
  EnableMig();
  nvmlGpuInstance_t three = nullptr, two_a = nullptr, two_b = nullptr, other = nullptr;
  ASSERT_EQ(nvmlDeviceCreateGpuInstance(Device(0), 9, &three), NVML_SUCCESS);
  const nvmlGpuInstancePlacement_t at0{0, 2}, at2{2, 2}, at1{1, 2}, wrong_size{0, 4};
  ASSERT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(Device(0), 14, &at0, &two_a), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(Device(0), 14, &at2, &two_b), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(Device(0), 14, &at0, &other), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(Device(0), 14, &at1, &other), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(Device(0), 14, &wrong_size, &other), NVML_ERROR_INVALID_ARGUMENT);
  unsigned count = 9;
  for (unsigned profile : {19u, 15u, 14u, 9u, 0u}) {
    ASSERT_EQ(nvmlDeviceGetGpuInstanceRemainingCapacity(Device(0), profile, &count), NVML_SUCCESS);
    EXPECT_EQ(count, 0u) << profile;
  }
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(nvmlGpuInstanceGetInfo(three, &info), NVML_SUCCESS);
  EXPECT_EQ(info.placement.start, 4u);
  EXPECT_EQ(info.placement.size, 4u);
  EXPECT_EQ(info.device, Device(0));

  // A compute instance, its MIG device handle, name, UUID and memory.
  nvmlComputeInstanceProfileInfo_t ci_info{};
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceProfileInfo(three, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                         NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_info),
            NVML_SUCCESS);
  EXPECT_EQ(ci_info.instanceCount, 3u);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(nvmlGpuInstanceCreateComputeInstance(three, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &ci), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceRemainingCapacity(three, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(nvmlGpuInstanceDestroy(three), NVML_ERROR_IN_USE);  // it has a compute instance
  nvmlReturn_t activation = NVML_SUCCESS;
  EXPECT_EQ(nvmlDeviceSetMigMode(Device(0), NVML_DEVICE_MIG_DISABLE, &activation), NVML_ERROR_IN_USE);

  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(Device(0), 0, &mig), NVML_SUCCESS);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(Device(0), 1, &none), NVML_ERROR_NOT_FOUND);
  unsigned is_mig = 0;
  ASSERT_EQ(nvmlDeviceIsMigDeviceHandle(mig, &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 1u);
  ASSERT_EQ(nvmlDeviceIsMigDeviceHandle(Device(0), &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);
  nvmlDevice_t parent = nullptr;
  ASSERT_EQ(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), NVML_SUCCESS);
  EXPECT_EQ(parent, Device(0));
  unsigned gi_id = 0;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceId(mig, &gi_id), NVML_SUCCESS);
  EXPECT_EQ(gi_id, info.id);
  char name[96] = {};
  ASSERT_EQ(nvmlDeviceGetName(mig, name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  char uuid[96] = {};
  char again[96] = {};
  ASSERT_EQ(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetUUID(mig, again, sizeof(again)), NVML_SUCCESS);
  EXPECT_EQ(std::string(uuid).rfind("MIG-", 0), 0u);
  EXPECT_EQ(std::string(uuid).size(), 40u);
  EXPECT_STREQ(uuid, again);
  nvmlMemory_t memory{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(mig, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 40448ull << 20);
  nvmlUtilization_t utilization{};
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(Device(0), &utilization), NVML_ERROR_NOT_SUPPORTED);
  unsigned samples = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(mig, nullptr, &samples, 0), NVML_ERROR_NOT_SUPPORTED);

  ::setenv("FGPU_SIM_MIG_PRIVILEGED", "0", 1);
  EXPECT_EQ(nvmlComputeInstanceDestroy(ci), NVML_ERROR_NO_PERMISSION);
  ::setenv("FGPU_SIM_MIG_PRIVILEGED", "1", 1);
  ASSERT_EQ(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetName(mig, name, sizeof(name)), NVML_ERROR_INVALID_ARGUMENT);  // its instance is gone
  for (nvmlGpuInstance_t gi : {three, two_a, two_b}) EXPECT_EQ(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceSetMigMode(Device(0), NVML_DEVICE_MIG_DISABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
}

}  // namespace
}  // namespace fgpu::sim::nvml
