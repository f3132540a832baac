// Device and host allocations, memory info, address ranges and pointer attributes.
// Device memory is charged to the shared device state, rounded up to the device's
// granularity; host memory (pinned, registered) is not (docs/sim-memory.md).
#include <climits>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

constexpr uint64_t kPitchAlignment = 512;   // CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT-sized rows
constexpr uint64_t kMaxPitch = 2147483647;  // CU_DEVICE_ATTRIBUTE_MAX_PITCH
constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

CUresult Current(Context** ctx) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().CurrentContext(ctx);
}

bool IsDeviceAllocation(AllocKind kind) {
  return kind == AllocKind::kDevice || kind == AllocKind::kPitched || kind == AllocKind::kManaged ||
         kind == AllocKind::kAsync || kind == AllocKind::kExternalBuffer;
}

bool IsHostAllocation(AllocKind kind) {
  return kind == AllocKind::kHostPinned || kind == AllocKind::kHostRegistered;
}

// Maps, charges and registers one allocation of `map_bytes`, charging `charge_bytes`
// rounded to the granularity (0: host memory, not charged). On any failure nothing
// is left behind: no mapping, no charge, no entry.
CUresult Allocate(Context* ctx, AllocKind kind, uint64_t map_bytes, uint64_t charge_bytes, unsigned flags,
                  bool low_4g, CUdeviceptr* out) {
  Runtime& runtime = Runtime::Get();
  const int device = ctx->device;
  const uint64_t charge = charge_bytes == 0 ? 0 : runtime.RoundToGranularity(device, charge_bytes);
  if (charge != 0 && !runtime.Charge(device, charge)) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t base = MapBacking(map_bytes, low_4g);
  bool inserted = false;
  try {
    if (base != 0) {
      Allocation a;
      a.base = base;
      a.size = map_bytes;
      a.mapped_length = map_bytes;
      a.charged = charge;
      a.device = device;
      a.ctx = ctx;
      a.kind = kind;
      a.flags = flags;
      a.buffer_id = MemoryRegistry::Get().NextBufferId();
      inserted = MemoryRegistry::Get().Insert(a);
    }
  } catch (...) {
    inserted = false;
  }
  if (!inserted) {
    UnmapBacking(base, map_bytes);
    if (charge != 0) runtime.Credit(device, charge);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = base;
  return CUDA_SUCCESS;
}

void Release(const Allocation& a) {
  if (a.kind == AllocKind::kDevice || a.kind == AllocKind::kPitched || a.kind == AllocKind::kIpcImport) ForgetIpc(a);
  if (a.kind == AllocKind::kManaged) ForgetManagedAdvice(a);
  UnmapBacking(a.base, a.mapped_length);
  if (a.charged != 0) Runtime::Get().Credit(a.device, a.charged);
}

CUresult MemAlloc(CUdeviceptr* dptr, uint64_t bytes, bool low_4g) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  return Allocate(ctx, AllocKind::kDevice, bytes, bytes, 0, low_4g, dptr);
}

CUresult MemAllocPitch(CUdeviceptr* dptr, uint64_t* pitch, uint64_t width, uint64_t height,
                       unsigned element_bytes, bool low_4g) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || pitch == nullptr || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (element_bytes != 4 && element_bytes != 8 && element_bytes != 16) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t row = RoundUp(width, kPitchAlignment);
  if (row > kMaxPitch) return CUDA_ERROR_INVALID_VALUE;
  if (height > UINT64_MAX / row) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult rc = Allocate(ctx, AllocKind::kPitched, row * height, row * height, 0, low_4g, dptr);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  *pitch = row;
  return CUDA_SUCCESS;
}

