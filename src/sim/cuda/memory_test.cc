// Tests of the simulated driver's allocations, host memory, copies, sets and
// pointer queries, through the exported C ABI. Each test runs in a forked child
// with its own cuInit, device configuration and shared segment.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/cuda_api.h"
#include "core/units.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr uint64_t kMemoryGranule = 2 * kMiB;
// One small device, so that out-of-memory comes quickly.
constexpr const char* kMemoryConfig = R"({
  "devices": [{"memory": "4GiB", "granularity": "2MiB", "context_overhead": "300MiB"}]
})";

std::string RunMem(const std::function<std::string()>& body, const char* config = kMemoryConfig) {
  return RunWithConfig(config, "mem-test", body);
}

TEST(SimMemory, ChargesRoundToGranularityAndFreesRestoreExactly) {
  EXPECT_EQ(
      RunMem([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        size_t free = 0, total = 0;
        FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
        FGPU_REQUIRE(total == 4 * kGiB && free == total - 300 * kMiB);  // the context's overhead is charged
        const uint64_t start = free;
        CUdeviceptr one = 0, three = 0, pitched = 0, managed = 0;
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&one, 1), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - kMemoryGranule);
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&three, 3 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - 3 * kMemoryGranule);
        size_t pitch = 0;
        FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&pitched, &pitch, 1000, 3000, 4), CUDA_SUCCESS);
        FGPU_REQUIRE(pitch == 1024);  // rows padded to 512 bytes; 1024 * 3000 bytes -> 2 granules
        FGPU_REQUIRE(FreeBytes() == start - 5 * kMemoryGranule);
        FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 5 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start - 8 * kMemoryGranule);  // managed memory is charged in full
        for (CUdeviceptr p : {one, three, pitched, managed}) FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        unsigned free32 = 0, total32 = 0;
        FGPU_REQUIRE_CU(cuMemGetInfo(&free32, &total32), CUDA_SUCCESS);
        FGPU_REQUIRE(total32 == UINT32_MAX && free32 == start);  // 4 GiB saturates the 32-bit ABI
        FGPU_REQUIRE_CU(cuMemGetInfo_v2(nullptr, &total), CUDA_ERROR_INVALID_VALUE);
        return std::string();
      }),
      "");
}

// Allocates through `alloc` until the device is out of memory, then frees all.
std::string FillAndDrain(const std::function<CUresult(CUdeviceptr*)>& alloc,
                         const std::function<CUresult(CUdeviceptr)>& release, size_t expected) {
  const uint64_t start = FreeBytes();
  std::vector<CUdeviceptr> held;
  CUresult rc = CUDA_SUCCESS;
  while (held.size() < 10000) {
    CUdeviceptr p = 0;
    rc = alloc(&p);
    if (rc != CUDA_SUCCESS) break;
    held.push_back(p);
  }
  FGPU_REQUIRE_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);
  if (held.size() != expected)
    return "held " + std::to_string(held.size()) + ", expected " + std::to_string(expected);
  const uint64_t at_oom = FreeBytes();
  CUdeviceptr p = 0;
  FGPU_REQUIRE_CU(alloc(&p), CUDA_ERROR_OUT_OF_MEMORY);
  FGPU_REQUIRE(FreeBytes() == at_oom);  // a failed allocation leaves no charge behind
  for (CUdeviceptr q : held) FGPU_REQUIRE_CU(release(q), CUDA_SUCCESS);
  FGPU_REQUIRE(FreeBytes() == start);
  return "";
}

