// fgpu_hook_pool_helper: the PyTorch cudaMallocAsync pattern against a slice, for
// pool_memory_test.cc. Prints one JSON line per step: {"step", "rc", "free"} where free is
// cuMemGetInfo_v2's (under the hook: the slice's view, so cap - free is the ledger's usage).
//
//   fgpu_hook_pool_helper <sync|trim> <hold_ms>
//
// Steps: default pool threshold UINT64_MAX; 600 MiB async alloc + free; stream synchronise
// (the pool keeps the reserve); 600 MiB cuMemAlloc_v2 (refused under a 1 GiB slice); threshold 0
// and synchronise, or cuMemPoolTrimTo(0) (the pool gives it back); 600 MiB cuMemAlloc_v2 again;
// then sleeps hold_ms so the test can compare the ledger with the device.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/abi/cuda_api.h"

namespace {

constexpr size_t kBytes = size_t{600} << 20;

void Report(const char* step, CUresult rc) {
  size_t free = 0, total = 0;
  cuMemGetInfo_v2(&free, &total);
  std::printf("{\"event\": \"%s\", \"rc\": %d, \"free\": %zu}\n", step, static_cast<int>(rc), free);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const bool trim = std::strcmp(argv[1], "trim") == 0;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS) {
    return 3;
  }
  cuuint64_t threshold = UINT64_MAX;
  Report("threshold_max", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CUdeviceptr async_ptr = 0;
  Report("alloc_async", cuMemAllocAsync(&async_ptr, kBytes, stream));
  Report("free_async", cuMemFreeAsync(async_ptr, stream));
  Report("sync_kept", cuStreamSynchronize(stream));
  CUdeviceptr plain = 0;
  const CUresult refused = cuMemAlloc_v2(&plain, kBytes);
  if (refused == CUDA_SUCCESS) cuMemFree_v2(plain);
  Report("mem_alloc_while_kept", refused);
  // Reuse: the pool has room, nothing more is charged.
  Report("alloc_async_reuse", cuMemAllocAsync(&async_ptr, kBytes, stream));
  Report("free_async_reuse", cuMemFreeAsync(async_ptr, stream));
  if (trim) {
    Report("trimmed", cuMemPoolTrimTo(pool, 0));
  } else {
    threshold = 0;
    Report("threshold_zero", cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    Report("trimmed", cuStreamSynchronize(stream));
  }
  Report("mem_alloc_after_trim", cuMemAlloc_v2(&plain, kBytes));
  usleep(static_cast<useconds_t>(std::atoi(argv[2])) * 1000);
  return 0;
}
