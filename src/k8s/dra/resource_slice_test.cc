#include "k8s/dra/resource_slice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/mig_profiles.h"
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


PublishedGpu DynamicH100(int index, const std::string& uuid) {
  PublishedGpu gpu = H100(index, uuid);
  gpu.mig_dynamic = true;
  return gpu;
}

// KEP-4815: a dynamic MIG GPU is a counter set (a counter per memory slice, one for the media
// extensions) in an object of its own, and every placement of every profile a device consuming
// the slices it covers; its instances and the GPU itself are not devices.
TEST(ResourcePoolTest, ADynamicMigGpuIsACounterSetAndItsPlacements) {
  PublishedGpu instance = H100(1, "MIG-cccc");
  instance.parent_uuid = "GPU-bbbb";
  instance.mig_profile = "3g.40gb";
  const std::vector<nlohmann::json> pool =
      BuildResourcePool("node-a", 4, {H100(0, "GPU-aaaa"), DynamicH100(1, "GPU-bbbb"), instance}, {});
  ASSERT_EQ(pool.size(), 3u);
  for (const nlohmann::json& object : pool) {
    EXPECT_EQ(object["spec"]["pool"]["generation"], 4);
    EXPECT_EQ(object["spec"]["pool"]["resourceSliceCount"], 3);
    EXPECT_EQ(object["spec"]["pool"]["name"], "node-a");
  }
  EXPECT_EQ(pool[0]["metadata"]["name"], "node-a-gpu.fgpu.io");
  ASSERT_EQ(pool[0]["spec"]["devices"].size(), 1u) << "the shared GPU only";
  EXPECT_EQ(pool[0]["spec"]["devices"][0]["name"], "gpu-aaaa");
  EXPECT_EQ(pool[1]["metadata"]["name"], "node-a-gpu.fgpu.io-counters-0");
  EXPECT_FALSE(pool[1]["spec"].contains("devices"));
  const nlohmann::json& set = pool[1]["spec"]["sharedCounters"][0];
  EXPECT_EQ(set["name"], "gpu-bbbb-counters");
  EXPECT_EQ(set["counters"].size(), 9u);
  EXPECT_EQ(set["counters"]["memory-slice-0"]["value"], "1");
  EXPECT_EQ(pool[2]["metadata"]["name"], "node-a-gpu.fgpu.io-mig-0");
  const nlohmann::json& devices = pool[2]["spec"]["devices"];
  std::set<std::string> names;
  size_t placements = 0;
  for (const mig::Profile& profile : mig::InfoOf(mig::Model::kH100_80GB).profiles) {
    for (int start = 0; start < mig::kMemorySlices; ++start) placements += profile.CanStartAt(start) ? 1 : 0;
  }
  ASSERT_EQ(devices.size(), placements);
  for (const nlohmann::json& device : devices) {
    names.insert(device["name"].get<std::string>());
    EXPECT_FALSE(device.contains("allowMultipleAllocations")) << "a placement is one claim's whole";
    EXPECT_EQ(device["attributes"]["type"]["string"], "mig");
    EXPECT_EQ(device["attributes"]["parentUUID"]["string"], "GPU-bbbb");
    EXPECT_EQ(device["consumesCounters"][0]["counterSet"], "gpu-bbbb-counters");
  }
  EXPECT_EQ(names.size(), devices.size()) << "names are unique";
  const auto three = std::find_if(devices.begin(), devices.end(), [](const nlohmann::json& d) { return d["name"] == "gpu-bbbb-3g-40gb-4"; });
  ASSERT_NE(three, devices.end());
  EXPECT_EQ((*three)["attributes"]["migProfile"]["string"], "3g.40gb");
  EXPECT_EQ((*three)["attributes"]["migStart"]["int"], 4);
  EXPECT_EQ((*three)["capacity"]["memory"]["value"], FormatQuantity(mig::FindProfileByName(mig::InfoOf(mig::Model::kH100_80GB), "3g.40gb")->memory_bytes, true));
  const nlohmann::json& consumed = (*three)["consumesCounters"][0]["counters"];
  EXPECT_EQ(consumed.size(), 4u);
  for (const char* slot : {"memory-slice-4", "memory-slice-5", "memory-slice-6", "memory-slice-7"}) {
    EXPECT_EQ(consumed[slot]["value"], "1") << slot;
  }
  const std::vector<MigPlacement> listed = PlacementsOf(DynamicH100(1, "GPU-bbbb"));
  ASSERT_EQ(listed.size(), placements);
  EXPECT_TRUE(PlacementsOf(H100(0, "GPU-aaaa")).empty());
}

