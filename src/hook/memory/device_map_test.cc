#include "hook/memory/device_map.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "hook/memory/memory_test_support.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::FakeUuidText;
using testing::TestSlice;

DeviceMapSources Sources(const TestSlice& slice, const RealCalls& calls) {
  return DeviceMapSources{slice.ledger(), calls.device_get_uuid, calls.allocation_granularity,
                          calls.nvml_device_get_uuid};
}

TEST(DeviceMapTest, FormatsUuidsAsNvmlDoes) {
  CUuuid uuid{};
  const unsigned char bytes[16] = {0x29, 0x8e, 0xb0, 0xa9, 0x03, 0x82, 0x50, 0x8d,
                                   0xf5, 0x3d, 0x1d, 0x6b, 0x45, 0x75, 0x42, 0x93};
  std::memcpy(uuid.bytes, bytes, 16);
  char text[kUuidTextBytes];
  FormatUuid(uuid, text);
  EXPECT_STREQ(text, "GPU-298eb0a9-0382-508d-f53d-1d6b45754293");
}

// CUDA_VISIBLE_DEVICES reordered: CUDA ordinal 0 is the slice's second device and vice versa.
TEST(DeviceMapTest, MapsByUuidNotByOrdinal) {
  FakeDriver fake;
  TestSlice slice({1, 0}, {100 * kMiB, 200 * kMiB});
  const RealCalls calls = fake.Calls();
  DeviceMap map(Sources(slice, calls));
  CudaDeviceFacts facts;
  ASSERT_TRUE(map.Cuda(0, &facts));
  EXPECT_EQ(facts.slice_device, 1);
  EXPECT_EQ(facts.granularity, 2 * kMiB);
  EXPECT_EQ(std::string(facts.uuid), FakeUuidText(0));
  ASSERT_TRUE(map.Cuda(1, &facts));
  EXPECT_EQ(facts.slice_device, 0);

  int slice_device = -5;
  ASSERT_TRUE(map.Nvml(reinterpret_cast<nvmlDevice_t>(uintptr_t{501}), &slice_device));
  EXPECT_EQ(slice_device, 0);
  ASSERT_TRUE(map.Nvml(reinterpret_cast<nvmlDevice_t>(uintptr_t{500}), &slice_device));
  EXPECT_EQ(slice_device, 1);
}

// A slice on a MIG instance names it "MIG-…"; CUDA gives the same 16 bytes.
TEST(DeviceMapTest, AMigInstanceIsFoundByItsMigUuid) {
  FakeDriver fake;
  std::string mig = FakeUuidText(1);
  mig.replace(0, 3, "MIG");
  TestSlice slice(TestSlice::kByUuid, {mig}, {100 * kMiB});
  const RealCalls calls = fake.Calls();
  DeviceMap map(Sources(slice, calls));
  CudaDeviceFacts facts;
  ASSERT_TRUE(map.Cuda(1, &facts));
  EXPECT_EQ(facts.slice_device, 0);
  EXPECT_EQ(std::string(facts.uuid), mig);
  ASSERT_TRUE(map.Cuda(0, &facts));
  EXPECT_EQ(facts.slice_device, kNotInSlice);
  EXPECT_EQ(std::string(facts.uuid), FakeUuidText(0)) << "a device outside the slice keeps NVML's GPU- form";
}

TEST(DeviceMapTest, DeviceOutsideTheSliceAndInvalidDevices) {
  FakeDriver fake;
  fake.device_count = 3;
  TestSlice slice({0}, {100 * kMiB});
  const RealCalls calls = fake.Calls();
  DeviceMap map(Sources(slice, calls));
  CudaDeviceFacts facts;
  ASSERT_TRUE(map.Cuda(2, &facts));
  EXPECT_EQ(facts.slice_device, kNotInSlice);
  EXPECT_FALSE(map.Cuda(7, &facts)) << "the driver cannot name it";
  EXPECT_FALSE(map.Cuda(-1, &facts));
  EXPECT_FALSE(map.Cuda(100000, &facts)) << "beyond the cache: resolved (and failing) every time";
}

TEST(DeviceMapTest, CachesAfterTheFirstResolution) {
  FakeDriver fake;
  TestSlice slice({0, 1}, {100 * kMiB, 100 * kMiB});
  RealCalls calls = fake.Calls();
  static std::atomic<int> queries{0};
  queries = 0;
  calls.device_get_uuid = [](CUuuid* uuid, CUdevice device) {
    ++queries;
    for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(device * 16 + i);
    return CUDA_SUCCESS;
  };
  fake.granularity = uint64_t{64} * 1024;
  DeviceMap map(Sources(slice, calls));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&map] {
      for (int i = 0; i < 1000; ++i) {
        CudaDeviceFacts facts;
        ASSERT_TRUE(map.Cuda(i % 2, &facts));
        ASSERT_EQ(facts.slice_device, i % 2);
        ASSERT_EQ(facts.granularity, 64u * 1024);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(queries.load(), 8) << "at most one resolution per device per racing thread";
}

TEST(DeviceMapTest, GranularityFallsBackWhenTheDriverCannotSay) {
  FakeDriver fake;
  TestSlice slice({0}, {100 * kMiB});
  RealCalls calls = fake.Calls();
  calls.allocation_granularity = nullptr;
  DeviceMap map(Sources(slice, calls));
  CudaDeviceFacts facts;
  ASSERT_TRUE(map.Cuda(0, &facts));
  EXPECT_EQ(facts.granularity, kFallbackGranularity);
}

}  // namespace
}  // namespace fgpu::hook
