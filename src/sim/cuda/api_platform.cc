// Platform features a program may ask about: NVIDIA's private export tables (never answered),
// the legacy context attach count, L2 persistence, the deprecated profiler setup, GPUDirect RDMA
// flushes, execution affinity, NvSciSync, async notifications, atomics over links and dma-buf
// handles (docs/sim-entry-points.md, "Platform features").
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

CUresult CurrentForPlatform(Context** ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().CurrentContext(ctx);
}

CUresult DeviceForPlatform(CUdevice dev) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().CheckDevice(dev);
}

// Registered async-notification callbacks. No notification is ever sent: the simulated device
// has no memory budget to exceed (the only notification type is OVER_BUDGET).
struct NotificationEntry {
  CUdevice device = 0;
  CUasyncCallback callback = nullptr;
  void* user_data = nullptr;
};
struct Notifications {
  std::mutex mu;
  std::vector<std::unique_ptr<NotificationEntry>> entries;
};
Notifications& AsyncNotifications() {
  static auto* notifications = new Notifications;  // never destroyed: entry points may run during exit
  return *notifications;
}

// What a link natively supports for one atomic operation, when it supports atomics at all:
// integer operations on 32- and 64-bit, signed and unsigned, reductions too; float add (32 and
// 64-bit, reductions); float min/max not natively (Hopper has no such global atomics).
unsigned NativeAtomics(int operation) {
  constexpr unsigned kInteger = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED |
                                CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
  switch (operation) {
    case CU_ATOMIC_OPERATION_INTEGER_ADD:
    case CU_ATOMIC_OPERATION_INTEGER_MIN:
    case CU_ATOMIC_OPERATION_INTEGER_MAX:
    case CU_ATOMIC_OPERATION_AND:
    case CU_ATOMIC_OPERATION_OR:
    case CU_ATOMIC_OPERATION_XOR: return kInteger | CU_ATOMIC_CAPABILITY_REDUCTION;
    case CU_ATOMIC_OPERATION_INTEGER_INCREMENT:
    case CU_ATOMIC_OPERATION_INTEGER_DECREMENT:
    case CU_ATOMIC_OPERATION_EXCHANGE:
    case CU_ATOMIC_OPERATION_CAS: return kInteger;
    case CU_ATOMIC_OPERATION_FLOAT_ADD:
      return CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64 | CU_ATOMIC_CAPABILITY_REDUCTION;
    default: return 0;  // FLOAT_MIN, FLOAT_MAX
  }
}