TEST(SimMemory, EveryAllocationPathReachesOomWithoutLeaking) {
  EXPECT_EQ(RunMem([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              // 4 GiB - 300 MiB of context = 3796 MiB: 14 blocks of 256 MiB.
              auto free_device = [](CUdeviceptr p) { return cuMemFree_v2(p); };
              std::string failure =
                  FillAndDrain([](CUdeviceptr* p) { return cuMemAlloc_v2(p, 256 * kMiB); }, free_device, 14);
              if (!failure.empty()) return "cuMemAlloc_v2: " + failure;
              failure = FillAndDrain(
                  [](CUdeviceptr* p) {
                    size_t pitch = 0;
                    return cuMemAllocPitch_v2(p, &pitch, 1 << 20, 300, 16);  // 300 MiB -> 150 granules
                  },
                  free_device, 12);
              if (!failure.empty()) return "cuMemAllocPitch_v2: " + failure;
              failure = FillAndDrain(
                  [](CUdeviceptr* p) { return cuMemAllocManaged(p, 1 * kGiB, CU_MEM_ATTACH_GLOBAL); },
                  free_device, 3);
              if (!failure.empty()) return "cuMemAllocManaged: " + failure;
              CUdeviceptr p = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, ~size_t{0}), CUDA_ERROR_OUT_OF_MEMORY);
              size_t pitch = 0;
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&p, &pitch, 1 << 20, ~size_t{0} >> 4, 4),
                              CUDA_ERROR_OUT_OF_MEMORY);
              return std::string();
            }),
            "");
}

TEST(SimMemory, BadArgumentsGetTheDriversCodes) {
  EXPECT_EQ(RunMem([] {
              CUdeviceptr p = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
              FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
              size_t pitch = 0;
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&p, &pitch, 64, 64, 3), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&p, &pitch, 0, 64, 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&p, nullptr, 64, 64, 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&p, &pitch, size_t{1} << 32, 1, 4),
                              CUDA_ERROR_INVALID_VALUE);  // > max pitch
              FGPU_REQUIRE_CU(cuMemAllocManaged(&p, 16, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAllocManaged(&p, 16, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(FreeBytes() == start);
              FGPU_REQUIRE_CU(cuMemFree_v2(0), CUDA_SUCCESS);  // free(NULL) semantics
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 4096), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(p + 16), CUDA_ERROR_INVALID_VALUE);  // inside, not the base
              FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);  // double free
              FGPU_REQUIRE_CU(cuMemFree_v2(0xdeadbeef000), CUDA_ERROR_INVALID_VALUE);
              void* host = nullptr;
              FGPU_REQUIRE_CU(cuMemAllocHost_v2(&host, 64), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(host)), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemFreeHost(host), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              FGPU_REQUIRE_CU(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
              size_t free = 0, total = 0;
              FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
              return std::string();
            }),
            "");
}