// Without a dynamic GPU the pool is the one object it always was.
TEST(ResourcePoolTest, WithoutDynamicGpusThePoolIsOneObject) {
  const std::vector<nlohmann::json> pool = BuildResourcePool("node-a", 2, {H100(0, "GPU-aaaa")}, {});
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool[0], BuildResourceSlice("node-a", 2, {H100(0, "GPU-aaaa")}, {}));
}

// Many dynamic GPUs: at most 8 counter sets and 64 devices to an object, every set named once.
TEST(ResourcePoolTest, ManyDynamicGpusSplitIntoObjectsWithinTheLimits) {
  std::vector<PublishedGpu> gpus;
  for (int i = 0; i < 10; ++i) gpus.push_back(DynamicH100(i, "GPU-" + std::to_string(1000 + i)));
  const std::vector<nlohmann::json> pool = BuildResourcePool("node-a", 1, gpus, {});
  std::set<std::string> sets;
  size_t devices = 0, counter_objects = 0;
  for (const nlohmann::json& object : pool) {
    EXPECT_EQ(object["spec"]["pool"]["resourceSliceCount"], static_cast<int64_t>(pool.size()));
    if (object["spec"].contains("sharedCounters")) {
      ++counter_objects;
      EXPECT_LE(object["spec"]["sharedCounters"].size(), 8u);
      for (const nlohmann::json& set : object["spec"]["sharedCounters"]) EXPECT_TRUE(sets.insert(set["name"]).second);
    } else {
      EXPECT_LE(object["spec"]["devices"].size(), object == pool[0] ? 128u : 64u);
      devices += object["spec"]["devices"].size();
    }
  }
  EXPECT_EQ(counter_objects, 2u);
  EXPECT_EQ(sets.size(), 10u);
  EXPECT_EQ(devices, 10 * PlacementsOf(gpus[0]).size());
}

// Memory slices that instances made outside Kubernetes hold are published as spent (0).
TEST(ResourcePoolTest, SlicesTakenOutsideKubernetesAreSpentCounters) {
  PublishedGpu gpu = DynamicH100(1, "GPU-bbbb");
  gpu.mig_foreign_slices = 0xF0;  // a 3g.40gb at 4, held by fgpu run
  const std::vector<nlohmann::json> pool = BuildResourcePool("node-a", 1, {gpu}, {});
  const nlohmann::json& counters = pool[1]["spec"]["sharedCounters"][0]["counters"];
  EXPECT_EQ(counters["memory-slice-3"]["value"], "1");
  EXPECT_EQ(counters["memory-slice-4"]["value"], "0");
  EXPECT_EQ(counters["memory-slice-7"]["value"], "0");
}

// The counters say exactly what the MIG placement rules say, on every model: a set of placements
// the counters admit (no memory slice twice, one media instance) is a valid geometry, and so the
// scheduler can never allocate two placements the GPU could not hold together.
TEST(ResourcePoolTest, WhatTheCountersAdmitIsAValidGeometryOnEveryModel) {
  for (const mig::ModelInfo& model : mig::Models()) {
    std::vector<mig::Placed> placements;
    for (const mig::Profile& profile : model.profiles) {
      for (int start = 0; start < mig::kMemorySlices; ++start) {
        if (profile.CanStartAt(start)) placements.push_back({profile.id, start});
      }
    }
    int geometries = 0;
    // Every set the counters admit, grown one placement at a time in order (each set once).
    std::vector<mig::Placed> chosen;
    std::function<void(size_t, uint8_t, bool)> grow = [&](size_t from, uint8_t used, bool media) {
      ++geometries;
      ASSERT_EQ(mig::CheckGeometry(model, chosen), mig::GeometryError::kNone) << model.name;
      for (size_t i = from; i < placements.size(); ++i) {
        const mig::Profile* profile = mig::FindProfile(model, placements[i].profile_id);
        const uint8_t covers = profile->Occupies(placements[i].start);
        if ((covers & used) != 0 || (profile->media && media)) continue;
        chosen.push_back(placements[i]);
        grow(i + 1, static_cast<uint8_t>(used | covers), media || profile->media);
        chosen.pop_back();
      }
    };
    grow(0, 0, false);
    EXPECT_GT(geometries, 100) << model.name;
  }
}
}  // namespace
}  // namespace fgpu::k8s
