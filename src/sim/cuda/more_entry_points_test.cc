// Tests of the entry points of issue 18's third batch: copies between contexts, 2D sets, stream
// ids and devices, context and function preferences, function loading, module enumeration,
// device links and identifiers, pointer attributes in bulk and set, context-wide events, managed
// memory prefetches. Each
// test runs in a forked child (its own cuInit and segment) on two devices.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kEntryConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}],
  "default_kernel_wave_us": 10
})";
constexpr const char* kEntryPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n"
    ".visible .entry second()\n{\n ret;\n}\n";

std::string RunEntrySim(const std::function<std::string()>& body) {
  return RunWithConfig(kEntryConfig, "more-entry-points-test", body);
}

TEST(SimMoreEntryPoints, PeerCopiesMoveDataBetweenContextsOfTwoDevices) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx0(0);
    FGPU_REQUIRE(ctx0.ok());
    CUcontext ctx1 = nullptr;
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
    CUdeviceptr src = 0, dst = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&src, 1 << 20), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&dst, 1 << 20), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx0.get()), CUDA_SUCCESS);
    std::vector<uint32_t> pattern(1024), seen(1024);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint32_t>(i * 7 + 1);
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(src, pattern.data(), 4096), CUDA_SUCCESS);

    FGPU_REQUIRE_CU(cuMemcpyPeer(dst, ctx1, src, ctx0.get(), 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen.data(), dst, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE(seen == pattern);
    // Each variant copies a different slice back the other way.
    FGPU_REQUIRE_CU(cuMemcpyPeer_ptds(src + 8192, ctx0.get(), dst, ctx1, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync(src + 16384, ctx0.get(), dst + 1024, ctx1, 1024, nullptr), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync(src + 16384 + 1024, ctx0.get(), dst + 1024, ctx1, 1024, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync_ptsz(src + 32768, ctx0.get(), dst + 2048, ctx1, 1024, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    std::vector<uint32_t> back(256);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), src + 8192, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(back.data(), pattern.data(), 1024) == 0);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), src + 16384 + 1024, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(back.data(), pattern.data() + 256, 1024) == 0);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), src + 32768, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(back.data(), pattern.data() + 512, 1024) == 0);

    // Contexts are checked first, then both ranges; nothing is copied when either is wrong.
    FGPU_REQUIRE_CU(cuMemcpyPeer(dst, nullptr, src, ctx0.get(), 16), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuMemcpyPeer(dst, ctx1, src, reinterpret_cast<CUcontext>(&back), 16), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuMemcpyPeer(dst + (1 << 20) - 8, ctx1, src, ctx0.get(), 16), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync(dst, ctx1, 0, ctx0.get(), 16, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync(dst, ctx1, src, ctx0.get(), 16, reinterpret_cast<CUstream>(&back)),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuMemcpyPeer(dst, ctx1, src, ctx0.get(), 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(src), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(dst), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
    return std::string();
  }), "");
}

// Reads `rows` rows of `pitch` bytes back from `ptr`.
std::vector<uint8_t> Rows(CUdeviceptr ptr, size_t pitch, size_t rows) {
  std::vector<uint8_t> bytes(pitch * rows);
  if (cuMemcpyDtoH_v2(bytes.data(), ptr, bytes.size()) != CUDA_SUCCESS) bytes.clear();
  return bytes;
}

