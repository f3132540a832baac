// Tests of the platform features: export tables (never answered), legacy attach/detach, L2
// persistence, the deprecated profiler setup, RDMA flushes, execution affinity, NvSciSync,
// async notifications, atomics over links, dma-buf handles, coredump settings, cluster
// occupancy, batched prefetches and discards, decompression. Each test runs in a forked child.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kPlatformConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 132, "context_overhead": "300MiB"}]
})";
constexpr const char* kPlatformPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";

std::string RunPlatformSim(const std::function<std::string()>& body) {
  return RunWithConfig(kPlatformConfig, "platform-test", body);
}

void PlatformNotify(CUasyncNotificationInfo*, void*, CUasyncCallbackHandle) {}

TEST(SimPlatform, ContextsDevicesAndLinks) {
  EXPECT_EQ(RunPlatformSim([] {
    const void* table = &table;
    CUuuid id{};
    FGPU_REQUIRE_CU(cuGetExportTable(&table, &id), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE(table == nullptr);
    FGPU_REQUIRE_CU(cuGetExportTable(nullptr, &id), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxResetPersistingL2Cache(), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext primary;
    FGPU_REQUIRE(primary.ok());
    FGPU_REQUIRE_CU(cuGetExportTable(&table, &id), CUDA_ERROR_INVALID_VALUE);

    // Attach counts: a created context is destroyed when detached past its attaches.
    CUcontext created = nullptr, attached = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&created, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxAttach(&attached, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(attached == created);
    FGPU_REQUIRE_CU(cuCtxAttach(&attached, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxDetach(primary.get()), CUDA_ERROR_INVALID_CONTEXT);  // not current
    FGPU_REQUIRE_CU(cuCtxDetach(created), CUDA_SUCCESS);
    unsigned version = 0;
    FGPU_REQUIRE_CU(cuCtxGetApiVersion(created, &version), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxDetach(created), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetApiVersion(created, &version), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(primary.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxDetach(primary.get()), CUDA_ERROR_INVALID_CONTEXT);  // primary: released, not detached

    FGPU_REQUIRE_CU(cuCtxResetPersistingL2Cache(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuProfilerInitialize("cfg", "out", CU_OUT_CSV), CUDA_ERROR_NOT_SUPPORTED);
    int options = 0;
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&options, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(options == 3);
    FGPU_REQUIRE_CU(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                               CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                               static_cast<CUflushGPUDirectRDMAWritesScope>(7)),
                    CUDA_ERROR_INVALID_VALUE);

    // Execution affinity: the whole device, and no support for less without MPS.
    CUexecAffinityParam affinity{};
    FGPU_REQUIRE_CU(cuCtxGetExecAffinity(&affinity, CU_EXEC_AFFINITY_TYPE_SM_COUNT), CUDA_SUCCESS);
    FGPU_REQUIRE(affinity.param.smCount.val == 132);
    int supported = -1;
    FGPU_REQUIRE_CU(cuDeviceGetExecAffinitySupport(&supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(supported == 0);
    FGPU_REQUIRE_CU(cuDeviceGetExecAffinitySupport(&supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 5),
                    CUDA_ERROR_INVALID_DEVICE);
    char sci[64];
    FGPU_REQUIRE_CU(cuDeviceGetNvSciSyncAttributes(sci, 0, 1), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuDeviceGetNvSciSyncAttributes(sci, 0, 4), CUDA_ERROR_INVALID_VALUE);

    // Async notifications: registered and unregistered once; none is sent.
    CUasyncCallbackHandle handle = nullptr;
    FGPU_REQUIRE_CU(cuDeviceRegisterAsyncNotification(0, PlatformNotify, nullptr, &handle), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceUnregisterAsyncNotification(1, handle), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceUnregisterAsyncNotification(0, handle), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceUnregisterAsyncNotification(0, handle), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuDeviceRegisterAsyncNotification(0, nullptr, nullptr, &handle), CUDA_ERROR_INVALID_VALUE);

    // Atomics: none natively to the host over PCIe; integer and float add between the two devices.
    const CUatomicOperation operations[3] = {CU_ATOMIC_OPERATION_INTEGER_ADD, CU_ATOMIC_OPERATION_CAS,
                                             CU_ATOMIC_OPERATION_FLOAT_MAX};
    unsigned caps[3] = {9, 9, 9};
    FGPU_REQUIRE_CU(cuDeviceGetHostAtomicCapabilities(caps, operations, 3, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(caps[0] == 0 && caps[1] == 0 && caps[2] == 0);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAtomicCapabilities(caps, operations, 3, 0, 1), CUDA_SUCCESS);
    FGPU_REQUIRE((caps[0] & CU_ATOMIC_CAPABILITY_SCALAR_64) != 0 && (caps[0] & CU_ATOMIC_CAPABILITY_REDUCTION) != 0);
    FGPU_REQUIRE((caps[1] & CU_ATOMIC_CAPABILITY_SCALAR_32) != 0 && caps[2] == 0);
    FGPU_REQUIRE_CU(cuDeviceGetP2PAtomicCapabilities(caps, operations, 3, 0, 0), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuDeviceGetHostAtomicCapabilities(caps, operations, 0, 0), CUDA_ERROR_INVALID_VALUE);
    const CUatomicOperation bad = CU_ATOMIC_OPERATION_MAX;
    FGPU_REQUIRE_CU(cuDeviceGetHostAtomicCapabilities(caps, &bad, 1, 0), CUDA_ERROR_INVALID_VALUE);

    // dma-buf: validated, then not supported.
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 1 << 20), CUDA_SUCCESS);
    int fd = -1;
    FGPU_REQUIRE_CU(cuMemGetHandleForAddressRange(&fd, memory, 1 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
                    CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuMemGetHandleForAddressRange(&fd, memory, 2 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFree_v2(memory), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimPlatform, CoredumpSettingsAreKept) {
  EXPECT_EQ(RunPlatformSim([] {
    PrimaryContext primary;
    FGPU_REQUIRE(primary.ok());
    size_t size = 0;
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_FILE, nullptr, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(size == 1024);
    char file[1024] = {};
    FGPU_REQUIRE_CU(cuCoredumpGetAttributeGlobal(CU_COREDUMP_FILE, file, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(std::string(file).rfind("core.cuda.", 0) == 0);
    FGPU_REQUIRE(std::string(file).find("." + std::to_string(getpid())) != std::string::npos);
    bool on = true;
    size = sizeof on;
    FGPU_REQUIRE_CU(cuCoredumpSetAttributeGlobal(CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, &size), CUDA_SUCCESS);
    // A context takes the global settings when first asked, then keeps its own.
    bool seen = false;
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_ENABLE_ON_EXCEPTION, &seen, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(seen);
    on = false;
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, &size), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCoredumpGetAttributeGlobal(CU_COREDUMP_ENABLE_ON_EXCEPTION, &seen, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(seen);
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_ENABLE_ON_EXCEPTION, &seen, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(!seen);
    // Lightweight is a set of generation flags.
    on = true;
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_LIGHTWEIGHT, &on, &size), CUDA_SUCCESS);
    int flags = 0;
    size = sizeof flags;
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_GENERATION_FLAGS, &flags, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == CU_COREDUMP_LIGHTWEIGHT_FLAGS);
    flags = 1 << 20;
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_GENERATION_FLAGS, &flags, &size), CUDA_ERROR_INVALID_VALUE);
    // Paths: terminated, at most 1023 characters; the pipe and the user trigger only globally.
    char path[] = "/tmp/dumps/core";
    size = sizeof path;
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_FILE, path, &size), CUDA_SUCCESS);
    size = sizeof file;
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_FILE, file, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(std::strcmp(file, path) == 0);
    size = 4;  // not terminated within the size given
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_FILE, path, &size), CUDA_ERROR_INVALID_VALUE);
    size = sizeof path;
    FGPU_REQUIRE_CU(cuCoredumpSetAttribute(CU_COREDUMP_PIPE, path, &size), CUDA_ERROR_NOT_PERMITTED);
    FGPU_REQUIRE_CU(cuCoredumpSetAttributeGlobal(CU_COREDUMP_PIPE, path, &size), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_MAX, file, &size), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCoredumpGetAttribute(CU_COREDUMP_FILE, file, nullptr), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimPlatform, ClusterOccupancyAndBatches) {
  EXPECT_EQ(RunPlatformSim([] {
    PrimaryContext primary;
    FGPU_REQUIRE(primary.ok());
    CUmodule module = nullptr;
    CUfunction kernel = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kPlatformPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&kernel, module, "k"), CUDA_SUCCESS);
    CUlaunchConfig config{};
    config.gridDimX = 64;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 1024;  // two blocks per SM (2,048 threads)
    config.blockDimY = config.blockDimZ = 1;
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = 4;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    int size = 0, clusters = 0;
    FGPU_REQUIRE_CU(cuOccupancyMaxPotentialClusterSize(&size, kernel, &config), CUDA_SUCCESS);
    FGPU_REQUIRE(size == 8);
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveClusters(&clusters, kernel, &config), CUDA_ERROR_INVALID_VALUE);  // no size
    config.attrs = &cluster;
    config.numAttrs = 1;
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveClusters(&clusters, kernel, &config), CUDA_SUCCESS);
    FGPU_REQUIRE(clusters == 64);  // 8 GPCs of 16 or 17 SMs, 2 blocks each: 8 clusters of 4 per GPC
    cluster.value.clusterDim.x = 16;
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveClusters(&clusters, kernel, &config), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    config.blockDimX = 2048;
    FGPU_REQUIRE_CU(cuOccupancyMaxPotentialClusterSize(&size, kernel, &config), CUDA_ERROR_INVALID_VALUE);

    // Batched prefetches record where each range was sent; discards keep nothing from happening.
    CUdeviceptr a = 0, b = 0;
    FGPU_REQUIRE_CU(cuMemAllocManaged(&a, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAllocManaged(&b, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    CUdeviceptr dptrs[2] = {a, b};
    size_t sizes[2] = {1 << 20, 1 << 20};
    CUmemLocation locations[2] = {};
    locations[0].type = CU_MEM_LOCATION_TYPE_DEVICE;
    locations[0].id = 1;
    locations[1].type = CU_MEM_LOCATION_TYPE_HOST;
    size_t firsts[2] = {0, 1};
    FGPU_REQUIRE_CU(cuMemPrefetchBatchAsync(dptrs, sizes, 2, locations, firsts, 2, 0, stream), CUDA_SUCCESS);
    int where = 0;
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, a, 1 << 20),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(where == 1);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, b, 1 << 20),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(where == CU_DEVICE_CPU);
    FGPU_REQUIRE_CU(cuMemDiscardAndPrefetchBatchAsync_ptsz(dptrs, sizes, 2, locations, firsts, 1, 0, nullptr),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemRangeGetAttribute(&where, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, b, 1 << 20),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(where == 1);
    FGPU_REQUIRE_CU(cuMemDiscardBatchAsync(dptrs, sizes, 2, 0, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemDiscardBatchAsync_ptsz(dptrs, sizes, 2, 1, stream), CUDA_ERROR_INVALID_VALUE);
    // Not on the legacy stream; indices from 0, increasing; managed ranges only.
    FGPU_REQUIRE_CU(cuMemPrefetchBatchAsync(dptrs, sizes, 2, locations, firsts, 2, 0, nullptr),
                    CUDA_ERROR_INVALID_VALUE);
    size_t backwards[2] = {1, 0};
    FGPU_REQUIRE_CU(cuMemPrefetchBatchAsync(dptrs, sizes, 2, locations, backwards, 2, 0, stream),
                    CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr plain = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&plain, 1 << 20), CUDA_SUCCESS);
    dptrs[1] = plain;
    FGPU_REQUIRE_CU(cuMemDiscardBatchAsync(dptrs, sizes, 2, 0, stream), CUDA_ERROR_INVALID_VALUE);
    // No decompression engine on Hopper.
    CUmemDecompressParams params{};
    size_t error_index = 0;
    FGPU_REQUIRE_CU(cuMemBatchDecompressAsync(&params, 1, 0, &error_index, stream), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE(error_index == SIZE_MAX);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(plain), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
