// Tests of external memory and semaphores: opaque-fd memory (a memfd, a simulated VMM export)
// mapped as device buffers that share their pages, what an import charges, binary and timeline
// semaphores signalled and waited on streams, and the handle types a Linux H100 does not have.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "core/units.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr uint64_t kExternalMiB = 1024 * 1024;
constexpr const char* kExternalConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}],
  "default_kernel_wave_us": 10
})";

std::string RunExternalSim(const std::function<std::string()>& body) {
  return RunWithConfig(kExternalConfig, "external-test", body);
}

int ExternalMemfd(uint64_t bytes) {
  const int fd = memfd_create("external-test", MFD_CLOEXEC);
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

CUDA_EXTERNAL_MEMORY_HANDLE_DESC OpaqueFd(int fd, uint64_t size) {
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = size;
  return desc;
}

TEST(SimExternalMemory, OpaqueFdMemoryIsSharedAndChargedOnce) {
  EXPECT_EQ(RunExternalSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t before = FreeBytes();

    // A memfd nobody charged: the import charges its size, rounded to the granularity.
    const int fd = ExternalMemfd(5 * kExternalMiB);
    FGPU_REQUIRE(fd >= 0);
    const int observer = dup(fd);
    CUexternalMemory memory = nullptr;
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc = OpaqueFd(fd, 5 * kExternalMiB);
    desc.flags = CUDA_EXTERNAL_MEMORY_DEDICATED;
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_SUCCESS);
    FGPU_REQUIRE(before - FreeBytes() == 6 * kExternalMiB);
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC whole{}, tail{};
    whole.size = 5 * kExternalMiB;
    tail.offset = kExternalMiB;
    tail.size = 4096;
    CUdeviceptr buffer = 0, tail_buffer = 0;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &whole), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&tail_buffer, memory, &tail), CUDA_SUCCESS);
    FGPU_REQUIRE(before - FreeBytes() == 6 * kExternalMiB);  // mapping charges nothing more
    // What the device writes, the other side of the descriptor and the other view read.
    const uint32_t pattern[4] = {1, 2, 3, 4};
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(buffer + kExternalMiB, pattern, sizeof pattern), CUDA_SUCCESS);
    uint32_t seen[4] = {};
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen, tail_buffer, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(seen, pattern, sizeof seen) == 0);
    void* host = mmap(nullptr, 2 * kExternalMiB, PROT_READ, MAP_SHARED, observer, 0);
    FGPU_REQUIRE(host != MAP_FAILED);
    FGPU_REQUIRE(std::memcmp(static_cast<char*>(host) + kExternalMiB, pattern, sizeof pattern) == 0);
    munmap(host, 2 * kExternalMiB);
    close(observer);
    CUdeviceptr base = 0;
    size_t size = 0;
    FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, tail_buffer + 8), CUDA_SUCCESS);
    FGPU_REQUIRE(base == tail_buffer && size == 4096);
    // Destroying the import credits it; its buffers stay usable until cuMemFree.
    FGPU_REQUIRE_CU(cuDestroyExternalMemory(memory), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen, tail_buffer, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(tail_buffer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDestroyExternalMemory(memory), CUDA_ERROR_INVALID_HANDLE);

    // A simulated VMM export: its exporter holds the charge, the import adds none.
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle vmm = 0;
    FGPU_REQUIRE_CU(cuMemCreate(&vmm, 2 * kExternalMiB, &prop, 0), CUDA_SUCCESS);
    const uint64_t with_vmm = FreeBytes();
    FGPU_REQUIRE(before - with_vmm == 2 * kExternalMiB);
    int exported = -1;
    FGPU_REQUIRE_CU(
        cuMemExportToShareableHandle(&exported, vmm, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        CUDA_SUCCESS);
    CUdeviceptr va = 0;
    FGPU_REQUIRE_CU(cuMemAddressReserve(&va, 2 * kExternalMiB, 0, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemMap(va, 2 * kExternalMiB, 0, vmm, 0), CUDA_SUCCESS);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    FGPU_REQUIRE_CU(cuMemSetAccess(va, 2 * kExternalMiB, &access, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(va + 64, pattern, sizeof pattern), CUDA_SUCCESS);
    desc = OpaqueFd(exported, 2 * kExternalMiB);
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == with_vmm);
    whole.size = 2 * kExternalMiB;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &whole), CUDA_SUCCESS);
    std::memset(seen, 0, sizeof seen);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen, buffer + 64, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(seen, pattern, sizeof seen) == 0);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDestroyExternalMemory(memory), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == with_vmm);
    FGPU_REQUIRE_CU(cuMemUnmap(va, 2 * kExternalMiB), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAddressFree(va, 2 * kExternalMiB), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemRelease(vmm), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    return std::string();
  }), "");
}

