// A minimal libcuda.so.1 for fgpu_hook_stub_bench: the entry points the bench and libfgpu's
// compute gate call, each a few instructions with no lock, no syscall (the clock is the vDSO)
// and no allocation on the launch path. Against it, hook − direct is the interposer's own added
// latency; against the simulated driver (fgpu_hook_bench) the figure also holds the simulator's
// event and handle locks, which the gate's completion thread takes too.
//
// One device (the bench's UUID), one primary context, the current context in a thread-local.
// A launch is a relaxed counter increment. An event records the monotonic time and is complete
// at once (a launch takes no device time), so the completion thread never waits on it; the
// elapsed time between two events is the wall time between their records.
// Not a driver: no validation beyond what the bench's rejected-launch case needs.
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/abi/cuda_api.h"

namespace {

struct StubContext {
  int device = 0;
};
struct StubEvent {
  std::atomic<int64_t> recorded_ns{0};
};

// GPU-b3ac4b3a-0000-4000-8000-0000000be4c1, the bench's slice device.
constexpr unsigned char kUuid[16] = {0xb3, 0xac, 0x4b, 0x3a, 0x00, 0x00, 0x40, 0x00,
                                     0x80, 0x00, 0x00, 0x00, 0x00, 0x0b, 0xe4, 0xc1};
constexpr size_t kMemory = size_t{80} << 30;

StubContext g_primary;
int g_module = 0;
int g_function = 0;
std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_next_address{uint64_t{1} << 40};
// Initial-exec: the stub is loaded at startup (DT_NEEDED), and a launch reads it.
constinit thread_local StubContext* t_current __attribute__((tls_model("initial-exec"))) = nullptr;

int64_t NowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

CUresult Launch(CUfunction f) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  g_launches.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult Record(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<StubEvent*>(event)->recorded_ns.store(NowNs(), std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult Elapsed(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int64_t from = reinterpret_cast<StubEvent*>(start)->recorded_ns.load(std::memory_order_acquire);
  const int64_t to = reinterpret_cast<StubEvent*>(end)->recorded_ns.load(std::memory_order_acquire);
  if (from == 0 || to == 0) return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(static_cast<double>(to - from) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int /*flags*/) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 12040;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr || ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (uuid == nullptr || device != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(uuid->bytes, kUuid, sizeof(kUuid));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) { return cuDeviceGetUuid(uuid, device); }

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (ctx == nullptr || device != 0) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(&g_primary);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (device != 0 || flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = 0;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  t_current = reinterpret_cast<StubContext*>(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = reinterpret_cast<CUcontext>(t_current);
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return cuCtxSetCurrent(ctx); }
CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (ctx != nullptr) *ctx = reinterpret_cast<CUcontext>(t_current);
  t_current = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream /*stream*/) { return CUDA_SUCCESS; }

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = kMemory;
  *total = kMemory;
  return CUDA_SUCCESS;
}
// Addresses only: nothing is backed, and a free is not checked.
CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  *ptr = g_next_address.fetch_add((bytes + 4095) & ~size_t{4095}, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr /*ptr*/) { return CUDA_SUCCESS; }

CUresult cuModuleLoadData(CUmodule* module, const void* /*image*/) {
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(&g_module);
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule /*module*/, const char* /*name*/) {
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *function = reinterpret_cast<CUfunction>(&g_function);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, CUstream, void**, void**) {
  return Launch(f);
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**) {
  return Launch(f);
}

CUresult cuEventCreate(CUevent* event, unsigned int /*flags*/) {
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *event = reinterpret_cast<CUevent>(new StubEvent);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream /*stream*/) { return Record(event); }
CUresult cuEventRecord_ptsz(CUevent event, CUstream /*stream*/) { return Record(event); }
CUresult cuEventQuery(CUevent event) { return event != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuEventSynchronize(CUevent event) { return cuEventQuery(event); }
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) { return Elapsed(ms, start, end); }
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) { return Elapsed(ms, start, end); }
CUresult cuEventDestroy_v2(CUevent event) {
  delete reinterpret_cast<StubEvent*>(event);
  return CUDA_SUCCESS;
}

}  // extern "C"