TEST(SimMemory, LegacyEntryPointsUse32BitAddresses) {
  EXPECT_EQ(RunMem([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              CUdeviceptr_v1 p = 0;
              FGPU_REQUIRE_CU(cuMemAlloc(&p, 8192), CUDA_SUCCESS);
              FGPU_REQUIRE(p != 0 && FreeBytes() == start - kMemoryGranule);
              const std::string text = "legacy round trip";
              FGPU_REQUIRE_CU(cuMemcpyHtoD(p, text.data(), static_cast<unsigned>(text.size())), CUDA_SUCCESS);
              std::string back(text.size(), '\0');
              FGPU_REQUIRE_CU(cuMemcpyDtoH(back.data(), p, static_cast<unsigned>(back.size())), CUDA_SUCCESS);
              FGPU_REQUIRE(back == text);
              CUdeviceptr_v1 base = 0;
              unsigned size = 0;
              FGPU_REQUIRE_CU(cuMemGetAddressRange(&base, &size, p + 100), CUDA_SUCCESS);
              FGPU_REQUIRE(base == p && size == 8192);
              FGPU_REQUIRE_CU(cuMemFree(p), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimMemory, DataRoundTripsThroughEveryCopyAndSet) {
  EXPECT_EQ(RunMem([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              constexpr size_t kN = 1 << 16;
              CUdeviceptr a = 0, b = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&a, kN), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&b, kN), CUDA_SUCCESS);
              std::vector<unsigned char> in(kN), out(kN);
              for (size_t i = 0; i < kN; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(a, in.data(), kN), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoD_v2(b, a, kN), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(out.data(), b, kN), CUDA_SUCCESS);
              FGPU_REQUIRE(out == in);
              // Unified cuMemcpy, per-thread and asynchronous variants.
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
              std::fill(out.begin(), out.end(), 0);
              FGPU_REQUIRE_CU(cuMemcpy(b + 1, reinterpret_cast<CUdeviceptr>(in.data()), kN - 1),
                              CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpy_ptds(a, b, kN), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoHAsync_v2(out.data(), a, kN, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(out.data() + 1, in.data(), kN - 1) == 0);
              FGPU_REQUIRE_CU(cuMemcpyHtoDAsync_v2_ptsz(a, in.data(), kN, nullptr), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoDAsync_v2(b, a, kN, CU_STREAM_LEGACY), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(out.data()), b, kN, stream),
                              CUDA_SUCCESS);
              FGPU_REQUIRE(out == in);
              // Sets.
              FGPU_REQUIRE_CU(cuMemsetD8_v2(a, 0xAB, kN), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemsetD16_v2_ptds(a + 2, 0x1234, 4), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemsetD32Async(a + 16, 0xCAFEF00D, 2, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(out.data(), a, 32), CUDA_SUCCESS);
              uint16_t half = 0;
              uint32_t word = 0;
              std::memcpy(&half, out.data() + 8, 2);
              std::memcpy(&word, out.data() + 20, 4);
              FGPU_REQUIRE(out[0] == 0xAB && out[1] == 0xAB && half == 0x1234 && out[10] == 0xAB &&
                           word == 0xCAFEF00D);
              // 2D: a 100 x 50 block into pitched memory and back.
              CUdeviceptr pitched = 0;
              size_t pitch = 0;
              FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&pitched, &pitch, 100, 50, 4), CUDA_SUCCESS);
              CUDA_MEMCPY2D copy{};
              copy.srcMemoryType = CU_MEMORYTYPE_HOST;
              copy.srcHost = in.data();
              copy.srcPitch = 100;
              copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
              copy.dstDevice = pitched;
              copy.dstPitch = pitch;
              copy.WidthInBytes = 100;
              copy.Height = 50;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_SUCCESS);
              std::vector<unsigned char> rows(size_t{100} * 50);
              CUDA_MEMCPY2D_v1 legacy{};  // 32-bit struct: a 64-bit device address cannot be named
              legacy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
              legacy.dstMemoryType = CU_MEMORYTYPE_HOST;
              legacy.dstHost = rows.data();
              legacy.dstPitch = 100;
              legacy.WidthInBytes = 100;
              legacy.Height = 50;
              FGPU_REQUIRE_CU(cuMemcpy2D(&legacy), CUDA_ERROR_INVALID_VALUE);
              CUDA_MEMCPY2D back2 = copy;
              std::swap(back2.srcMemoryType, back2.dstMemoryType);
              back2.srcDevice = pitched;
              back2.srcPitch = pitch;
              back2.dstHost = rows.data();
              back2.dstPitch = 100;
              FGPU_REQUIRE_CU(cuMemcpy2DAsync_v2(&back2, stream), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(rows.data(), in.data(), rows.size()) == 0);
              for (CUdeviceptr p : {a, b, pitched}) FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimMemory, CopiesTouchNothingTheyCannotValidate) {
  EXPECT_EQ(RunMem([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUdeviceptr a = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&a, 4096), CUDA_SUCCESS);
              std::vector<unsigned char> host(8192, 0x5A);
              FGPU_REQUIRE_CU(cuMemsetD8_v2(a, 0, 4096), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(a + 1, host.data(), 4096),
                              CUDA_ERROR_INVALID_VALUE);  // one byte past the end
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(a, nullptr, 16), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(0x1000, host.data(), 16), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(host.data()), host.data(), 16),
                              CUDA_ERROR_INVALID_VALUE);  // pageable host memory is not a device pointer
              FGPU_REQUIRE_CU(cuMemsetD32_v2(a + 2, 1, 4), CUDA_ERROR_INVALID_VALUE);  // misaligned
              FGPU_REQUIRE_CU(cuMemsetD16_v2(a, 1, 2049), CUDA_ERROR_INVALID_VALUE);
              // Host memory that is not mapped any more.
              void* gone = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              munmap(gone, 4096);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(gone, a, 16), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpy(reinterpret_cast<CUdeviceptr>(gone), a, 16), CUDA_ERROR_INVALID_VALUE);
              std::vector<unsigned char> out(4096, 1);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(out.data(), a, 4096), CUDA_SUCCESS);
              FGPU_REQUIRE(std::all_of(out.begin(), out.end(), [](unsigned char c) { return c == 0; }));
              // 2D: pitch narrower than the row, arrays, unknown memory types.
              CUDA_MEMCPY2D copy{};
              copy.srcMemoryType = CU_MEMORYTYPE_HOST;
              copy.srcHost = host.data();
              copy.srcPitch = 32;
              copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
              copy.dstDevice = a;
              copy.dstPitch = 64;
              copy.WidthInBytes = 64;
              copy.Height = 4;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_ERROR_INVALID_VALUE);
              copy.srcPitch = 64;
              copy.dstY = 64;  // rows 64..67 of 64 bytes: past the 4 KiB allocation
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_ERROR_INVALID_VALUE);
              copy.dstY = 0;
              copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;  // with no array
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_ERROR_INVALID_VALUE);
              copy.dstMemoryType = static_cast<CUmemorytype>(7);
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&copy), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(nullptr), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyHtoDAsync_v2(a, host.data(), 16, reinterpret_cast<CUstream>(0x1234)),
                              CUDA_ERROR_INVALID_HANDLE);
              FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(a, host.data(), 16), CUDA_ERROR_INVALID_VALUE);  // freed
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(a, host.data(), 0), CUDA_SUCCESS);  // nothing to copy
              return std::string();
            }),
            "");
}

