// Tests of the simulated driver's virtual memory management, stream-ordered pools
// and CUDA arrays, through the exported C ABI, each in a forked child.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr uint64_t kVmmGranule = 2 * kMiB;
constexpr const char* kVmmConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "context_overhead": "300MiB"}]
})";

std::string RunVmmSim(const std::function<std::string()>& body) {
  return RunWithConfig(kVmmConfig, "vmm-pool-test", body);
}

CUmemAllocationProp DeviceProp(int device = 0, unsigned handle_types = 0) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  return prop;
}

CUresult GrantReadWrite(CUdeviceptr ptr, size_t size, int device = 0) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return cuMemSetAccess(ptr, size, &access, 1);
}

// --- virtual memory management ---------------------------------------------------------------

TEST(SimVmm, ChargeFollowsHandleAndMappingsAndDataIsShared) {
  EXPECT_EQ(
      RunVmmSim([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const CUmemAllocationProp prop = DeviceProp();
        size_t granularity = 0;
        FGPU_REQUIRE_CU(
            cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
        FGPU_REQUIRE(granularity == kVmmGranule);
        const uint64_t start = FreeBytes();
        CUmemGenericAllocationHandle handle = 0;
        FGPU_REQUIRE_CU(cuMemCreate(&handle, 3 * kMiB, &prop, 0),
                        CUDA_ERROR_INVALID_VALUE);  // not whole granules
        FGPU_REQUIRE_CU(cuMemCreate(&handle, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);  // charged at creation
        CUdeviceptr va = 0;
        FGPU_REQUIRE_CU(cuMemAddressReserve(&va, 16 * kMiB, 0, 0, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(va % kVmmGranule == 0 && FreeBytes() == start - 4 * kMiB);  // address space is free
        FGPU_REQUIRE_CU(cuMemMap(va, 4 * kMiB, 0, handle, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemMap(va + 8 * kMiB, 4 * kMiB, 0, handle, 0), CUDA_SUCCESS);  // a second view
        const char text[] = "shared through the memfd";
        FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va, text, sizeof(text)), CUDA_ERROR_INVALID_VALUE);  // no access yet
        FGPU_REQUIRE_CU(GrantReadWrite(va, 4 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(GrantReadWrite(va + 8 * kMiB, 4 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va + 100, text, sizeof(text)), CUDA_SUCCESS);
        char back[sizeof(text)] = {};
        FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back, va + 8 * kMiB + 100, sizeof(back)), CUDA_SUCCESS);
        FGPU_REQUIRE(std::strcmp(back, text) == 0);
        // Release with mappings left: nothing is credited until the last unmap.
        FGPU_REQUIRE_CU(cuMemUnmap(va, 4 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);
        FGPU_REQUIRE_CU(cuMemMap(va, 4 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);  // released handle
        CUmemGenericAllocationHandle retained = 0;
        FGPU_REQUIRE_CU(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va + 8 * kMiB + 5)),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(retained == handle);
        CUmemAllocationProp seen{};
        FGPU_REQUIRE_CU(cuMemGetAllocationPropertiesFromHandle(&seen, retained), CUDA_SUCCESS);
        FGPU_REQUIRE(seen.location.type == CU_MEM_LOCATION_TYPE_DEVICE && seen.location.id == 0);
        FGPU_REQUIRE_CU(cuMemRelease(retained), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemRelease(retained), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemUnmap(va + 8 * kMiB, 4 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back, va + 8 * kMiB, 1), CUDA_ERROR_INVALID_VALUE);  // unmapped again
        FGPU_REQUIRE_CU(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // size must match
        FGPU_REQUIRE_CU(cuMemAddressFree(va, 16 * kMiB), CUDA_SUCCESS);
        return std::string();
      }),
      "");
}

TEST(SimVmm, MappingRulesAndAccess) {
  EXPECT_EQ(
      RunVmmSim([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const CUmemAllocationProp prop = DeviceProp();
        CUmemGenericAllocationHandle a = 0, b = 0;
        FGPU_REQUIRE_CU(cuMemCreate(&a, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemCreate(&b, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
        CUdeviceptr va = 0;
        FGPU_REQUIRE_CU(cuMemAddressReserve(&va, 8 * kMiB, 0, 0, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemMap(va + 4096, 2 * kMiB, 0, a, 0),
                        CUDA_ERROR_INVALID_VALUE);                                      // unaligned address
        FGPU_REQUIRE_CU(cuMemMap(va, 2 * kMiB, 4096, a, 0), CUDA_ERROR_INVALID_VALUE);  // unaligned offset
        FGPU_REQUIRE_CU(cuMemMap(va, 6 * kMiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE);     // beyond the handle
        FGPU_REQUIRE_CU(cuMemMap(va + 8 * kMiB, 2 * kMiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE);  // outside
        FGPU_REQUIRE_CU(cuMemMap(va, 2 * kMiB, 0, 12345, 0), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemMap(va, 2 * kMiB, 0, a, 1), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemMap(va, 4 * kMiB, 0, a, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemMap(va + 2 * kMiB, 2 * kMiB, 0, b, 0),
                        CUDA_ERROR_INVALID_VALUE);  // already mapped
        FGPU_REQUIRE_CU(cuMemMap(va + 4 * kMiB, 2 * kMiB, 0, b, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemUnmap(va, 2 * kMiB), CUDA_ERROR_INVALID_VALUE);        // part of a mapping
        FGPU_REQUIRE_CU(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // still mapped
        // Access: read-write on the first 4 MiB, read-only on the next 2 MiB.
        FGPU_REQUIRE_CU(GrantReadWrite(va, 4 * kMiB), CUDA_SUCCESS);
        CUmemAccessDesc read_only{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READ};
        FGPU_REQUIRE_CU(cuMemSetAccess(va + 4 * kMiB, 2 * kMiB, &read_only, 1), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemSetAccess(va, 8 * kMiB, &read_only, 1),
                        CUDA_ERROR_INVALID_VALUE);  // not all mapped
        CUmemAccessDesc bad_device{{CU_MEM_LOCATION_TYPE_DEVICE, 7}, CU_MEM_ACCESS_FLAGS_PROT_READ};
        FGPU_REQUIRE_CU(cuMemSetAccess(va, 2 * kMiB, &bad_device, 1), CUDA_ERROR_INVALID_DEVICE);
        unsigned long long flags = 0;
        CUmemLocation device0{CU_MEM_LOCATION_TYPE_DEVICE, 0};
        FGPU_REQUIRE_CU(cuMemGetAccess(&flags, &device0, va + 4 * kMiB + 1), CUDA_SUCCESS);
        FGPU_REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_READ);
        CUmemLocation device1{CU_MEM_LOCATION_TYPE_DEVICE, 1};
        FGPU_REQUIRE_CU(cuMemGetAccess(&flags, &device1, va), CUDA_SUCCESS);
        FGPU_REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
        // A copy may span back-to-back mappings; writes into the read-only part fail.
        std::vector<unsigned char> data(3 * kMiB, 0x3C);
        FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va + 3 * kMiB, data.data(), 2 * kMiB), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va + kMiB, data.data(), 3 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(data.data(), va + 3 * kMiB, 3 * kMiB), CUDA_SUCCESS);  // read across
        FGPU_REQUIRE(data[0] == 0x3C && data[kMiB - 1] == 0x3C);
        // Access on a sub-range splits the mapping but cuMemUnmap still takes it whole.
        FGPU_REQUIRE_CU(cuMemSetAccess(va + 2 * kMiB, 2 * kMiB, &read_only, 1), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemsetD8_v2(va + 2 * kMiB, 0, 16), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemsetD8_v2(va, 0, 16), CUDA_SUCCESS);
        CUdeviceptr base = 0, start = 0;
        size_t size = 0, range = 0;
        FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, va + 3 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE(base == va && size == 4 * kMiB);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + kMiB),
                        CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + kMiB),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(start == va && range == 8 * kMiB);           // the reservation
        FGPU_REQUIRE_CU(cuMemUnmap(va, 6 * kMiB), CUDA_SUCCESS);  // both mappings at once
        for (CUmemGenericAllocationHandle h : {a, b}) FGPU_REQUIRE_CU(cuMemRelease(h), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAddressFree(va, 8 * kMiB), CUDA_SUCCESS);
        return std::string();
      }),
      "");
}

TEST(SimVmm, PropertiesHostMemoryAndShareableHandles) {
  EXPECT_EQ(RunVmmSim([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              CUmemGenericAllocationHandle handle = 0;
              CUmemAllocationProp prop = DeviceProp(5);
              FGPU_REQUIRE_CU(cuMemCreate(&handle, kVmmGranule, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
              prop = DeviceProp();
              FGPU_REQUIRE_CU(cuMemCreate(&handle, kVmmGranule, &prop, 1), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemCreate(nullptr, kVmmGranule, &prop, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 64 * kVmmGranule, &prop, 0), CUDA_SUCCESS);
              int fd = -1;
              FGPU_REQUIRE_CU(
                  cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  CUDA_ERROR_INVALID_VALUE);  // not requested at creation
              FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
              // Host memory is not device memory: not charged.
              prop.location = {CU_MEM_LOCATION_TYPE_HOST, 0};
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 64 * kVmmGranule, &prop, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
              prop.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0};
              FGPU_REQUIRE_CU(cuMemCreate(&handle, kVmmGranule, &prop, 0), CUDA_ERROR_INVALID_VALUE);
              // Export as a file descriptor; the importer's handle maps the same memory, uncharged.
              prop = DeviceProp(1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
              FGPU_REQUIRE_CU(cuMemCreate(&handle, kVmmGranule, &prop, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(
                  cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  CUDA_SUCCESS);
              struct stat exported_stat {};
              FGPU_REQUIRE(fstat(fd, &exported_stat) == 0 && (exported_stat.st_mode & 0777) == 0600);  // owner-only
              CUmemGenericAllocationHandle imported = 0;
              FGPU_REQUIRE_CU(cuMemImportFromShareableHandle(
                                  &imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                              CUDA_SUCCESS);
              close(fd);
              FGPU_REQUIRE(imported != handle);
              CUmemAllocationProp seen{};
              FGPU_REQUIRE_CU(cuMemGetAllocationPropertiesFromHandle(&seen, imported), CUDA_SUCCESS);
              FGPU_REQUIRE(seen.location.id == 1 &&
                           seen.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
              CUdeviceptr va = 0;
              FGPU_REQUIRE_CU(cuMemAddressReserve(&va, 2 * kVmmGranule, 0, 0, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemMap(va, kVmmGranule, 0, handle, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemMap(va + kVmmGranule, kVmmGranule, 0, imported, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(GrantReadWrite(va, 2 * kVmmGranule, 0), CUDA_SUCCESS);
              const uint32_t value = 0xFEEDBEEF;
              uint32_t back = 0;
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va + 64, &value, 4), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&back, va + kVmmGranule + 64, 4), CUDA_SUCCESS);
              FGPU_REQUIRE(back == value);
              int not_ours = dup(STDERR_FILENO);
              FGPU_REQUIRE_CU(cuMemImportFromShareableHandle(
                                  &imported, reinterpret_cast<void*>(static_cast<intptr_t>(not_ours)),
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                              CUDA_ERROR_INVALID_VALUE);
              close(not_ours);
              FGPU_REQUIRE_CU(cuMemUnmap(va, 2 * kVmmGranule), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemRelease(imported), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAddressFree(va, 2 * kVmmGranule), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimVmm, CreateReachesOomWithoutLeaking) {
  EXPECT_EQ(RunVmmSim([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              const CUmemAllocationProp prop = DeviceProp();
              std::vector<CUmemGenericAllocationHandle> held;
              CUmemGenericAllocationHandle handle = 0;
              while (cuMemCreate(&handle, 512 * kMiB, &prop, 0) == CUDA_SUCCESS) held.push_back(handle);
              FGPU_REQUIRE(held.size() == 7);  // 3796 MiB free
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 512 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
              for (CUmemGenericAllocationHandle h : held) FGPU_REQUIRE_CU(cuMemRelease(h), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

// --- stream-ordered allocation and pools -------------------------------------------------------

uint64_t PoolAttribute(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t value = ~cuuint64_t{0};
  return cuMemPoolGetAttribute(pool, attr, &value) == CUDA_SUCCESS ? value : ~cuuint64_t{0};
}

TEST(SimPool, GrowsReusesAndTrimsAfterSynchronisation) {
  EXPECT_EQ(
      RunVmmSim([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const uint64_t start = FreeBytes();
        CUmemoryPool pool = nullptr, current = nullptr;
        FGPU_REQUIRE_CU(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuDeviceGetMemPool(&current, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(pool == current);
        CUstream stream = nullptr;
        FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
        CUdeviceptr a = 0, b = 0;
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 3 * kMiB, stream), CUDA_SUCCESS);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * kMiB);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 3 * kMiB);
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&b, kMiB, stream), CUDA_SUCCESS);  // fits in the reserve
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);
        const uint32_t value = 42;
        uint32_t back = 0;
        FGPU_REQUIRE_CU(cuMemcpyHtoDAsync_v2(b, &value, 4, stream), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemcpyDtoHAsync_v2(&back, b, 4, stream), CUDA_SUCCESS);
        FGPU_REQUIRE(back == 42);
        FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);  // back to the pool, not to the device
        FGPU_REQUIRE_CU(cuMemAllocAsync_ptsz(&a, 2 * kMiB, nullptr), CUDA_SUCCESS);  // reuses the reserve
        FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);
        FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);  // cuMemFree also returns pool memory to the pool
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == kMiB);
        FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);  // threshold 0: trim to what is used
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == kVmmGranule);
        FGPU_REQUIRE(FreeBytes() == start - kVmmGranule);
        FGPU_REQUIRE_CU(cuMemFreeAsync(b, stream), CUDA_SUCCESS);
        // A release threshold keeps that much after synchronisation.
        cuuint64_t threshold = 5 * kMiB;
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
                        CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 20 * kMiB, stream), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 6 * kMiB);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 20 * kMiB);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 20 * kMiB);
        FGPU_REQUIRE_CU(cuMemPoolTrimTo(pool, 3 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * kMiB);
        FGPU_REQUIRE_CU(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        // High-water marks reset to the current value; only zero may be written.
        cuuint64_t zero = 0, one = 1;
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 0);
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &zero),
                        CUDA_ERROR_INVALID_VALUE);
        int reuse = 0;
        FGPU_REQUIRE_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
                        CUDA_SUCCESS);
        reuse = 1;
        FGPU_REQUIRE_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(reuse == 0);
        FGPU_REQUIRE_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, nullptr),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
        return std::string();
      }),
      "");
}

TEST(SimPool, CreatedPoolsDestroyAndBadArguments) {
  EXPECT_EQ(
      RunVmmSim([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const uint64_t start = FreeBytes();
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
        CUmemoryPool pool = nullptr, other = nullptr, fallback = nullptr;
        FGPU_REQUIRE_CU(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
        props.location.id = 1;
        FGPU_REQUIRE_CU(cuMemPoolCreate(&other, &props), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuDeviceSetMemPool(0, other), CUDA_ERROR_INVALID_VALUE);  // pool of another device
        FGPU_REQUIRE_CU(cuDeviceSetMemPool(0, pool), CUDA_SUCCESS);
        CUdeviceptr a = 0;
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, kMiB, nullptr), CUDA_SUCCESS);
        CUmemoryPool from = nullptr;
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&from, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a), CUDA_SUCCESS);
        FGPU_REQUIRE(from == pool && PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == kMiB);
        // Destroyed with an allocation outstanding: the handle dies now, the memory with the last free.
        FGPU_REQUIRE_CU(cuMemPoolDestroy(pool), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - kVmmGranule);
        FGPU_REQUIRE_CU(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == ~cuuint64_t{0});
        FGPU_REQUIRE_CU(cuDeviceGetMemPool(&from, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuDeviceGetDefaultMemPool(&fallback, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(from == fallback);  // the device falls back to its default pool
        FGPU_REQUIRE_CU(cuMemPoolDestroy(fallback), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        // Allocations from an explicit pool of another device are charged there.
        FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync(&a, 3 * kMiB, other, nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start &&
                     PoolAttribute(other, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * kMiB);
        FGPU_REQUIRE_CU(cuMemFreeAsync_ptsz(a, nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemPoolDestroy(other), CUDA_SUCCESS);
        // Bad arguments.
        FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync(&a, kMiB, other, nullptr),
                        CUDA_ERROR_INVALID_VALUE);  // destroyed
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemAllocAsync(nullptr, 16, nullptr), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 16, reinterpret_cast<CUstream>(0x77)), CUDA_ERROR_INVALID_HANDLE);
        FGPU_REQUIRE_CU(cuMemFreeAsync(0, nullptr), CUDA_ERROR_INVALID_VALUE);
        CUdeviceptr plain = 0;
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&plain, 64), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeAsync(plain, nullptr), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFree_v2(plain), CUDA_SUCCESS);
        props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 9};
        FGPU_REQUIRE_CU(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
        props.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0};
        FGPU_REQUIRE_CU(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemPoolCreate(&pool, nullptr), CUDA_ERROR_INVALID_VALUE);
        // Out of memory, with maxSize and with the device.
        props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
        props.maxSize = 8 * kMiB;
        FGPU_REQUIRE_CU(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync(&a, 9 * kMiB, pool, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
        FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync(&a, 8 * kMiB, pool, nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemPoolDestroy(pool), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 4ull << 30, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
        FGPU_REQUIRE(FreeBytes() == start);
        // A captured stream: the allocation becomes a graph allocation node (api_graph_test.cc);
        // the pool and the device give nothing at capture.
        CUstream stream = nullptr;
        FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 16, stream), CUDA_SUCCESS);
        FGPU_REQUIRE(a != 0 && FreeBytes() == start);
        return std::string();
      }),
      "");
}

TEST(SimPool, ConcurrentStreamOrderedAllocationsBalance) {
  EXPECT_EQ(RunVmmSim([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              std::vector<std::string> failures(4);
              std::vector<std::thread> threads;
              for (size_t t = 0; t < failures.size(); ++t) {
                threads.emplace_back([&, t] {
                  failures[t] = [&]() -> std::string {
                    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx.get()), CUDA_SUCCESS);
                    CUstream stream = nullptr;
                    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
                    for (int i = 0; i < 100; ++i) {
                      CUdeviceptr p = 0;
                      FGPU_REQUIRE_CU(cuMemAllocAsync(&p, (t + 1) * kMiB + 17, stream), CUDA_SUCCESS);
                      FGPU_REQUIRE_CU(cuMemsetD8Async(p, static_cast<unsigned char>(i), 4096, stream),
                                      CUDA_SUCCESS);
                      FGPU_REQUIRE_CU(cuMemFreeAsync(p, stream), CUDA_SUCCESS);
                      if (i % 10 == 0) FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
                    }
                    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
                    return "";
                  }();
                });
              }
              for (std::thread& thread : threads) thread.join();
              for (const std::string& failure : failures) {
                if (!failure.empty()) return failure;
              }
              CUmemoryPool pool = nullptr;
              FGPU_REQUIRE_CU(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(PoolAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
              FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);  // the trim credits everything back
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

// --- arrays ------------------------------------------------------------------------------------

TEST(SimArray, ChargesDescriptorsAndBadHandles) {
  EXPECT_EQ(RunVmmSim([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              CUDA_ARRAY_DESCRIPTOR desc{1000, 1000, CU_AD_FORMAT_FLOAT, 1};  // 4,000,000 bytes -> 2 granules
              CUarray array = nullptr;
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&array, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 4 * kMiB);
              CUDA_ARRAY_DESCRIPTOR seen{};
              FGPU_REQUIRE_CU(cuArrayGetDescriptor_v2(&seen, array), CUDA_SUCCESS);
              FGPU_REQUIRE(seen.Width == 1000 && seen.Height == 1000 && seen.Format == CU_AD_FORMAT_FLOAT &&
                           seen.NumChannels == 1);
              CUDA_ARRAY3D_DESCRIPTOR cube{64, 64, 64, CU_AD_FORMAT_HALF, 4, 0};  // 64^3 * 8 bytes = 2 MiB
              CUarray volume = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&volume, &cube), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 6 * kMiB);
              CUDA_ARRAY3D_DESCRIPTOR_v1 legacy{};
              FGPU_REQUIRE_CU(cuArray3DGetDescriptor(&legacy, volume), CUDA_SUCCESS);
              FGPU_REQUIRE(legacy.Depth == 64 && legacy.NumChannels == 4);
              CUDA_MEMCPY2D copy{};  // arrays hold data (array_copy_test.cc has the rest)
              float texel = 1.0f;
              copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              copy.srcArray = array;
              copy.dstMemoryType = CU_MEMORYTYPE_HOST;
              copy.dstHost = &texel;
              copy.WidthInBytes = 4;
              copy.Height = 1;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_SUCCESS);
              FGPU_REQUIRE(texel == 0.0f);  // untouched texels read as zero
              for (CUarray a : {array, volume}) FGPU_REQUIRE_CU(cuArrayDestroy(a), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
              FGPU_REQUIRE_CU(cuArrayGetDescriptor_v2(&seen, array), CUDA_ERROR_INVALID_HANDLE);
              FGPU_REQUIRE(FreeBytes() == start);
              // Invalid descriptors.
              CUDA_ARRAY3D_DESCRIPTOR bad{64, 64, 0, CU_AD_FORMAT_FLOAT, 3, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad), CUDA_ERROR_INVALID_VALUE);  // 3 channels
              bad = {0, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad), CUDA_ERROR_INVALID_VALUE);  // zero width
              bad = {64, 64, 0, static_cast<CUarray_format>(0x33), 1, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad), CUDA_ERROR_INVALID_VALUE);  // no such format
              bad = {64, 0, 8, CU_AD_FORMAT_FLOAT, 1, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad),
                              CUDA_ERROR_INVALID_VALUE);  // depth without height
              bad = {64, 32, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad),
                              CUDA_ERROR_INVALID_VALUE);                      // cubemap faces must be square
              bad = {64, 0, 8, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED};  // 8 layers of 1D: fine
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &bad), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayCreate_v2(nullptr, &desc), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayDestroy(reinterpret_cast<CUarray>(0x1000)), CUDA_ERROR_INVALID_HANDLE);
              // Until out of memory: 16384^2 floats = 1 GiB each, 3 fit in 3796 MiB.
              std::vector<CUarray> held;
              CUDA_ARRAY_DESCRIPTOR big{16384, 16384, CU_AD_FORMAT_FLOAT, 1};
              while (cuArrayCreate_v2(&array, &big) == CUDA_SUCCESS) held.push_back(array);
              FGPU_REQUIRE(held.size() == 3);
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&array, &big), CUDA_ERROR_OUT_OF_MEMORY);
              for (CUarray a : held) FGPU_REQUIRE_CU(cuArrayDestroy(a), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimArray, MipmappedArraysChargeAllLevels) {
  EXPECT_EQ(
      RunVmmSim([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const uint64_t start = FreeBytes();
        const CUDA_ARRAY3D_DESCRIPTOR desc{2048, 1024, 0, CU_AD_FORMAT_FLOAT, 2, 0};
        uint64_t bytes = 0;  // levels 2048x1024, 1024x512, ... 2x1, 1x1 of 8-byte texels
        for (unsigned level = 0; level < 12; ++level) {
          bytes += std::max<uint64_t>(2048 >> level, 1) * std::max<uint64_t>(1024 >> level, 1) * 8;
        }
        CUmipmappedArray mipmap = nullptr;
        FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &desc, 13), CUDA_ERROR_INVALID_VALUE);  // 12 at most
        FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &desc, 0), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &desc, 12), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - (bytes + kVmmGranule - 1) / kVmmGranule * kVmmGranule);
        CUarray level = nullptr;
        FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mipmap, 3), CUDA_SUCCESS);
        CUDA_ARRAY3D_DESCRIPTOR seen{};
        FGPU_REQUIRE_CU(cuArray3DGetDescriptor_v2(&seen, level), CUDA_SUCCESS);
        FGPU_REQUIRE(seen.Width == 256 && seen.Height == 128 && seen.Depth == 0 && seen.NumChannels == 2);
        FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mipmap, 12), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuArrayDestroy(level), CUDA_ERROR_INVALID_HANDLE);  // levels belong to the mipmap
        FGPU_REQUIRE_CU(cuMipmappedArrayDestroy(mipmap), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        FGPU_REQUIRE_CU(cuArray3DGetDescriptor_v2(&seen, level), CUDA_ERROR_INVALID_HANDLE);
        FGPU_REQUIRE_CU(cuMipmappedArrayDestroy(mipmap), CUDA_ERROR_INVALID_HANDLE);
        FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mipmap, 0), CUDA_ERROR_INVALID_HANDLE);
        return std::string();
      }),
      "");
}

}  // namespace
}  // namespace fgpu::sim::testing
