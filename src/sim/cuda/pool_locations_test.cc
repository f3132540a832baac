// Tests of CUDA 13.0's location-based pool calls, pool access queries, and pool sharing (which the
// simulator does not offer). Each test runs in a forked child.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kPoolLocationConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunPoolLocationSim(const std::function<std::string()>& body) {
  return RunWithConfig(kPoolLocationConfig, "pool-location-test", body);
}

TEST(SimPoolLocations, PoolsByLocationAccessAndSharing) {
  EXPECT_EQ(RunPoolLocationSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmemLocation device{};
    device.type = CU_MEM_LOCATION_TYPE_DEVICE;
    device.id = 1;
    CUmemoryPool by_location = nullptr, by_device = nullptr;
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&by_location, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGetDefaultMemPool(&by_device, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(by_location == by_device);
    // Setting a device's current pool shows through both forms.
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = device;
    CUmemoryPool mine = nullptr;
    FGPU_REQUIRE_CU(cuMemPoolCreate(&mine, &props), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemSetMemPool(&device, CU_MEM_ALLOCATION_TYPE_PINNED, mine), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGetMemPool(&by_device, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(by_device == mine);
    FGPU_REQUIRE_CU(cuMemGetMemPool(&by_location, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
    FGPU_REQUIRE(by_location == mine);
    device.id = 0;
    FGPU_REQUIRE_CU(cuMemSetMemPool(&device, CU_MEM_ALLOCATION_TYPE_PINNED, mine), CUDA_ERROR_INVALID_VALUE);
    // The host's default pool: made once, the same each time.
    CUmemLocation host{};
    host.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemoryPool host_pool = nullptr, again = nullptr;
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&host_pool, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemGetMemPool(&again, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
    FGPU_REQUIRE(host_pool != nullptr && host_pool == again);
    FGPU_REQUIRE_CU(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, mine), CUDA_ERROR_INVALID_VALUE);
    // Managed pools are not simulated; other types and locations are invalid.
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&again, &device, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&again, &device, CU_MEM_ALLOCATION_TYPE_INVALID), CUDA_ERROR_INVALID_VALUE);
    device.id = 7;
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&again, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuMemGetDefaultMemPool(&again, nullptr, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);

    // Access: the owner read-write, a peer as set.
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_MAX;
    device.id = 1;
    FGPU_REQUIRE_CU(cuMemPoolGetAccess(&flags, mine, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    device.id = 0;
    FGPU_REQUIRE_CU(cuMemPoolGetAccess(&flags, mine, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc grant{};
    grant.location = device;
    grant.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
    FGPU_REQUIRE_CU(cuMemPoolSetAccess(mine, &grant, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPoolGetAccess(&flags, mine, &device), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == CU_MEM_ACCESS_FLAGS_PROT_READ);
    FGPU_REQUIRE_CU(cuMemPoolGetAccess(&flags, reinterpret_cast<CUmemoryPool>(&flags), &device),
                    CUDA_ERROR_INVALID_VALUE);

    // Sharing: a pool made without a handle type cannot be exported; one made with it is not
    // simulated; nothing can be imported.
    int fd = -1;
    FGPU_REQUIRE_CU(cuMemPoolExportToShareableHandle(&fd, mine, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                    CUDA_ERROR_INVALID_VALUE);
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool shareable = nullptr;
    FGPU_REQUIRE_CU(cuMemPoolCreate(&shareable, &props), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPoolExportToShareableHandle(&fd, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                    CUDA_ERROR_NOT_SUPPORTED);
    CUmemoryPool imported = nullptr;
    FGPU_REQUIRE_CU(cuMemPoolImportFromShareableHandle(&imported, reinterpret_cast<void*>(3),
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                    CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr ptr = 0;
    FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync(&ptr, 4096, shareable, nullptr), CUDA_SUCCESS);
    CUmemPoolPtrExportData data{};
    FGPU_REQUIRE_CU(cuMemPoolExportPointer(&data, ptr), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuMemPoolExportPointer(&data, ptr + 16), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemPoolImportPointer(&ptr, shareable, &data), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFreeAsync(ptr, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPoolDestroy(shareable), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