TEST(SimMemory, HostMemoryIsPinnedNotCharged) {
  EXPECT_EQ(
      RunMem([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        const uint64_t start = FreeBytes();
        void* pinned = nullptr;
        void* mapped = nullptr;
        FGPU_REQUIRE_CU(cuMemAllocHost_v2(&pinned, 64 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemHostAlloc(&mapped, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        FGPU_REQUIRE_CU(cuMemHostAlloc(&mapped, 4096, 0x80), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemAllocHost_v2(&pinned, 0), CUDA_ERROR_INVALID_VALUE);
        CUdeviceptr dptr = 0;
        FGPU_REQUIRE_CU(cuMemHostGetDevicePointer_v2(&dptr, static_cast<char*>(mapped) + 8, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(dptr == reinterpret_cast<CUdeviceptr>(mapped) + 8);
        FGPU_REQUIRE_CU(cuMemHostGetDevicePointer_v2(&dptr, mapped, 1), CUDA_ERROR_INVALID_VALUE);
        // Pinned memory is device-accessible: sets and device-side copies work on it.
        FGPU_REQUIRE_CU(cuMemsetD32_v2(dptr - 8, 0x01020304, 1024), CUDA_SUCCESS);
        FGPU_REQUIRE(static_cast<uint32_t*>(mapped)[1023] == 0x01020304);
        FGPU_REQUIRE_CU(cuMemcpyDtoD_v2(reinterpret_cast<CUdeviceptr>(pinned), dptr - 8, 4096), CUDA_SUCCESS);
        FGPU_REQUIRE(static_cast<uint32_t*>(pinned)[7] == 0x01020304);
        // Registration of the application's own memory.
        std::vector<uint32_t> user(4096, 7);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(user.data(), 16384, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(user.data() + 4, 64, 0),
                        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(pinned, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(user.data(), 0, 0), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(nullptr, 64, 0), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(user.data(), 64, 0x100), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemsetD32_v2(reinterpret_cast<CUdeviceptr>(user.data()), 9, 4096), CUDA_SUCCESS);
        FGPU_REQUIRE(user[4095] == 9 && FreeBytes() == start);
        FGPU_REQUIRE_CU(cuMemHostUnregister(user.data() + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
        FGPU_REQUIRE_CU(cuMemHostUnregister(nullptr), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemHostUnregister(user.data()), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemHostUnregister(user.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
        FGPU_REQUIRE_CU(cuMemsetD32_v2(reinterpret_cast<CUdeviceptr>(user.data()), 9, 1),
                        CUDA_ERROR_INVALID_VALUE);
        // Read-only registrations cannot be written by the device.
        FGPU_REQUIRE_CU(cuMemHostRegister_v2(user.data(), 64, CU_MEMHOSTREGISTER_READ_ONLY), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemsetD8_v2(reinterpret_cast<CUdeviceptr>(user.data()), 0, 64),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemcpyDtoD_v2(reinterpret_cast<CUdeviceptr>(pinned),
                                        reinterpret_cast<CUdeviceptr>(user.data()), 64),
                        CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemHostUnregister(user.data()), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeHost(nullptr), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeHost(static_cast<char*>(pinned) + 1), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFreeHost(pinned), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFreeHost(mapped), CUDA_SUCCESS);
        return std::string();
      }),
      "");
}

TEST(SimMemory, AddressRangesAndPointerAttributes) {
  EXPECT_EQ(
      RunMem([] {
        PrimaryContext ctx;
        FGPU_REQUIRE(ctx.ok());
        CUdeviceptr device = 0, managed = 0;
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&device, 10000), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 64, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
        void* pinned = nullptr;
        FGPU_REQUIRE_CU(cuMemAllocHost_v2(&pinned, 64), CUDA_SUCCESS);
        CUdeviceptr base = 0;
        size_t size = 0;
        FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, device + 9999), CUDA_SUCCESS);
        FGPU_REQUIRE(base == device && size == 10000);
        FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(nullptr, &size, device + 5), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, device + 10000), CUDA_ERROR_NOT_FOUND);
        unsigned type = 0;
        int flag = -1, ordinal = -1;
        CUcontext owner = nullptr;
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device + 1),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(type == CU_MEMORYTYPE_DEVICE);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                              reinterpret_cast<CUdeviceptr>(pinned)),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(type == CU_MEMORYTYPE_HOST);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, device), CUDA_SUCCESS);
        FGPU_REQUIRE(owner == ctx.get());
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS);
        FGPU_REQUIRE(flag == 1);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, device), CUDA_SUCCESS);
        FGPU_REQUIRE(flag == 0);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, device),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(ordinal == 0);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_MAPPED, device), CUDA_SUCCESS);
        FGPU_REQUIRE(flag == 1);
        CUdeviceptr start = 0, dptr = 0;
        size_t range = 0;
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, device + 77),
                        CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, device + 77),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(start == device && range == 10000);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, device + 5),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(dptr == device + 5);
        void* host_view = nullptr;
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&host_view, CU_POINTER_ATTRIBUTE_HOST_POINTER, device),
                        CUDA_ERROR_INVALID_VALUE);  // device memory has no host address
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&host_view, CU_POINTER_ATTRIBUTE_HOST_POINTER, managed),
                        CUDA_SUCCESS);
        FGPU_REQUIRE(host_view == reinterpret_cast<void*>(managed));
        unsigned long long id1 = 0, id2 = 0;
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, device), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, managed), CUDA_SUCCESS);
        FGPU_REQUIRE(id1 != 0 && id1 != id2);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&type, static_cast<CUpointer_attribute>(30), device),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFree_v2(device), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device),
                        CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemFreeHost(pinned), CUDA_SUCCESS);
        return std::string();
      }),
      "");
}