TEST(SimMoreEntryPoints, TwoDimensionalSetsFillRowsAndLeaveThePadding) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr ptr = 0;
    size_t pitch = 0;
    FGPU_REQUIRE_CU(cuMemAllocPitch_v2(&ptr, &pitch, 100, 4, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(pitch == 512);
    FGPU_REQUIRE_CU(cuMemsetD8_v2(ptr, 0, pitch * 4), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2(ptr, pitch, 0xAB, 100, 3), CUDA_SUCCESS);
    std::vector<uint8_t> bytes = Rows(ptr, pitch, 4);
    FGPU_REQUIRE(bytes.size() == pitch * 4);
    for (size_t row = 0; row < 4; ++row) {
      for (size_t x = 0; x < pitch; ++x) {
        FGPU_REQUIRE(bytes[row * pitch + x] == (row < 3 && x < 100 ? 0xAB : 0));
      }
    }
    // 16 and 32 bits: Width counts elements; every variant sets its own row.
    FGPU_REQUIRE_CU(cuMemsetD2D16_v2(ptr, pitch, 0x1234, 10, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D32_v2(ptr + pitch, pitch, 0xDEADBEEF, 5, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2_ptds(ptr + 2 * pitch, pitch, 1, 4, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D16_v2_ptds(ptr + 2 * pitch + 8, pitch, 2, 2, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D32_v2_ptds(ptr + 2 * pitch + 16, pitch, 3, 1, 1), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8Async(ptr + 3 * pitch, pitch, 4, 2, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8Async_ptsz(ptr + 3 * pitch + 2, pitch, 5, 2, 1, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D16Async(ptr + 3 * pitch + 4, pitch, 6, 1, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D16Async_ptsz(ptr + 3 * pitch + 6, pitch, 7, 1, 1, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D32Async(ptr + 3 * pitch + 8, pitch, 8, 1, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D32Async_ptsz(ptr + 3 * pitch + 12, pitch, 9, 1, 1, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    bytes = Rows(ptr, pitch, 4);
    uint16_t u16 = 0;
    uint32_t u32 = 0;
    std::memcpy(&u16, &bytes[18], 2);
    FGPU_REQUIRE(u16 == 0x1234);
    std::memcpy(&u32, &bytes[pitch + 16], 4);
    FGPU_REQUIRE(u32 == 0xDEADBEEF);
    FGPU_REQUIRE(bytes[pitch + 20] == 0xAB);
    const uint8_t row2[] = {1, 1, 1, 1, 0xAB, 0xAB, 0xAB, 0xAB, 2, 0, 2, 0, 0xAB, 0xAB, 0xAB, 0xAB, 3, 0, 0, 0};
    FGPU_REQUIRE(std::memcmp(&bytes[2 * pitch], row2, sizeof row2) == 0);
    const uint8_t row3[] = {4, 4, 5, 5, 6, 0, 7, 0, 8, 0, 0, 0, 9, 0, 0, 0, 0};
    FGPU_REQUIRE(std::memcmp(&bytes[3 * pitch], row3, sizeof row3) == 0);

    // Validated like the 1D sets: alignment, the pitch, the whole extent inside the allocation.
    FGPU_REQUIRE_CU(cuMemsetD2D16_v2(ptr + 1, pitch, 0, 4, 2), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemsetD2D32_v2(ptr, pitch + 2, 0, 4, 2), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2(ptr, 50, 0, 100, 2), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2(ptr, pitch, 0, 100, 5), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2(0, pitch, 0, 100, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemsetD2D8_v2(ptr, pitch, 0, 0, 7), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8Async(ptr, pitch, 0, 1, 1, reinterpret_cast<CUstream>(&pitch)),
                    CUDA_ERROR_INVALID_HANDLE);

    // The legacy 32-bit entry points name allocations below 4 GiB.
    CUdeviceptr_v1 low = 0;
    FGPU_REQUIRE_CU(cuMemAlloc(&low, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D8(low, 64, 0x11, 8, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D16(low + 128, 64, 0x2222, 4, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD2D32(low + 256, 64, 0x33333333, 2, 2), CUDA_SUCCESS);
    const std::vector<uint8_t> legacy = Rows(low, 64, 6);
    FGPU_REQUIRE(legacy.size() == 384);
    FGPU_REQUIRE(legacy[64 + 7] == 0x11 && legacy[64 + 8] == 0);
    FGPU_REQUIRE(legacy[192 + 7] == 0x22 && legacy[320 + 7] == 0x33);
    FGPU_REQUIRE_CU(cuMemFree(low), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(ptr), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, StreamsHaveStableDistinctIdsAndTheirDevice) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUstream a = nullptr, b = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&a, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    unsigned long long id_a = 0, id_b = 0, again = 0, legacy = 0, legacy2 = 0, per_thread = 0, per_thread2 = 0;
    FGPU_REQUIRE_CU(cuStreamGetId(a, &id_a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId(b, &id_b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId_ptsz(a, &again), CUDA_SUCCESS);
    FGPU_REQUIRE(id_a != id_b && again == id_a);
    FGPU_REQUIRE_CU(cuStreamGetId(nullptr, &legacy), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId_ptsz(CU_STREAM_LEGACY, &legacy2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId_ptsz(nullptr, &per_thread), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread2), CUDA_SUCCESS);
    FGPU_REQUIRE(legacy == legacy2 && per_thread == per_thread2);
    FGPU_REQUIRE(legacy != per_thread && legacy != id_a && legacy != id_b && per_thread != id_a && per_thread != id_b);
    FGPU_REQUIRE_CU(cuStreamGetId(a, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamGetId(reinterpret_cast<CUstream>(&again), &again), CUDA_ERROR_INVALID_HANDLE);
    // A destroyed stream's id is not reused.
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(b), CUDA_SUCCESS);
    CUstream c = nullptr;
    unsigned long long id_c = 0;
    FGPU_REQUIRE_CU(cuStreamCreate(&c, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetId(c, &id_c), CUDA_SUCCESS);
    FGPU_REQUIRE(id_c != id_b && id_c != id_a);

    CUdevice device = -1;
    FGPU_REQUIRE_CU(cuStreamGetDevice(a, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(device == 0);
    FGPU_REQUIRE_CU(cuStreamGetDevice(a, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUcontext other = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&other, 0, 1), CUDA_SUCCESS);  // made current
    CUstream on_one = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&on_one, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetDevice_ptsz(on_one, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(device == 1);
    FGPU_REQUIRE_CU(cuStreamGetDevice_ptsz(nullptr, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(device == 1);
    FGPU_REQUIRE_CU(cuStreamGetDevice(a, &device), CUDA_SUCCESS);  // a stream of another context
    FGPU_REQUIRE(device == 0);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(on_one), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(other), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(c), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, ContextPreferencesAreKeptPerContext) {
  EXPECT_EQ(RunEntrySim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUfunc_cache cache = CU_FUNC_CACHE_PREFER_L1;
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(&cache), CUDA_ERROR_INVALID_CONTEXT);  // none current yet
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(&cache), CUDA_SUCCESS);
    FGPU_REQUIRE(cache == CU_FUNC_CACHE_PREFER_NONE);
    FGPU_REQUIRE_CU(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(&cache), CUDA_SUCCESS);
    FGPU_REQUIRE(cache == CU_FUNC_CACHE_PREFER_SHARED);
    // A C caller may pass any int (an out-of-range enum value is not expressible in C++).
    const auto set_cache_config = reinterpret_cast<CUresult (*)(int)>(&cuCtxSetCacheConfig);
    FGPU_REQUIRE_CU(set_cache_config(4), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(nullptr), CUDA_ERROR_INVALID_VALUE);
    CUcontext other = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&other, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(&cache), CUDA_SUCCESS);
    FGPU_REQUIRE(cache == CU_FUNC_CACHE_PREFER_NONE);  // a new context starts from the default
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(other), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetCacheConfig(&cache), CUDA_SUCCESS);
    FGPU_REQUIRE(cache == CU_FUNC_CACHE_PREFER_SHARED);

    // The bank width is fixed at four bytes: valid requests succeed and change nothing.
    CUsharedconfig banks = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    FGPU_REQUIRE_CU(cuCtxGetSharedMemConfig(&banks), CUDA_SUCCESS);
    FGPU_REQUIRE(banks == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    FGPU_REQUIRE_CU(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetSharedMemConfig(&banks), CUDA_SUCCESS);
    FGPU_REQUIRE(banks == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    FGPU_REQUIRE_CU(cuCtxSetSharedMemConfig(static_cast<CUsharedconfig>(3)), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxGetSharedMemConfig(nullptr), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, FunctionsKnowTheirModuleAreLoadedAndKeepLegacySettings) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmodule module = nullptr, owner = nullptr;
    CUfunction spin = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kEntryPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&spin, module, "fgpu_spin"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncGetModule(&owner, spin), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == module);
    FGPU_REQUIRE_CU(cuFuncGetModule(nullptr, spin), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncGetModule(&owner, reinterpret_cast<CUfunction>(&owner)), CUDA_ERROR_INVALID_HANDLE);
    CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
    FGPU_REQUIRE_CU(cuFuncIsLoaded(&state, spin), CUDA_SUCCESS);
    FGPU_REQUIRE(state == CU_FUNCTION_LOADING_STATE_LOADED);
    FGPU_REQUIRE_CU(cuFuncIsLoaded(nullptr, spin), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncLoad(spin), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncLoad(nullptr), CUDA_ERROR_INVALID_HANDLE);

    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 32, 8, 4), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 1024, 1, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 64, 32, 1), CUDA_ERROR_INVALID_VALUE);  // 2048 threads
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 1, 1, 65), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 0, 1, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(nullptr, 1, 1, 1), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuFuncSetSharedSize(spin, 48 * 1024), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetSharedSize(spin, 228 * 1024), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetSharedSize(nullptr, 0), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuFuncSetSharedMemConfig(spin, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetSharedMemConfig(spin, static_cast<CUsharedconfig>(3)), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetSharedMemConfig(nullptr, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncIsLoaded(&state, spin), CUDA_ERROR_INVALID_HANDLE);  // gone with its module
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, ModulesEnumerateTheirFunctions) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmodule module = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kEntryPtx), CUDA_SUCCESS);
    unsigned count = 0;
    FGPU_REQUIRE_CU(cuModuleGetFunctionCount(&count, module), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    CUfunction all[3] = {};
    FGPU_REQUIRE_CU(cuModuleEnumerateFunctions(all, 3, module), CUDA_SUCCESS);
    CUfunction spin = nullptr, second = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetFunction(&spin, module, "fgpu_spin"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&second, module, "second"), CUDA_SUCCESS);
    FGPU_REQUIRE(all[0] == spin && all[1] == second && all[2] == nullptr);
    CUfunction first_only[1] = {};
    FGPU_REQUIRE_CU(cuModuleEnumerateFunctions(first_only, 1, module), CUDA_SUCCESS);
    FGPU_REQUIRE(first_only[0] == spin);
    FGPU_REQUIRE_CU(cuModuleEnumerateFunctions(nullptr, 1, module), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuModuleGetFunctionCount(nullptr, module), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuModuleGetFunctionCount(&count, reinterpret_cast<CUmodule>(&count)), CUDA_ERROR_INVALID_HANDLE);

    // A binary image is not read: it lists the functions looked up so far.
    const unsigned char elf[64] = {0x7f, 'E', 'L', 'F'};
    CUmodule binary = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&binary, elf), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunctionCount(&count, binary), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 0);
    CUfunction kernel = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetFunction(&kernel, binary, "kernel"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunctionCount(&count, binary), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1);
    FGPU_REQUIRE_CU(cuModuleEnumerateFunctions(all, 3, binary), CUDA_SUCCESS);
    FGPU_REQUIRE(all[0] == kernel);
    FGPU_REQUIRE_CU(cuModuleUnload(binary), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);

    CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
    FGPU_REQUIRE_CU(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
    FGPU_REQUIRE(mode == CU_MODULE_LAZY_LOADING);
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    FGPU_REQUIRE_CU(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
    FGPU_REQUIRE(mode == CU_MODULE_EAGER_LOADING);
    FGPU_REQUIRE_CU(cuModuleGetLoadingMode(nullptr), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, DevicesDescribeTheirLinksAndHaveNoLuid) {
  EXPECT_EQ(RunEntrySim([] {
    int value = -1;
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
                    CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    int can = 0;
    FGPU_REQUIRE_CU(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(value == can && value == 1);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, 1, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(value == 1);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED, 0, 1),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(value == 1);
    FGPU_REQUIRE_CU(
        cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED, 0, 1),
        CUDA_SUCCESS);
    FGPU_REQUIRE(value == 0);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(value == 0);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 1),
                    CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 2),
                    CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(&value, static_cast<CUdevice_P2PAttribute>(6), 0, 1),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAttribute(nullptr, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
                    CUDA_ERROR_INVALID_VALUE);

    size_t width = 0;
    FGPU_REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(width == (size_t{1} << 28));
    FGPU_REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_UNSIGNED_INT8, 1, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(width == (size_t{1} << 28));
    FGPU_REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 3, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(nullptr, CU_AD_FORMAT_FLOAT, 1, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 1, 7), CUDA_ERROR_INVALID_DEVICE);

    char luid[8] = {};
    unsigned mask = 0;
    FGPU_REQUIRE_CU(cuDeviceGetLuid(luid, &mask, 0), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuDeviceGetLuid(nullptr, &mask, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceGetLuid(luid, &mask, 9), CUDA_ERROR_INVALID_DEVICE);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, PointerAttributesInBulkAndTheSyncMemopsFlag) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr ptr = 0, managed = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&ptr, 1 << 20), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};
    CUcontext owner = nullptr;
    int is_managed = -1, ordinal = -1, sync = -1;
    size_t size = 0;
    void* data[] = {&owner, &is_managed, &ordinal, &size, &sync};
    FGPU_REQUIRE_CU(cuPointerGetAttributes(5, which, data, managed + 64), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == ctx.get() && is_managed == 1 && ordinal == 0 && size == (1 << 20) && sync == 0);
    FGPU_REQUIRE_CU(cuPointerGetAttributes(5, which, data, ptr), CUDA_SUCCESS);
    FGPU_REQUIRE(is_managed == 0);

    // An address the driver does not know is no error here: every attribute gets its default.
    int on_stack = 0;
    FGPU_REQUIRE_CU(cuPointerGetAttributes(5, which, data, reinterpret_cast<CUdeviceptr>(&on_stack)), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == nullptr && is_managed == 0 && ordinal == CU_DEVICE_INVALID && size == 0 && sync == 0);
    FGPU_REQUIRE_CU(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                          reinterpret_cast<CUdeviceptr>(&on_stack)),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuPointerGetAttributes(5, nullptr, data, ptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuPointerGetAttributes(5, which, nullptr, ptr), CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute bogus[] = {static_cast<CUpointer_attribute>(30)};
    FGPU_REQUIRE_CU(cuPointerGetAttributes(1, bogus, data, ptr), CUDA_ERROR_INVALID_VALUE);

    // Only SYNC_MEMOPS is settable; cuPointerGetAttribute reports it, for the whole allocation.
    const unsigned one = 1, zero = 0;
    FGPU_REQUIRE_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr + 100), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr), CUDA_SUCCESS);
    FGPU_REQUIRE(sync == 1);
    FGPU_REQUIRE_CU(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, managed), CUDA_SUCCESS);
    FGPU_REQUIRE(sync == 0);
    FGPU_REQUIRE_CU(cuPointerSetAttribute(&zero, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr), CUDA_SUCCESS);
    FGPU_REQUIRE(sync == 0);
    FGPU_REQUIRE_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuPointerSetAttribute(nullptr, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                          reinterpret_cast<CUdeviceptr>(&on_stack)),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFree_v2(ptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, ContextEventsCaptureAllWorkAndMakeLaterWorkWait) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmodule module = nullptr;
    CUfunction spin = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kEntryPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&spin, module, "fgpu_spin"), CUDA_SUCCESS);
    CUevent all_work = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&all_work, 0), CUDA_SUCCESS);
    // An idle context: the event completes at once.
    FGPU_REQUIRE_CU(cuCtxRecordEvent(ctx.get(), all_work), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventQuery(all_work), CUDA_SUCCESS);
    // Work on a non-blocking stream is work of the context too.
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    unsigned long long ns = 300'000'000;  // 300 ms
    void* params[] = {&ns};
    FGPU_REQUIRE_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxRecordEvent(nullptr, all_work), CUDA_SUCCESS);  // NULL: the current context
    FGPU_REQUIRE_CU(cuEventQuery(all_work), CUDA_ERROR_NOT_READY);

    // A context of the other device waits for it: its later work starts after the event.
    CUcontext other = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&other, 0, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxRecordEvent(other, all_work), CUDA_ERROR_INVALID_HANDLE);  // not its event
    FGPU_REQUIRE_CU(cuCtxWaitEvent(other, all_work), CUDA_SUCCESS);
    CUevent later = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&later, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(later, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventQuery(later), CUDA_ERROR_NOT_READY);
    FGPU_REQUIRE_CU(cuEventSynchronize(later), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventQuery(all_work), CUDA_SUCCESS);
    float ms = -1;
    FGPU_REQUIRE_CU(cuEventElapsedTime_v2(&ms, all_work, later), CUDA_SUCCESS);
    FGPU_REQUIRE(ms >= 0);

    FGPU_REQUIRE_CU(cuCtxWaitEvent(other, reinterpret_cast<CUevent>(&ms)), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuCtxWaitEvent(reinterpret_cast<CUcontext>(&ms), all_work), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuCtxRecordEvent(reinterpret_cast<CUcontext>(&ms), all_work), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(later), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(other), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(all_work), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimMoreEntryPoints, PrefetchesOfManagedMemoryAreValidatedAndMoveNothing) {
  EXPECT_EQ(RunEntrySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr managed = 0, plain = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&plain, 1 << 20), CUDA_SUCCESS);
    const uint32_t value = 0xFEEDFACE;
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(managed + 64, &value, 4), CUDA_SUCCESS);
    const uint64_t free_before = FreeBytes();
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync(managed, 1 << 20, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_ptsz(managed + 4096, 4096, CU_DEVICE_CPU, nullptr), CUDA_SUCCESS);
    CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0}, host{CU_MEM_LOCATION_TYPE_HOST, 42};
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_v2(managed, 1 << 20, device, 0, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_v2_ptsz(managed, 1 << 20, host, 0, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == free_before);  // resident from the start: nothing moved, nothing charged
    uint32_t seen = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&seen, managed + 64, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(seen == value);

    FGPU_REQUIRE_CU(cuMemPrefetchAsync(plain, 4096, 0, stream), CUDA_ERROR_INVALID_VALUE);  // not managed
    FGPU_REQUIRE_CU(cuMemPrefetchAsync(managed, (1 << 20) + 1, 0, stream), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync(managed, 4096, 5, stream), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_v2(managed, 4096, device, 1, stream), CUDA_ERROR_INVALID_VALUE);
    CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 3};
    FGPU_REQUIRE_CU(cuMemPrefetchAsync_v2(managed, 4096, numa, 0, stream), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemPrefetchAsync(managed, 4096, 0, reinterpret_cast<CUstream>(&seen)),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(plain), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