CUresult MemFree(uint64_t dptr) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == 0) return CUDA_SUCCESS;  // free(NULL) semantics, as the driver
  MemoryRegistry& registry = MemoryRegistry::Get();
  const auto found = registry.FindBase(dptr);
  if (!found || !IsDeviceAllocation(found->kind)) return CUDA_ERROR_INVALID_VALUE;
  // cuMemFree synchronises (the driver's implicit sync), except for stream-ordered
  // allocations, whose accesses the caller has already ordered.
  if (found->kind != AllocKind::kAsync) Runtime::SleepUntil(ctx->tail_ns.load());
  const auto removed = registry.Erase(dptr, [](const Allocation& a) { return IsDeviceAllocation(a.kind); });
  if (!removed) return CUDA_ERROR_INVALID_VALUE;  // lost a race with another free
  if (removed->kind == AllocKind::kAsync) {
    ReleaseAsyncAllocation(*removed);
  } else {
    Release(*removed);
  }
  return CUDA_SUCCESS;
}

CUresult HostAlloc(void** pp, uint64_t bytes, unsigned flags) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pp == nullptr || bytes == 0 || (flags & ~kHostAllocFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr base = 0;
  if (CUresult rc = Allocate(ctx, AllocKind::kHostPinned, bytes, 0, flags, false, &base);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  *pp = reinterpret_cast<void*>(base);
  return CUDA_SUCCESS;
}

CUresult HostRegister(void* p, uint64_t bytes, unsigned flags) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (p == nullptr || bytes == 0 || (flags & ~kHostRegisterFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no I/O space to map
  const auto base = reinterpret_cast<uint64_t>(p);
  if (base > UINT64_MAX - bytes) return CUDA_ERROR_INVALID_VALUE;
  MemoryRegistry& registry = MemoryRegistry::Get();
  if (const auto overlapping = registry.Intersecting(base, bytes); !overlapping.empty()) {
    return IsHostAllocation(overlapping.front().kind) ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                      : CUDA_ERROR_INVALID_VALUE;
  }
  if (!HostRangeUsable(p, bytes, MemoryRegistry::Access::kRead)) return CUDA_ERROR_INVALID_VALUE;
  Allocation a;
  a.base = base;
  a.size = bytes;
  a.device = ctx->device;
  a.ctx = ctx;
  a.kind = AllocKind::kHostRegistered;
  a.flags = flags;
  a.buffer_id = registry.NextBufferId();
  return registry.Insert(a) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
}

CUresult HostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned flags) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pdptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const auto found = MemoryRegistry::Get().Find(reinterpret_cast<uint64_t>(p));
  if (!found || !IsHostAllocation(found->kind)) return CUDA_ERROR_INVALID_VALUE;
  // Every simulated device can use the host pointer (unified addressing).
  *pdptr = reinterpret_cast<uint64_t>(p);
  return CUDA_SUCCESS;
}

CUresult GetInfo(uint64_t* free_bytes, uint64_t* total_bytes) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const MemoryInfo info = Runtime::Get().Memory(ctx->device);
  *free_bytes = info.free;
  *total_bytes = info.total;
  return CUDA_SUCCESS;
}

CUresult GetAddressRange(uint64_t* pbase, uint64_t* psize, uint64_t dptr) {
  Context* ctx = nullptr;
  if (CUresult rc = Current(&ctx); rc != CUDA_SUCCESS) return rc;
  const auto found = MemoryRegistry::Get().Find(dptr);
  if (!found) return CUDA_ERROR_NOT_FOUND;
  const bool vmm = found->kind == AllocKind::kVmmMapping;
  if (pbase != nullptr) *pbase = vmm ? found->mapping_base : found->base;
  if (psize != nullptr) *psize = vmm ? found->mapping_size : found->size;
  return CUDA_SUCCESS;
}

unsigned Saturate32(uint64_t value) { return value > UINT_MAX ? UINT_MAX : static_cast<unsigned>(value); }

template <typename T>
CUresult Put(void* data, T value) {
  *static_cast<T*>(data) = value;
  return CUDA_SUCCESS;
}