TEST(SimMemory, DestroyingAContextReleasesEverythingItOwns) {
  EXPECT_EQ(
      RunMem([] {
        FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
        PrimaryContext primary;
        FGPU_REQUIRE(primary.ok());
        const uint64_t start = FreeBytes();
        CUcontext ctx = nullptr;
        FGPU_REQUIRE_CU(cuCtxCreate_v2(&ctx, 0, 0), CUDA_SUCCESS);
        CUdeviceptr device = 0, managed = 0, async = 0;
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&device, 100 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 10 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuMemAllocAsync(&async, 30 * kMiB, nullptr), CUDA_SUCCESS);
        void* pinned = nullptr;
        FGPU_REQUIRE_CU(cuMemAllocHost_v2(&pinned, 4096), CUDA_SUCCESS);
        CUDA_ARRAY_DESCRIPTOR desc{1024, 1024, CU_AD_FORMAT_FLOAT, 4};
        CUarray array = nullptr;
        FGPU_REQUIRE_CU(cuArrayCreate_v2(&array, &desc), CUDA_SUCCESS);
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        CUmemGenericAllocationHandle handle = 0;
        FGPU_REQUIRE_CU(cuMemCreate(&handle, 8 * kMiB, &prop, 0), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() < start - 300 * kMiB);
        FGPU_REQUIRE_CU(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);  // overhead, allocations, pool reserve, array and VMM handle
        FGPU_REQUIRE_CU(cuCtxSetCurrent(primary.get()), CUDA_SUCCESS);
        CUdeviceptr base = 0;
        FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, nullptr, device), CUDA_ERROR_NOT_FOUND);
        FGPU_REQUIRE_CU(cuMemFree_v2(device), CUDA_ERROR_INVALID_VALUE);
        FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
        FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
        // A primary context reset releases the same way.
        FGPU_REQUIRE_CU(cuMemAlloc_v2(&device, 100 * kMiB), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
        FGPU_REQUIRE(FreeBytes() == start);
        return std::string();
      }),
      "");
}