// Fills `capabilities` for each operation (`native`: the link supports atomics).
CUresult AtomicCapabilities(unsigned* capabilities, const CUatomicOperation* operations, unsigned count,
                            bool native) {
  if (capabilities == nullptr || operations == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    int operation = 0;  // a C caller may pass any int: read it as one, not as the enum
    std::memcpy(&operation, &operations[i], sizeof operation);
    if (operation < 0 || operation >= CU_ATOMIC_OPERATION_MAX) return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < count; ++i) {
    int operation = 0;
    std::memcpy(&operation, &operations[i], sizeof operation);
    capabilities[i] = native ? NativeAtomics(operation) : 0;
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

// The driver's private tables serve NVIDIA's own runtime and libraries; the simulator implements
// none of them and answers every id as one it does not know.
CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ppExportTable = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// Deprecated: the current context gains a usage count (flags must be 0)...
CUresult cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  sim::Context* ctx = nullptr;
  if (CUresult rc = sim::CurrentForPlatform(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(ctx->mu);
  ++ctx->attach_count;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

// ...and cuCtxDetach takes it back; a created context whose count is spent is destroyed. The
// context must be current to the calling thread.
CUresult cuCtxDetach(CUcontext ctx) {
  sim::Context* current = nullptr;
  if (CUresult rc = sim::CurrentForPlatform(&current); rc != CUDA_SUCCESS) return rc;
  if (reinterpret_cast<sim::Context*>(ctx) != current) return CUDA_ERROR_INVALID_CONTEXT;
  {
    std::lock_guard lock(current->mu);
    if (current->attach_count > 0) {
      --current->attach_count;
      return CUDA_SUCCESS;
    }
  }
  if (current->primary) return CUDA_ERROR_INVALID_CONTEXT;  // primary contexts are released, not detached
  return cuCtxDestroy_v2(ctx);
}

// Nothing persists in the simulated L2: resetting it is done as soon as asked.
CUresult cuCtxResetPersistingL2Cache(void) {
  sim::Context* ctx = nullptr;
  return sim::CurrentForPlatform(&ctx);
}

// Deprecated; "starting with CUDA 12.0, it always returns CUDA_ERROR_NOT_SUPPORTED" (cudaProfiler.h).
CUresult cuProfilerInitialize(const char* configFile, const char* outputFile, CUoutput_mode outputMode) {
  (void)configFile;
  (void)outputFile;
  (void)outputMode;
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Host-backed device memory is coherent: every RDMA write is already visible, so a flush (of the
// options the device reports, host and memops) completes at once.
CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target, CUflushGPUDirectRDMAWritesScope scope) {
  sim::Context* ctx = nullptr;
  if (CUresult rc = sim::CurrentForPlatform(&ctx); rc != CUDA_SUCCESS) return rc;
  int t = 0, s = 0;
  std::memcpy(&t, &target, sizeof t);
  std::memcpy(&s, &scope, sizeof s);
  if (t != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX) return CUDA_ERROR_INVALID_VALUE;
  if (s != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER && s != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Without MPS every context has the whole device: its SM count is the device's.
CUresult cuCtxGetExecAffinity(CUexecAffinityParam* pExecAffinity, CUexecAffinityType type) {
  sim::Context* ctx = nullptr;
  if (CUresult rc = sim::CurrentForPlatform(&ctx); rc != CUDA_SUCCESS) return rc;
  int t = 0;
  std::memcpy(&t, &type, sizeof t);
  if (pExecAffinity == nullptr || t != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
  pExecAffinity->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  pExecAffinity->param.smCount.val = static_cast<unsigned>(sim::Runtime::Get().spec(ctx->device).sm_count);
  return CUDA_SUCCESS;
}

// Contexts limited to some SMs exist only under MPS, which the simulator does not run.
CUresult cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type, CUdevice dev) {
  if (CUresult rc = sim::DeviceForPlatform(dev); rc != CUDA_SUCCESS) return rc;
  int t = 0;
  std::memcpy(&t, &type, sizeof t);
  if (pi == nullptr || t != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
  *pi = 0;
  return CUDA_SUCCESS;
}

// NvSciSync exists on Tegra and DRIVE platforms, not on a Linux x86 H100.
CUresult cuDeviceGetNvSciSyncAttributes(void* nvSciSyncAttrList, CUdevice dev, int flags) {
  if (CUresult rc = sim::DeviceForPlatform(dev); rc != CUDA_SUCCESS) return rc;
  constexpr int kSignal = 0x1, kWait = 0x2;  // CUDA_NVSCISYNC_ATTR_SIGNAL / _WAIT
  if (nvSciSyncAttrList == nullptr || flags == 0 || (flags & ~(kSignal | kWait)) != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceRegisterAsyncNotification(CUdevice device, CUasyncCallback callbackFunc, void* userData,
                                           CUasyncCallbackHandle* callback) {
  return sim::Guarded([&] {
    if (CUresult rc = sim::DeviceForPlatform(device); rc != CUDA_SUCCESS) return rc;
    if (callbackFunc == nullptr || callback == nullptr) return CUDA_ERROR_INVALID_VALUE;
    sim::Notifications& notifications = sim::AsyncNotifications();
    auto entry = std::make_unique<sim::NotificationEntry>();
    entry->device = device;
    entry->callback = callbackFunc;
    entry->user_data = userData;
    std::lock_guard lock(notifications.mu);
    *callback = reinterpret_cast<CUasyncCallbackHandle>(entry.get());
    notifications.entries.push_back(std::move(entry));
    return CUDA_SUCCESS;
  });
}

CUresult cuDeviceUnregisterAsyncNotification(CUdevice device, CUasyncCallbackHandle callback) {
  if (CUresult rc = sim::DeviceForPlatform(device); rc != CUDA_SUCCESS) return rc;
  sim::Notifications& notifications = sim::AsyncNotifications();
  std::lock_guard lock(notifications.mu);
  auto& entries = notifications.entries;
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) {
    return reinterpret_cast<CUasyncCallbackHandle>(entry.get()) == callback && entry->device == device;
  });
  if (found == entries.end()) return CUDA_ERROR_INVALID_VALUE;
  entries.erase(found);
  return CUDA_SUCCESS;
}

// The PCIe link to an x86 host has no native atomics (HOST_NATIVE_ATOMIC_SUPPORTED is 0).
CUresult cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities, const CUatomicOperation* operations,
                                           unsigned int count, CUdevice dev) {
  if (CUresult rc = sim::DeviceForPlatform(dev); rc != CUDA_SUCCESS) return rc;
  return sim::AtomicCapabilities(capabilities, operations, count, false);
}

// The NVLink between two simulated devices has native atomics (cuDeviceGetP2PAttribute).
CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities, const CUatomicOperation* operations,
                                          unsigned int count, CUdevice srcDevice, CUdevice dstDevice) {
  if (CUresult rc = sim::DeviceForPlatform(srcDevice); rc != CUDA_SUCCESS) return rc;
  int native = 0;
  if (CUresult rc = cuDeviceGetP2PAttribute(&native, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, srcDevice,
                                            dstDevice);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  return sim::AtomicCapabilities(capabilities, operations, count, native != 0);
}

// dma-buf export needs a kernel driver exporting device memory; the simulated device reports
// DMA_BUF_SUPPORTED 0, and the driver then refuses the request.
CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType handleType,
                                       unsigned long long flags) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  int type = 0;
  std::memcpy(&type, &handleType, sizeof type);
  if (handle == nullptr || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || size == 0 ||
      (flags & ~static_cast<unsigned long long>(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto found = sim::MemoryRegistry::Get().Find(dptr);
  if (!found || size > found->end() - dptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