// Buffers whose CU_POINTER_ATTRIBUTE_SYNC_MEMOPS was set (cuPointerSetAttribute), by buffer id.
// Synchronous copies already complete before returning here, so the flag changes no behaviour;
// it is kept so that cuPointerGetAttribute reports it. Ids are never reused: an entry of a freed
// buffer can match nothing.
struct SyncMemopsSet {
  std::mutex mu;
  std::unordered_set<uint64_t> ids;
};
SyncMemopsSet& SyncMemops() {
  static auto* set = new SyncMemopsSet;  // never destroyed: entry points may run during exit
  return *set;
}
bool HasSyncMemops(uint64_t buffer_id) {
  std::lock_guard lock(SyncMemops().mu);
  return SyncMemops().ids.count(buffer_id) != 0;
}

// What cuPointerGetAttributes reports for an address no allocation contains: the documented
// "default NULL values", each of its attribute's type; the device ordinal is CU_DEVICE_INVALID,
// since 0 would name a real device.
CUresult DefaultAttribute(void* data, CUpointer_attribute attribute) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return Put<CUcontext>(data, nullptr);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return Put<unsigned>(data, 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return Put<CUdeviceptr>(data, 0);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return Put<void*>(data, nullptr);
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return CUDA_ERROR_NOT_SUPPORTED;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return Put<unsigned long long>(data, 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return Put<int>(data, CU_DEVICE_INVALID);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: return Put<int>(data, 0);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return Put<size_t>(data, 0);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return Put<CUmemoryPool>(data, nullptr);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult PointerAttribute(void* data, CUpointer_attribute attribute, uint64_t ptr) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto found = MemoryRegistry::Get().Find(ptr);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  const Allocation& a = *found;
  const bool vmm = a.kind == AllocKind::kVmmMapping;
  const bool host_memory = IsHostAllocation(a.kind) || a.device == CU_DEVICE_CPU;  // host VMM / host pools
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      return Put(data, reinterpret_cast<CUcontext>(a.ctx));
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return Put<unsigned>(data, host_memory ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
      Context* ctx = nullptr;
      if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
      return Put<CUdeviceptr>(data, ptr);
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host_memory && a.kind != AllocKind::kManaged) return CUDA_ERROR_INVALID_VALUE;
      return Put(data, reinterpret_cast<void*>(ptr));
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_NOT_SUPPORTED;  // no nv-p2p kernel interface behind the simulator
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      return Put<int>(data, HasSyncMemops(a.buffer_id) ? 1 : 0);  // 0 until cuPointerSetAttribute
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      return Put<unsigned long long>(data, a.buffer_id);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return Put<int>(data, a.kind == AllocKind::kManaged ? 1 : 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return Put<int>(data, a.device);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      return Put<int>(data, a.kind == AllocKind::kDevice || a.kind == AllocKind::kPitched ? 1 : 0);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
      // For VMM the range is the reservation the mapping lives in, as documented.
      uint64_t start = a.base;
      uint64_t size = a.size;
      if (vmm) {
        if (const auto reservation = MemoryRegistry::Get().FindReservation(ptr)) {
          start = reservation->base;
          size = reservation->size;
        }
      }
      if (attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE) return Put<size_t>(data, size);
      return Put<CUdeviceptr>(data, start);
    }
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return Put<int>(data, 1);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      return Put<unsigned>(data, vmm ? a.flags : 0u);  // VMM pieces keep the requested handle types
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      return Put<int>(data, 0);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
      Context* ctx = nullptr;
      if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
      MemoryRegistry& registry = MemoryRegistry::Get();
      int flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
      if (registry.CanAccess(ptr, 1, MemoryRegistry::Access::kWrite, ctx->device)) {
        flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      } else if (registry.CanAccess(ptr, 1, MemoryRegistry::Access::kRead, ctx->device)) {
        flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
      }
      return Put<int>(data, flags);
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      return Put(data, reinterpret_cast<CUmemoryPool>(a.pool));
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      return Put<size_t>(data, vmm ? a.mapping_size : a.size);
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      return Put<CUdeviceptr>(data, vmm ? a.mapping_base : a.base);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// cuPointerGetAttributes: cuPointerGetAttribute per attribute, except that an unknown address is
// not an error (each attribute gets its default).
CUresult PointerAttributes(unsigned count, CUpointer_attribute* attributes, void** data, uint64_t ptr) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (count > 0 && (attributes == nullptr || data == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  const bool known = MemoryRegistry::Get().Find(ptr).has_value();
  for (unsigned i = 0; i < count; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const CUresult rc =
        known ? PointerAttribute(data[i], attributes[i], ptr) : DefaultAttribute(data[i], attributes[i]);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

// Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set, on memory the driver allocated, mapped or
// registered.
CUresult SetPointerAttribute(const void* value, CUpointer_attribute attribute, uint64_t ptr) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  const auto found = MemoryRegistry::Get().Find(ptr);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  unsigned set = 0;
  std::memcpy(&set, value, sizeof set);
  std::lock_guard lock(SyncMemops().mu);
  if (set != 0) {
    SyncMemops().ids.insert(found->buffer_id);
  } else {
    SyncMemops().ids.erase(found->buffer_id);
  }
  return CUDA_SUCCESS;
}

}  // namespace

void ReleaseContextMemory(Context* ctx) {
  // Called while the context is torn down: a failure here must not escape either.
  (void)Guarded([ctx] {
    MemoryRegistry& registry = MemoryRegistry::Get();
    const auto owned = registry.EraseIf(
        [ctx](const Allocation& a) { return a.ctx == ctx && a.kind != AllocKind::kVmmMapping; });
    for (const Allocation& a : owned) {
      if (a.kind == AllocKind::kAsync) {
        ReleaseAsyncAllocation(a);
      } else {
        Release(a);
      }
    }
    ReleaseVmmOf(ctx);
    ReleasePoolsOf(ctx);
    ReleaseArraysOf(ctx);
    ReleaseExternalOf(ctx);
    return CUDA_SUCCESS;
  });
}

}  // namespace fgpu::sim::cuda

using fgpu::sim::cuda::Guarded;
namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return Guarded([&] {
    uint64_t f = 0, t = 0;
    CUresult rc = sim::GetInfo(free == nullptr ? nullptr : &f, total == nullptr ? nullptr : &t);
    if (rc == CUDA_SUCCESS) {
      *free = f;
      *total = t;
    }
    return rc;
  });
}

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  return Guarded([&] {
    uint64_t f = 0, t = 0;
    CUresult rc = sim::GetInfo(free == nullptr ? nullptr : &f, total == nullptr ? nullptr : &t);
    if (rc == CUDA_SUCCESS) {
      *free = sim::Saturate32(f);  // the 32-bit ABI cannot say more
      *total = sim::Saturate32(t);
    }
    return rc;
  });
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return Guarded([&] { return sim::MemAlloc(dptr, bytesize, false); });
}

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  return Guarded([&] {
    CUdeviceptr base = 0;
    CUresult rc = sim::MemAlloc(dptr == nullptr ? nullptr : &base, bytesize, /*low_4g=*/true);
    if (rc == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(base);
    return rc;
  });
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  return Guarded([&] {
    uint64_t pitch = 0;
    CUresult rc = sim::MemAllocPitch(dptr, pPitch == nullptr ? nullptr : &pitch, WidthInBytes, Height,
                                     ElementSizeBytes, false);
    if (rc == CUDA_SUCCESS) *pPitch = pitch;
    return rc;
  });
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  return Guarded([&] {
    CUdeviceptr base = 0;
    uint64_t pitch = 0;
    CUresult rc = sim::MemAllocPitch(dptr == nullptr ? nullptr : &base, pPitch == nullptr ? nullptr : &pitch,
                                     WidthInBytes, Height, ElementSizeBytes, /*low_4g=*/true);
    if (rc == CUDA_SUCCESS) {
      *dptr = static_cast<CUdeviceptr_v1>(base);
      *pPitch = static_cast<unsigned>(pitch);  // <= kMaxPitch
    }
    return rc;
  });
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return Guarded([&] { return sim::MemFree(dptr); });
}
CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  return Guarded([&] { return sim::MemFree(dptr); });
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return Guarded([&] {
    sim::Context* ctx = nullptr;
    if (CUresult rc = sim::Current(&ctx); rc != CUDA_SUCCESS) return rc;
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    // Modelled as resident on the device: charged in full now (docs/sim-memory.md).
    return sim::Allocate(ctx, sim::AllocKind::kManaged, bytesize, bytesize, flags, false, dptr);
  });
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return Guarded([&] { return sim::HostAlloc(pp, bytesize, 0); });
}
CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  return Guarded([&] { return sim::HostAlloc(pp, bytesize, 0); });
}
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return Guarded([&] { return sim::HostAlloc(pp, bytesize, Flags); });
}