TEST(SimMemory, LargeAllocationsCostNothingUntilTouched) {
  EXPECT_EQ(RunMem(
                [] {
                  PrimaryContext ctx;
                  FGPU_REQUIRE(ctx.ok());
                  CUdeviceptr big = 0;
                  const size_t bytes = 79 * kGiB;
                  FGPU_REQUIRE_CU(cuMemAlloc_v2(&big, bytes), CUDA_SUCCESS);
                  FGPU_REQUIRE_CU(cuMemsetD8_v2(big, 1, 4096), CUDA_SUCCESS);
                  FGPU_REQUIRE_CU(cuMemsetD8_v2(big + bytes - 4096, 2, 4096), CUDA_SUCCESS);
                  unsigned char ends[2] = {};
                  FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&ends[0], big, 1), CUDA_SUCCESS);
                  FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&ends[1], big + bytes - 1, 1), CUDA_SUCCESS);
                  FGPU_REQUIRE(ends[0] == 1 && ends[1] == 2);
                  FGPU_REQUIRE_CU(cuMemFree_v2(big), CUDA_SUCCESS);
                  return std::string();
                },
                R"({"devices": [{"memory": "80GiB"}]})"),
            "");
}

TEST(SimMemory, HundredThousandLiveAllocations) {
  EXPECT_EQ(RunMem(
                [] {
                  PrimaryContext ctx;
                  FGPU_REQUIRE(ctx.ok());
                  const uint64_t start = FreeBytes();
                  std::vector<CUdeviceptr> held(100000);
                  for (CUdeviceptr& p : held) FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 64), CUDA_SUCCESS);
                  FGPU_REQUIRE(FreeBytes() == start - held.size() * 4096);
                  for (size_t i = 0; i < held.size(); i += 997) {  // lookups land in the right allocation
                    CUdeviceptr base = 0;
                    FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, nullptr, held[i] + 63), CUDA_SUCCESS);
                    FGPU_REQUIRE(base == held[i]);
                  }
                  for (CUdeviceptr p : held) FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_SUCCESS);
                  FGPU_REQUIRE(FreeBytes() == start);
                  return std::string();
                },
                R"({"devices": [{"memory": "2GiB", "granularity": "4KiB"}]})"),
            "");
}

TEST(SimMemory, ConcurrentAllocationsAndCopiesBalance) {
  EXPECT_EQ(RunMem([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              std::vector<std::thread> threads;
              std::vector<std::string> failures(4);
              for (size_t t = 0; t < failures.size(); ++t) {
                threads.emplace_back([&, t] {
                  failures[t] = [&]() -> std::string {
                    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx.get()), CUDA_SUCCESS);
                    for (int i = 0; i < 200; ++i) {
                      CUdeviceptr p = 0;
                      const uint64_t value = t * 1000 + static_cast<uint64_t>(i);
                      uint64_t back = 0;
                      FGPU_REQUIRE_CU(cuMemAlloc_v2(&p, 8), CUDA_SUCCESS);
                      FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(p, &value, 8), CUDA_SUCCESS);
                      FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&back, p, 8), CUDA_SUCCESS);
                      FGPU_REQUIRE(back == value);
                      FGPU_REQUIRE_CU(cuMemFree_v2(p), CUDA_SUCCESS);
                    }
                    return "";
                  }();
                });
              }
              for (std::thread& thread : threads) thread.join();
              for (const std::string& failure : failures) {
                if (!failure.empty()) return failure;
              }
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
