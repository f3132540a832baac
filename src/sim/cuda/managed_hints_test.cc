// Tests of the unified-memory hints: cuMemAdvise[_v2] recorded per page and read back by
// cuMemRangeGetAttribute[s] (with the last prefetch location), and cuStreamAttachMemAsync's
// validation. Each test runs in a forked child on two simulated devices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kManagedHintsConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunManagedHintsSim(const std::function<std::string()>& body) {
  return RunWithConfig(kManagedHintsConfig, "managed-hints-test", body);
}

CUmemLocation ManagedHintsDevice(int id) {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = id;
  return location;
}

CUmemLocation ManagedHintsHost() {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_HOST;
  return location;
}

int RangeInt(CUmem_range_attribute attribute, CUdeviceptr ptr, size_t count) {
  int value = -100;
  if (cuMemRangeGetAttribute(&value, sizeof value, attribute, ptr, count) != CUDA_SUCCESS) return -101;
  return value;
}

TEST(SimManagedHints, AdviceIsReadBackPerRange) {
  EXPECT_EQ(RunManagedHintsSim([] {
    PrimaryContext ctx(0);
    FGPU_REQUIRE(ctx.ok());
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = 16 * page;
    CUdeviceptr ptr = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);

    // Nothing advised: every attribute reads its "none".
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr, bytes) == 0);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ptr, bytes) == CU_DEVICE_INVALID);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, ptr, bytes) ==
                 CU_MEM_LOCATION_TYPE_INVALID);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ptr, bytes) == CU_DEVICE_INVALID);

    // Read-mostly on the first half (the end rounded up to a page): all of it, not the whole.
    FGPU_REQUIRE_CU(cuMemAdvise(ptr, 8 * page - 1, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr, 8 * page) == 1);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr + page, 1) == 1);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr, bytes) == 0);
    FGPU_REQUIRE_CU(cuMemAdvise_v2(ptr, page, CU_MEM_ADVISE_UNSET_READ_MOSTLY, ManagedHintsHost()), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr, 8 * page) == 0);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr + page, 7 * page) == 1);

    // Preferred location: device 1 over the whole range, then the host over its second half.
    FGPU_REQUIRE_CU(cuMemAdvise_v2(ptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, ManagedHintsDevice(1)),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ptr, bytes) == 1);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, ptr, bytes) == CU_MEM_LOCATION_TYPE_DEVICE);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, ptr, bytes) == 1);
    FGPU_REQUIRE_CU(cuMemAdvise(ptr + 8 * page, 8 * page, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ptr, bytes) == CU_DEVICE_INVALID);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ptr + 9 * page, page) == CU_DEVICE_CPU);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, ptr + 9 * page, page) ==
                 CU_MEM_LOCATION_TYPE_HOST);
    FGPU_REQUIRE_CU(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, ptr + 9 * page, page) == CU_DEVICE_INVALID);

    // Accessed-by: devices (and the host) advised over the whole range, then CU_DEVICE_INVALID.
    FGPU_REQUIRE_CU(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAdvise_v2(ptr, 4 * page, CU_MEM_ADVISE_SET_ACCESSED_BY, ManagedHintsDevice(0)),
                    CUDA_SUCCESS);
    int ids[3] = {7, 7, 7};
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ptr, bytes),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(ids[0] == 1 && ids[1] == CU_DEVICE_INVALID && ids[2] == CU_DEVICE_INVALID);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ptr, page),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(ids[0] == 0 && ids[1] == 1 && ids[2] == CU_DEVICE_INVALID);
    FGPU_REQUIRE_CU(cuMemAdvise(ptr, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ptr, page),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(ids[0] == 0 && ids[1] == CU_DEVICE_INVALID);

    // Last prefetch location: where all of the range was last asked to go.
    FGPU_REQUIRE_CU(cuMemPrefetchAsync(ptr, bytes, 1, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ptr, bytes) == 1);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_v2(ptr, page, ManagedHintsHost(), 0, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ptr, bytes) == CU_DEVICE_INVALID);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, ptr, page) == CU_DEVICE_CPU);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, ptr + page, page) ==
                 CU_MEM_LOCATION_TYPE_DEVICE);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, ptr + page, page) == 1);

    // Several at once.
    int read_mostly = -1, preferred = -1, prefetched = -1;
    void* data[3] = {&read_mostly, &preferred, &prefetched};
    size_t sizes[3] = {4, 4, 4};
    CUmem_range_attribute attributes[3] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                           CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                                           CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION};
    FGPU_REQUIRE_CU(cuMemRangeGetAttributes(data, sizes, attributes, 3, ptr + 2 * page, page), CUDA_SUCCESS);
    FGPU_REQUIRE(read_mostly == 1 && preferred == CU_DEVICE_INVALID && prefetched == 1);

    // A new allocation at the same address starts with no advice.
    FGPU_REQUIRE_CU(cuMemFree_v2(ptr), CUDA_SUCCESS);
    CUdeviceptr again = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&again, bytes, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, again, page) == 0);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, again, page) == CU_DEVICE_INVALID);
    FGPU_REQUIRE_CU(cuMemFree_v2(again), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimManagedHints, RefusalsAreTheDriversErrors) {
  EXPECT_EQ(RunManagedHintsSim([] {
    int value = 0;
    FGPU_REQUIRE_CU(cuMemAdvise(0, 1, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 0, 1),
                    CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx(0);
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr managed = 0, plain = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&plain, 1 << 20), CUDA_SUCCESS);
    // Only managed memory, wholly inside one allocation, of a non-zero size.
    FGPU_REQUIRE_CU(cuMemAdvise(plain, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemAdvise(managed, (1 << 20) + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemAdvise(managed, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemAdvise(managed, 4096, static_cast<CUmem_advise>(7), 0), CUDA_ERROR_INVALID_VALUE);
    // Locations: a device that does not exist, a NUMA type for accessed-by.
    FGPU_REQUIRE_CU(cuMemAdvise(managed, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 5), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuMemAdvise(managed, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, 2), CUDA_ERROR_INVALID_DEVICE);
    CUmemLocation numa{};
    numa.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    FGPU_REQUIRE_CU(cuMemAdvise_v2(managed, 4096, CU_MEM_ADVISE_SET_ACCESSED_BY, numa), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemAdvise_v2(managed, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa), CUDA_SUCCESS);
    FGPU_REQUIRE(RangeInt(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, managed, 4096) ==
                 CU_MEM_LOCATION_TYPE_HOST_NUMA);
    // Queries: sizes as documented, a NULL output, an unknown attribute, plain memory.
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&value, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed, 4096),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&value, 6, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, managed, 4096),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(nullptr, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed, 4096),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&value, 4, static_cast<CUmem_range_attribute>(15), managed, 4096),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, plain, 4096),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemRangeGetAttributes(nullptr, nullptr, nullptr, 1, managed, 4096), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(plain), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimManagedHints, StreamAttachmentIsValidated) {
  EXPECT_EQ(RunManagedHintsSim([] {
    PrimaryContext ctx(0);
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr managed = 0, plain = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&plain, 1 << 20), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(stream, managed, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(stream, managed, 1 << 20, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync_ptsz(nullptr, managed, 0, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    // Not to a default stream singly; the whole allocation or nothing; valid flags; managed memory.
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(nullptr, managed, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(stream, managed, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(stream, managed, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(stream, plain, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamAttachMemAsync(reinterpret_cast<CUstream>(&managed), managed, 0, CU_MEM_ATTACH_GLOBAL),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(plain), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
