#include "k8s/dra/resource_slice.h"

#include <gtest/gtest.h>

#include "k8s/dra/quantity.h"

namespace fgpu::k8s {
namespace {

PublishedGpu H100(int index, const std::string& uuid) {
  PublishedGpu gpu;
  gpu.uuid = uuid;
  gpu.index = index;
  gpu.product = "NVIDIA H100 80GB HBM3";
  gpu.memory_bytes = 85520809984;  // what NVML reports: 81559 MiB
  gpu.compute_capability = "9.0";
  gpu.driver_version = "535.104.05";
  gpu.mig_capable = true;
  return gpu;
}

TEST(ResourceSliceTest, OneSharedDevicePerGpuWithConsumableMemoryAndCompute) {
  const auto slice = BuildResourceSlice("node-a", 3, {H100(1, "GPU-BBBB-2"), H100(0, "GPU-aaaa-1")}, {});
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["kind"], "ResourceSlice");
  EXPECT_EQ(slice["metadata"]["name"], "node-a-gpu.fgpu.io");
  const auto& spec = slice["spec"];
  EXPECT_EQ(spec["driver"], "gpu.fgpu.io");
  EXPECT_EQ(spec["nodeName"], "node-a");
  EXPECT_EQ(spec["pool"]["name"], "node-a");
  EXPECT_EQ(spec["pool"]["generation"], 3);
  EXPECT_EQ(spec["pool"]["resourceSliceCount"], 1);
  ASSERT_EQ(spec["devices"].size(), 2u);
  const auto& device = spec["devices"][0];  // index order
  EXPECT_EQ(device["name"], "gpu-aaaa-1");
  EXPECT_EQ(device["allowMultipleAllocations"], true);
  EXPECT_EQ(device["attributes"]["uuid"]["string"], "GPU-aaaa-1");
  EXPECT_EQ(device["attributes"]["index"]["int"], 0);
  EXPECT_EQ(device["attributes"]["productName"]["string"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(device["attributes"]["driverVersion"]["version"], "535.104.5");
  EXPECT_EQ(device["attributes"]["cudaComputeCapability"]["version"], "9.0.0");
  EXPECT_EQ(device["attributes"]["migCapable"]["bool"], true);
  const auto& memory = device["capacity"]["memory"];
  EXPECT_EQ(memory["value"], "81559Mi");
  EXPECT_EQ(memory["requestPolicy"]["default"], "81559Mi");
  EXPECT_EQ(memory["requestPolicy"]["validRange"]["min"], "256Mi");
  EXPECT_EQ(memory["requestPolicy"]["validRange"]["step"], "1Mi");
  const auto& compute = device["capacity"]["compute"];
  EXPECT_EQ(compute["value"], "100");
  EXPECT_EQ(compute["requestPolicy"]["validRange"]["min"], "1");
}

TEST(ResourceSliceTest, TheRangesDefaultAndMaxAreOnAStep) {
  CapacityPolicy policy;
  policy.memory_min_bytes = uint64_t{1} << 30;
  policy.memory_step_bytes = uint64_t{512} << 20;
  const uint64_t published = PublishedMemory(85520809984, policy);
  EXPECT_LE(published, 85520809984u);
  EXPECT_EQ((published - policy.memory_min_bytes) % policy.memory_step_bytes, 0u);
  EXPECT_GT(published + policy.memory_step_bytes, 85520809984u);
  EXPECT_EQ(PublishedMemory(100, policy), 0u);
}

TEST(ResourceSliceTest, UnhealthyExclusiveAndTooSmallGpusAreNotPublished) {
  PublishedGpu sick = H100(0, "GPU-1"), exclusive = H100(1, "GPU-2"), tiny = H100(2, "GPU-3"), fine = H100(3, "GPU-4");
  sick.healthy = false;
  exclusive.shareable = false;
  tiny.memory_bytes = 1 << 20;
  const auto slice = BuildResourceSlice("n", 1, {sick, exclusive, tiny, fine}, {});
  ASSERT_EQ(slice["spec"]["devices"].size(), 1u);
  EXPECT_EQ(slice["spec"]["devices"][0]["name"], "gpu-4");
}

TEST(ResourceSliceTest, UnknownVersionsAreLeftOutRatherThanMalformed) {
  PublishedGpu gpu = H100(0, "GPU-1");
  gpu.driver_version = "r550-beta";
  gpu.compute_capability.clear();
  const auto device = BuildResourceSlice("n", 1, {gpu}, {})["spec"]["devices"][0];
  EXPECT_FALSE(device["attributes"].contains("driverVersion"));
  EXPECT_FALSE(device["attributes"].contains("cudaComputeCapability"));
}

TEST(ResourceSliceTest, MigInstancesAreDevicesWithTheirProfileAndGpu) {
  PublishedGpu instance;
  instance.uuid = "MIG-5560A2F0-04b1-31b3-4e0e-1f2eea8d1094";
  instance.index = 1;
  instance.memory_bytes = uint64_t{40} << 30;
  instance.parent_uuid = "GPU-cccc";
  instance.mig_profile = "3g.40gb";
  instance.mig_start = 4;
  const nlohmann::json slice = BuildResourceSlice("node-a", 1, {instance}, {});
  const nlohmann::json& device = slice["spec"]["devices"][0];
  EXPECT_EQ(device["name"], "mig-5560a2f0-04b1-31b3-4e0e-1f2eea8d1094");
  EXPECT_EQ(device["attributes"]["type"]["string"], "mig");
  EXPECT_EQ(device["attributes"]["migProfile"]["string"], "3g.40gb");
  EXPECT_EQ(device["attributes"]["parentUUID"]["string"], "GPU-cccc");
  EXPECT_EQ(device["attributes"]["migStart"]["int"], 4);
  EXPECT_EQ(device["capacity"]["memory"]["value"], "40Gi");
}

TEST(ResourceSliceTest, DeviceNamesAreDnsLabels) {
  EXPECT_EQ(DeviceNameOf("GPU-8F2C1D2E-0000-1111-2222-333344445555"), "gpu-8f2c1d2e-0000-1111-2222-333344445555");
  const std::string odd = DeviceNameOf("GPU-" + std::string(80, 'A') + "_x");
  EXPECT_LE(odd.size(), 63u);
  EXPECT_NE(odd.back(), '-');
  EXPECT_EQ(DeviceNameOf("GPU-a_b"), "gpu-a-b");
  EXPECT_EQ(SemverOf("550.54.15"), "550.54.15");
  EXPECT_EQ(SemverOf("12.4"), "12.4.0");
  EXPECT_EQ(SemverOf("1.2.3.4"), "");
  EXPECT_EQ(SemverOf("580.00.00-fgpu-sim"), "580.0.0-fgpu-sim");
  EXPECT_EQ(SemverOf("580.1.2-"), "");
  EXPECT_EQ(SemverOf("580.1.2-a b"), "");
  EXPECT_EQ(SemverOf(""), "");
}

TEST(ResourceSliceTest, LongNodeNamesGiveAValidObjectName) {
  const std::string node(250, 'n');
  const std::string name = ResourceSliceName(node);
  EXPECT_LE(name.size(), 253u);
  EXPECT_NE(name, ResourceSliceName(std::string(249, 'n') + "m"));
}

}  // namespace
}  // namespace fgpu::k8s
