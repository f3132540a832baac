// cuCtxSetLimit reserves device memory as cuda.h says the driver does: the heap and the printf
// FIFO as set, the stack for every thread the device can hold; over what the device has it is
// CUDA_ERROR_OUT_OF_MEMORY and the old value stays. Each test runs in a forked child.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

// 16 SMs x 2048 threads: a stack grown by 1 KiB reserves 32 MiB.
constexpr const char* kLimitsConfig = R"({
  "devices": [{"memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunLimitsSim(const std::function<std::string()>& body) {
  return RunWithConfig(kLimitsConfig, "limits-test", body);
}

TEST(SimLimits, RaisingALimitReservesDeviceMemoryAndLoweringItGivesItBack) {
  EXPECT_EQ(RunLimitsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t start = FreeBytes();
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (8 + 64) * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start - 64 * kMiB);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start - 96 * kMiB);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 3 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start - 98 * kMiB);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start);
    return std::string();
  }), "");
}

TEST(SimLimits, ALimitTheDeviceCannotHoldIsRefusedAndTheOldValueStays) {
  EXPECT_EQ(RunLimitsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t start = FreeBytes();
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8ull << 30), CUDA_ERROR_OUT_OF_MEMORY);
    size_t heap = 0;
    FGPU_REQUIRE_CU(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
    FGPU_REQUIRE(heap == 8 * kMiB);
    FGPU_REQUIRE(FreeBytes() == start);
    return std::string();
  }), "");
}

TEST(SimLimits, DestroyingTheContextReturnsWhatItsLimitsHeld) {
  EXPECT_EQ(RunLimitsSim([] {
    PrimaryContext primary;
    FGPU_REQUIRE(primary.ok());
    const uint64_t start = FreeBytes();
    CUcontext ctx = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&ctx, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 264 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start - 300 * kMiB - 256 * kMiB);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(primary.get()), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
