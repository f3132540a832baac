// Tests of device resources and green contexts: SM resources, splits, descriptors, green
// contexts with their own context, streams and events. Each test runs in a forked child.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kGreenConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 132, "context_overhead": "300MiB"}]
})";

std::string RunGreenSim(const std::function<std::string()>& body) {
  return RunWithConfig(kGreenConfig, "green-test", body);
}

TEST(SimGreenContexts, ResourcesSplitIntoGreenContexts) {
  EXPECT_EQ(RunGreenSim([] {
    CUdevResource device{};
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext primary;
    FGPU_REQUIRE(primary.ok());
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    FGPU_REQUIRE(device.type == CU_DEV_RESOURCE_TYPE_SM && device.sm.smCount == 132);
    FGPU_REQUIRE(device.sm.minSmPartitionSize == 8 && device.sm.smCoscheduledAlignment == 2);
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_INVALID),
                    CUDA_ERROR_INVALID_RESOURCE_TYPE);
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(2, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(0, &device, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);

    // Splits: groups of max(minCount, 8) rounded up to 8; the rest remains.
    unsigned groups = 0;
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 0, 20), CUDA_SUCCESS);
    FGPU_REQUIRE(groups == 5);  // 132 / 24
    CUdevResource parts[8] = {};
    CUdevResource rest{};
    groups = 2;
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(parts, &groups, &device, &rest, 0, 20), CUDA_SUCCESS);
    FGPU_REQUIRE(groups == 2 && parts[0].sm.smCount == 24 && parts[1].sm.smCount == 24 && rest.sm.smCount == 84);
    groups = 8;
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(parts, &groups, &device, nullptr,
                                                CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 3),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(groups == 8 && parts[0].sm.smCount == 4);
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 0, 133), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(nullptr, &groups, &device, nullptr, 4, 8), CUDA_ERROR_INVALID_VALUE);

    // A descriptor and a green context of one group: its own context, its SMs.
    groups = 1;
    FGPU_REQUIRE_CU(cuDevSmResourceSplitByCount(parts, &groups, &device, nullptr, 0, 16), CUDA_SUCCESS);
    CUdevResourceDesc desc = nullptr;
    FGPU_REQUIRE_CU(cuDevResourceGenerateDesc(&desc, parts, 1), CUDA_SUCCESS);
    const uint64_t before = FreeBytes();
    CUgreenCtx green = nullptr;
    FGPU_REQUIRE_CU(cuGreenCtxCreate(&green, desc, 0, 0), CUDA_ERROR_INVALID_VALUE);  // the default-stream flag
    FGPU_REQUIRE_CU(cuGreenCtxCreate(&green, desc, 1, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    FGPU_REQUIRE(before - FreeBytes() == 300ull << 20);  // a context's overhead
    CUcontext current = nullptr;
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE(current == primary.get());  // not made current
    CUdevResource mine{};
    FGPU_REQUIRE_CU(cuGreenCtxGetDevResource(green, &mine, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    FGPU_REQUIRE(mine.sm.smCount == 16);
    CUcontext green_ctx = nullptr;
    FGPU_REQUIRE_CU(cuCtxFromGreenCtx(&green_ctx, green), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetDevResource(green_ctx, &mine, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    FGPU_REQUIRE(mine.sm.smCount == 16);
    FGPU_REQUIRE_CU(cuCtxGetDevResource(nullptr, &mine, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    FGPU_REQUIRE(mine.sm.smCount == 132);  // the current, ordinary context
    unsigned long long id = 0;
    FGPU_REQUIRE_CU(cuGreenCtxGetId(green, &id), CUDA_SUCCESS);
    FGPU_REQUIRE(id != 0);

    // Streams and events.
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuGreenCtxStreamCreate(&stream, green, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    CUgreenCtx owner = nullptr;
    FGPU_REQUIRE_CU(cuStreamGetGreenCtx(stream, &owner), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == green);
    FGPU_REQUIRE_CU(cuStreamGetGreenCtx(nullptr, &owner), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == nullptr);
    CUevent event = nullptr;
    FGPU_REQUIRE_CU(cuCtxSetCurrent(green_ctx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventCreate(&event, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGreenCtxRecordEvent(green, event), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGreenCtxWaitEvent(green, event), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(event), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(primary.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGreenCtxDestroy(green), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    FGPU_REQUIRE_CU(cuGreenCtxDestroy(green), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuGreenCtxGetId(green, &id), CUDA_ERROR_INVALID_HANDLE);

    // Descriptors: resources made here, of one device, within its SMs.
    CUdevResource other{};
    FGPU_REQUIRE_CU(cuDeviceGetDevResource(1, &other, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    CUdevResource mixed[2] = {parts[0], other};
    FGPU_REQUIRE_CU(cuDevResourceGenerateDesc(&desc, mixed, 2), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
    CUdevResource forged{};
    forged.type = CU_DEV_RESOURCE_TYPE_SM;
    forged.sm.smCount = 8;
    FGPU_REQUIRE_CU(cuDevResourceGenerateDesc(&desc, &forged, 1), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
    FGPU_REQUIRE_CU(cuDevResourceGenerateDesc(&desc, parts, 0), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