CUresult cuMemFreeHost(void* p) {
  return Guarded([&] {
    sim::Context* ctx = nullptr;
    if (CUresult rc = sim::Current(&ctx); rc != CUDA_SUCCESS) return rc;
    if (p == nullptr) return CUDA_SUCCESS;  // free(NULL) semantics, as the driver
    const auto removed = sim::MemoryRegistry::Get().Erase(
        reinterpret_cast<uint64_t>(p),
        [](const sim::Allocation& a) { return a.kind == sim::AllocKind::kHostPinned; });
    if (!removed) return CUDA_ERROR_INVALID_VALUE;
    sim::Release(*removed);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  return Guarded([&] {
    sim::Context* ctx = nullptr;
    if (CUresult rc = sim::Current(&ctx); rc != CUDA_SUCCESS) return rc;
    if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // The flags of a cuMemHostAlloc / cuMemAllocHost allocation (any address inside it).
    const auto found = sim::MemoryRegistry::Get().Find(reinterpret_cast<uint64_t>(p));
    if (!found || found->kind != sim::AllocKind::kHostPinned) return CUDA_ERROR_INVALID_VALUE;
    *pFlags = found->flags;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return Guarded([&] { return sim::HostRegister(p, bytesize, Flags); });
}
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return Guarded([&] { return sim::HostRegister(p, bytesize, Flags); });
}

CUresult cuMemHostUnregister(void* p) {
  return Guarded([&] {
    sim::Context* ctx = nullptr;
    if (CUresult rc = sim::Current(&ctx); rc != CUDA_SUCCESS) return rc;
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto removed = sim::MemoryRegistry::Get().Erase(
        reinterpret_cast<uint64_t>(p),
        [](const sim::Allocation& a) { return a.kind == sim::AllocKind::kHostRegistered; });
    return removed ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  });
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  return Guarded([&] { return sim::HostGetDevicePointer(pdptr, p, Flags); });
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1* pdptr, void* p, unsigned int Flags) {
  return Guarded([&] {
    CUdeviceptr dptr = 0;
    CUresult rc = sim::HostGetDevicePointer(pdptr == nullptr ? nullptr : &dptr, p, Flags);
    if (rc != CUDA_SUCCESS) return rc;
    if (dptr > UINT_MAX) return CUDA_ERROR_INVALID_VALUE;  // not addressable through the 32-bit ABI
    *pdptr = static_cast<CUdeviceptr_v1>(dptr);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  return Guarded([&] {
    uint64_t base = 0, size = 0;
    CUresult rc = sim::GetAddressRange(&base, &size, dptr);
    if (rc != CUDA_SUCCESS) return rc;
    if (pbase != nullptr) *pbase = base;
    if (psize != nullptr) *psize = size;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize, CUdeviceptr_v1 dptr) {
  return Guarded([&] {
    uint64_t base = 0, size = 0;
    CUresult rc = sim::GetAddressRange(&base, &size, dptr);
    if (rc != CUDA_SUCCESS) return rc;
    if (pbase != nullptr) *pbase = static_cast<CUdeviceptr_v1>(base);  // base <= dptr < 4 GiB
    if (psize != nullptr) *psize = sim::Saturate32(size);
    return CUDA_SUCCESS;
  });
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return Guarded([&] { return sim::PointerAttribute(data, attribute, ptr); });
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) {
  return Guarded([&] { return sim::PointerAttributes(numAttributes, attributes, data, ptr); });
}

CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return Guarded([&] { return sim::SetPointerAttribute(value, attribute, ptr); });
}

}  // extern "C"
