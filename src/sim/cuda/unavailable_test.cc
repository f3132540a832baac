// Tests of the driver logs (always empty) and of the features the simulated H100 does not offer:
// checkpoints, multicast objects, graphics interop. Each test runs in a forked child.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kUnavailableConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunUnavailableSim(const std::function<std::string()>& body) {
  return RunWithConfig(kUnavailableConfig, "unavailable-test", body);
}

void UnavailableLog(void*, CUlogLevel, char*, size_t) {}

TEST(SimUnavailable, DriverLogsAreEmpty) {
  EXPECT_EQ(RunUnavailableSim([] {
    CUlogIterator iterator = 7;
    FGPU_REQUIRE_CU(cuLogsCurrent(&iterator, 0), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUlogsCallbackHandle handle = nullptr;
    FGPU_REQUIRE_CU(cuLogsRegisterCallback(UnavailableLog, nullptr, &handle), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLogsUnregisterCallback(handle), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLogsUnregisterCallback(handle), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLogsRegisterCallback(nullptr, nullptr, &handle), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLogsCurrent(&iterator, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLogsCurrent(&iterator, 1), CUDA_ERROR_INVALID_VALUE);
    char buffer[64] = "untouched";
    size_t size = sizeof buffer;
    FGPU_REQUIRE_CU(cuLogsDumpToMemory(nullptr, buffer, &size, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(size == 0 && buffer[0] == '\0');
    FGPU_REQUIRE_CU(cuLogsDumpToMemory(&iterator, nullptr, &size, 0), CUDA_ERROR_INVALID_VALUE);
    const std::string path = "/tmp/fgpu-unavailable-logs-" + std::to_string(getpid());
    FGPU_REQUIRE_CU(cuLogsDumpToFile(&iterator, path.c_str(), 0), CUDA_SUCCESS);
    struct stat st {};
    const bool made = stat(path.c_str(), &st) == 0 && st.st_size == 0;
    std::remove(path.c_str());
    FGPU_REQUIRE(made);
    FGPU_REQUIRE_CU(cuLogsDumpToFile(&iterator, "/nonexistent/dir/log", 0), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimUnavailable, CheckpointsMulticastAndGraphicsAnswerAsWithoutThem) {
  EXPECT_EQ(RunUnavailableSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUprocessState state = CU_PROCESS_STATE_FAILED;
    FGPU_REQUIRE_CU(cuCheckpointProcessGetState(getpid(), &state), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuCheckpointProcessGetState(getpid(), nullptr), CUDA_ERROR_INVALID_VALUE);
    CUcheckpointLockArgs lock{};
    FGPU_REQUIRE_CU(cuCheckpointProcessLock(getpid(), &lock), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuCheckpointProcessCheckpoint(getpid(), nullptr), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuCheckpointProcessRestore(getpid(), nullptr), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuCheckpointProcessUnlock(getpid(), nullptr), CUDA_ERROR_NOT_SUPPORTED);
    int tid = 0;
    FGPU_REQUIRE_CU(cuCheckpointProcessGetRestoreThreadId(-1, &tid), CUDA_ERROR_INVALID_VALUE);

    int multicast = -1;
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(multicast == 0);
    CUmulticastObjectProp prop{};
    prop.numDevices = 1;
    prop.size = 2 << 20;
    CUmemGenericAllocationHandle handle = 0;
    FGPU_REQUIRE_CU(cuMulticastCreate(&handle, &prop), CUDA_ERROR_NOT_SUPPORTED);
    size_t granularity = 0;
    FGPU_REQUIRE_CU(cuMulticastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED),
                    CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuMulticastCreate(nullptr, &prop), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMulticastAddDevice(handle, 3), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuMulticastBindAddr(handle, 0, 0, 2 << 20, 0), CUDA_ERROR_NOT_SUPPORTED);

    auto resource = reinterpret_cast<CUgraphicsResource>(&prop);
    FGPU_REQUIRE_CU(cuGraphicsUnregisterResource(resource), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuGraphicsMapResources(1, &resource, nullptr), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuGraphicsUnmapResources_ptsz(0, nullptr, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphicsMapResources(1, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr pointer = 0;
    size_t size = 0;
    FGPU_REQUIRE_CU(cuGraphicsResourceGetMappedPointer_v2(&pointer, &size, resource), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuGraphicsResourceSetMapFlags_v2(resource, 7), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