TEST(SimExternalMemory, RefusalsAreTheDriversErrors) {
  EXPECT_EQ(RunExternalSim([] {
    CUexternalMemory memory = nullptr;
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc = OpaqueFd(-1, 4096);
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t before = FreeBytes();
    const int fd = ExternalMemfd(kExternalMiB);
    FGPU_REQUIRE(fd >= 0);
    FGPU_REQUIRE_CU(cuImportExternalMemory(nullptr, &desc), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_INVALID_HANDLE);  // fd -1
    desc = OpaqueFd(fd, 2 * kExternalMiB);  // larger than the object
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_INVALID_VALUE);
    desc = OpaqueFd(fd, kExternalMiB);
    desc.flags = 4;
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_INVALID_VALUE);
    desc.flags = 0;
    desc.type = static_cast<CUexternalMemoryHandleType>(0);
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_INVALID_VALUE);
    for (int type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32;
         type <= CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD; ++type) {
      desc.type = static_cast<CUexternalMemoryHandleType>(type);
      FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_NOT_SUPPORTED);
    }
    FGPU_REQUIRE(FreeBytes() == before);
    desc = OpaqueFd(fd, kExternalMiB);
    FGPU_REQUIRE_CU(cuImportExternalMemory(&memory, &desc), CUDA_SUCCESS);
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer_desc{};
    CUdeviceptr buffer = 0;
    buffer_desc.size = 0;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &buffer_desc),
                    CUDA_ERROR_INVALID_VALUE);
    buffer_desc.offset = 4096;
    buffer_desc.size = kExternalMiB;  // past the end
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &buffer_desc),
                    CUDA_ERROR_INVALID_VALUE);
    buffer_desc.offset = 0;
    buffer_desc.flags = 1;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &buffer_desc),
                    CUDA_ERROR_INVALID_VALUE);
    buffer_desc.flags = 0;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(nullptr, memory, &buffer_desc),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(
                        &buffer, reinterpret_cast<CUexternalMemory>(&desc), &buffer_desc),
                    CUDA_ERROR_INVALID_HANDLE);
    CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC array_desc{};
    array_desc.arrayDesc.Width = 64;
    array_desc.arrayDesc.Format = CU_AD_FORMAT_FLOAT;
    array_desc.arrayDesc.NumChannels = 1;
    array_desc.numLevels = 1;
    CUmipmappedArray array = nullptr;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedMipmappedArray(&array, memory, &array_desc),
                    CUDA_ERROR_NOT_SUPPORTED);
    array_desc.numLevels = 0;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedMipmappedArray(&array, memory, &array_desc),
                    CUDA_ERROR_INVALID_VALUE);
    // A context's imports and buffers go with it.
    buffer_desc.offset = 100;  // not page-aligned
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &buffer_desc),
                    CUDA_ERROR_INVALID_VALUE);
    buffer_desc.offset = 0;
    buffer_desc.size = 4096;
    FGPU_REQUIRE_CU(cuExternalMemoryGetMappedBuffer(&buffer, memory, &buffer_desc), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() < before);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    CUcontext fresh = nullptr;
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&fresh, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(fresh), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    FGPU_REQUIRE_CU(cuDestroyExternalMemory(memory), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimExternalSemaphores, SignalsAndWaitsOrderStreams) {
  EXPECT_EQ(RunExternalSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUstream a = nullptr, b = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr word = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&word, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(word, 0, 1), CUDA_SUCCESS);

    // A timeline semaphore on a shared object: its counter is the object's first eight bytes.
    const int fd = ExternalMemfd(4096);
    FGPU_REQUIRE(fd >= 0);
    const int observer = dup(fd);
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
    desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    desc.handle.fd = fd;
    CUexternalSemaphore timeline = nullptr;
    FGPU_REQUIRE_CU(cuImportExternalSemaphore(&timeline, &desc), CUDA_SUCCESS);
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait{};
    wait.params.fence.value = 3;
    FGPU_REQUIRE_CU(cuWaitExternalSemaphoresAsync(&timeline, &wait, 1, a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(a, word, 1, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal{};
    signal.params.fence.value = 2;
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync(&timeline, &signal, 1, b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(a), CUDA_ERROR_NOT_READY);  // 2 < 3
    signal.params.fence.value = 3;
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync_ptsz(&timeline, &signal, 1, b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(a), CUDA_SUCCESS);
    uint32_t seen = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&seen, word, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(seen == 1);
    uint64_t counter = 0;
    FGPU_REQUIRE(pread(observer, &counter, sizeof counter, 0) == sizeof counter && counter == 3);
    close(observer);

    // A binary semaphore on a descriptor that does not map (an eventfd): a signal is consumed
    // by one wait.
    desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = eventfd(0, EFD_CLOEXEC);
    CUexternalSemaphore binary = nullptr;
    FGPU_REQUIRE_CU(cuImportExternalSemaphore(&binary, &desc), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync(&binary, &signal, 1, b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuWaitExternalSemaphoresAsync_ptsz(&binary, &wait, 1, a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuWaitExternalSemaphoresAsync(&binary, &wait, 1, a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync(&binary, &signal, 1, b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(a), CUDA_SUCCESS);

    // Refusals.
    const auto bogus = reinterpret_cast<CUexternalSemaphore>(&desc);
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync(&bogus, &signal, 1, a), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuWaitExternalSemaphoresAsync(nullptr, &wait, 1, a), CUDA_ERROR_INVALID_VALUE);
    signal.flags = 1;
    FGPU_REQUIRE_CU(cuSignalExternalSemaphoresAsync(&binary, &signal, 1, a), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuImportExternalSemaphore(nullptr, &desc), CUDA_ERROR_INVALID_VALUE);
    desc.handle.fd = -1;
    FGPU_REQUIRE_CU(cuImportExternalSemaphore(&binary, &desc), CUDA_ERROR_INVALID_HANDLE);
    for (int type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32;
         type <= CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32; ++type) {
      if (type == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD) continue;
      desc.type = static_cast<CUexternalSemaphoreHandleType>(type);
      FGPU_REQUIRE_CU(cuImportExternalSemaphore(&binary, &desc), CUDA_ERROR_NOT_SUPPORTED);
    }
    FGPU_REQUIRE_CU(cuDestroyExternalSemaphore(timeline), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDestroyExternalSemaphore(timeline), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(word), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
