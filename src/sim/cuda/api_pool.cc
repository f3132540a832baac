// Stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync) and memory pools.
//
// A pool holds `reserved` bytes of device memory, charged to the device, of which
// `used` back live allocations. An allocation that does not fit in the unused
// reserve grows it by the shortfall rounded up to the granularity; a free returns
// bytes to the pool, not to the device. Reserve above max(used, release threshold)
// goes back to the device after a synchronisation (TrimPoolsAfterSync) or on
// cuMemPoolTrimTo. Allocations are placed immediately: simulated kernels compute
// nothing, so an allocation that exists early is indistinguishable from one that
// waits for its stream. On a capturing stream the allocator allocates nothing: its calls
// become the capture graph's allocation and free nodes (api_graph.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/api_graph.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {

struct MemPool {
  int device = 0;  // owning device; CU_DEVICE_CPU for host pools
  bool is_default = false;
  bool destroyed = false;    // cuMemPoolDestroy called while allocations were outstanding
  Context* owner = nullptr;  // context current at creation (nullptr for default pools)
  CUmemPoolProps props{};
  uint64_t granularity = 0;
  uint64_t reserved = 0;
  uint64_t reserved_high = 0;
  uint64_t used = 0;
  uint64_t used_high = 0;
  uint64_t live_allocations = 0;
  uint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  std::vector<CUmemAccess_flags> peer_access;  // per device, set by cuMemPoolSetAccess

  bool charged() const { return device != CU_DEVICE_CPU; }
};

namespace {

// Host pools have no device granularity; they use the common 2 MiB one.
constexpr uint64_t kHostPoolGranularity = 2ull << 20;

// Every pool of the process. One lock: pools are not a hot path, and a single
// lock keeps destroy/free/trim ordering trivially consistent.
struct PoolTable {
  std::mutex mu;
  std::vector<std::unique_ptr<MemPool>> pools;
  std::vector<MemPool*> default_pool;  // per device, created on first use
  std::vector<MemPool*> current_pool;  // per device; nullptr = the default pool
  // The host's default pools, by location type (HOST, HOST_NUMA node 0), and their current ones.
  MemPool* default_host[2] = {nullptr, nullptr};
  MemPool* current_host[2] = {nullptr, nullptr};
};

PoolTable& Pools() {
  static auto* table = new PoolTable;  // never destroyed, as the other registries
  return *table;
}

// Caller holds Pools().mu.
MemPool* NewPool(const CUmemPoolProps& props, Context* owner, bool is_default) {
  auto pool = std::make_unique<MemPool>();
  pool->props = props;
  pool->owner = owner;
  pool->is_default = is_default;
  const bool on_device = props.location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  pool->device = on_device ? props.location.id : CU_DEVICE_CPU;
  pool->granularity = on_device ? Runtime::Get().spec(pool->device).granularity : kHostPoolGranularity;
  pool->peer_access.assign(static_cast<size_t>(Runtime::Get().device_count()), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  if (on_device) pool->peer_access[static_cast<size_t>(pool->device)] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  MemPool* raw = pool.get();
  Pools().pools.push_back(std::move(pool));
  HandleRegistry::Get().Insert(raw, Kind::kMemPool);
  return raw;
}

// Caller holds Pools().mu.
MemPool* DefaultPool(int device) {
  PoolTable& table = Pools();
  const auto count = static_cast<size_t>(Runtime::Get().device_count());
  if (table.default_pool.size() < count) {
    table.default_pool.resize(count, nullptr);
    table.current_pool.resize(count, nullptr);
  }
  MemPool*& slot = table.default_pool[static_cast<size_t>(device)];
  if (slot == nullptr) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    slot = NewPool(props, nullptr, /*is_default=*/true);
  }
  return slot;
}

// Caller holds Pools().mu.
MemPool* CurrentPool(int device) {
  MemPool* fallback = DefaultPool(device);
  MemPool* current = Pools().current_pool[static_cast<size_t>(device)];
  return current != nullptr ? current : fallback;
}

// The slot of a (pinned) location's default and current pool: a device's, or the host's (HOST,
// HOST_NUMA node 0). Caller holds Pools().mu.
CUresult LocationSlots(const CUmemLocation* location, CUmemAllocationType type, MemPool** default_pool,
                       MemPool*** current) {
  if (location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int t = 0, kind = 0;  // a C caller may pass any int: read them as ints, not as the enums
  std::memcpy(&t, &type, sizeof t);
  std::memcpy(&kind, &location->type, sizeof kind);
  if (t == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_NOT_SUPPORTED;  // managed pools are not simulated
  if (t != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  PoolTable& table = Pools();
  if (kind == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (CUresult rc = Runtime::Get().CheckDevice(location->id); rc != CUDA_SUCCESS) return rc;
    *default_pool = DefaultPool(location->id);
    *current = &table.current_pool[static_cast<size_t>(location->id)];
    return CUDA_SUCCESS;
  }
  if (kind != CU_MEM_LOCATION_TYPE_HOST && !(kind == CU_MEM_LOCATION_TYPE_HOST_NUMA && location->id == 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t slot = kind == CU_MEM_LOCATION_TYPE_HOST ? 0 : 1;
  if (table.default_host[slot] == nullptr) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = static_cast<CUmemLocationType>(kind);
    props.location.id = 0;
    table.default_host[slot] = NewPool(props, nullptr, /*is_default=*/true);
  }
  *default_pool = table.default_host[slot];
  *current = &table.current_host[slot];
  return CUDA_SUCCESS;
}

// Caller holds Pools().mu. Live pools only: destroyed ones left the handle registry.
MemPool* Lookup(CUmemoryPool handle) { return HandleRegistry::Get().Lookup<MemPool>(handle, Kind::kMemPool); }

// Caller holds Pools().mu. Keeps at least max(used, keep), in whole granules.
void TrimLocked(MemPool* pool, uint64_t keep) {
  const uint64_t target = std::max(RoundUp(pool->used, pool->granularity), RoundUp(keep, pool->granularity));
  if (target >= pool->reserved) return;
  if (pool->charged()) Runtime::Get().Credit(pool->device, pool->reserved - target);
  pool->reserved = target;
}

// Caller holds Pools().mu. Gives the reserve back and forgets a destroyed pool.
void FinalizeLocked(MemPool* pool) {
  if (pool->charged() && pool->reserved != 0) Runtime::Get().Credit(pool->device, pool->reserved);
  std::erase_if(Pools().pools, [pool](const auto& p) { return p.get() == pool; });
}

// Caller holds Pools().mu.
void DestroyLocked(MemPool* pool) {
  HandleRegistry::Get().Erase(pool);
  PoolTable& table = Pools();
  for (MemPool*& current : table.current_pool) {
    if (current == pool) current = nullptr;  // the device falls back to its default pool
  }
  if (pool->live_allocations == 0) {
    FinalizeLocked(pool);
  } else {
    pool->destroyed = true;  // released when the last allocation is freed, as the driver does
  }
}

// Caller holds Pools().mu, so the pool cannot be finalized underneath.
CUresult AllocateLocked(MemPool* pool, Context* ctx, uint64_t bytes, CUdeviceptr* out) {
  const uint64_t unused = pool->reserved - pool->used;
  const uint64_t grow = bytes > unused ? RoundUp(bytes - unused, pool->granularity) : 0;
  if (grow == UINT64_MAX || pool->reserved > UINT64_MAX - grow) return CUDA_ERROR_OUT_OF_MEMORY;
  if (pool->props.maxSize != 0 && pool->reserved + grow > pool->props.maxSize)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (grow != 0 && pool->charged() && !Runtime::Get().Charge(pool->device, grow))
    return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t base = MapBacking(bytes);
  bool inserted = false;
  try {
    if (base != 0) {
      Allocation a;
      a.base = base;
      a.size = bytes;
      a.mapped_length = bytes;
      a.device = pool->device;
      a.ctx = ctx;
      a.kind = AllocKind::kAsync;
      a.pool = pool;
      a.buffer_id = MemoryRegistry::Get().NextBufferId();
      inserted = MemoryRegistry::Get().Insert(a);
    }
  } catch (...) {
    inserted = false;
  }
  if (!inserted) {
    UnmapBacking(base, bytes);
    if (grow != 0 && pool->charged()) Runtime::Get().Credit(pool->device, grow);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pool->reserved += grow;
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->used += bytes;
  pool->used_high = std::max(pool->used_high, pool->used);
  ++pool->live_allocations;
  *out = base;
  return CUDA_SUCCESS;
}

CUresult ResolveForAllocator(CUstream handle, bool per_thread, Stream** stream) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().ResolveStream(handle, per_thread, stream);
}

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool_handle, bool use_current_pool,
                    CUstream handle, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveForAllocator(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(Pools().mu);
  MemPool* pool = use_current_pool ? CurrentPool(stream->ctx->device) : Lookup(pool_handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (Graph* graph = stream->capture.load()) {
    // Captured: an allocation node with the pool's properties, owned by the graph, not the
    // pool. Nothing is allocated until an executable graph of it is launched.
    const CUmemPoolProps props = pool->props;
    lock.unlock();
    return CaptureMemAlloc(*graph, props, bytes, dptr);
  }
  return AllocateLocked(pool, stream->ctx, bytes, dptr);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream handle, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveForAllocator(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (dptr == 0) return CUDA_ERROR_INVALID_VALUE;
  // Captured: a free node, which must free an allocation of the capture graph.
  if (Graph* graph = stream->capture.load()) return CaptureMemFree(*graph, dptr);
  const auto removed =
      MemoryRegistry::Get().Erase(dptr, [](const Allocation& a) { return a.kind == AllocKind::kAsync; });
  if (!removed) return CUDA_ERROR_INVALID_VALUE;
  ReleaseAsyncAllocation(*removed);
  return CUDA_SUCCESS;
}

// Validates pool properties as cuMemPoolCreate does.
CUresult CheckPoolProps(const CUmemPoolProps* props) {
  if (props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_NOT_SUPPORTED;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  const unsigned handle_types = props->handleTypes;
  if ((handle_types & CU_MEM_HANDLE_TYPE_FABRIC) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no IMEX channel
  if ((handle_types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;  // Win32 handles on Linux
  }
  switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return Runtime::Get().CheckDevice(props->location.id) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                                            : CUDA_ERROR_INVALID_VALUE;
    case CU_MEM_LOCATION_TYPE_HOST:
      return handle_types == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // host pools are not IPC capable
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return props->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // one NUMA node
    default:
      return CUDA_ERROR_INVALID_VALUE;  // including HOST_NUMA_CURRENT, refused by the driver here
  }
}

CUresult GetAttribute(MemPool* pool, CUmemPool_attribute attr, void* value) {
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *static_cast<int*>(value) = pool->reuse_follow_event_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *static_cast<int*>(value) = pool->reuse_allow_opportunistic;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = pool->reuse_allow_internal_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = pool->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = pool->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = pool->used_high;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult SetAttribute(MemPool* pool, CUmemPool_attribute attr, const void* value) {
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      pool->reuse_follow_event_dependencies = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      pool->reuse_allow_opportunistic = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse_allow_internal_dependencies = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->release_threshold = *static_cast<const cuuint64_t*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  // only a reset (to zero) is legal
      if (*static_cast<const cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<const cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      return CUDA_ERROR_INVALID_VALUE;  // read-only
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

void ReleaseAsyncAllocation(const Allocation& allocation) {
  UnmapBacking(allocation.base, allocation.mapped_length);
  std::lock_guard lock(Pools().mu);
  MemPool* pool = allocation.pool;
  pool->used -= std::min(pool->used, allocation.size);
  if (--pool->live_allocations == 0 && pool->destroyed) FinalizeLocked(pool);
}

void TrimPoolsAfterSync(int device) {
  (void)Guarded([device] {
    std::lock_guard lock(Pools().mu);
    for (const auto& pool : Pools().pools) {
      if (pool->device == device) TrimLocked(pool.get(), pool->destroyed ? 0 : pool->release_threshold);
    }
    return CUDA_SUCCESS;
  });
}

void ReleasePoolsOf(Context* ctx) {
  std::lock_guard lock(Pools().mu);
  std::vector<MemPool*> owned;
  for (const auto& pool : Pools().pools) {
    if (pool->owner == ctx && !pool->destroyed && !pool->is_default) owned.push_back(pool.get());
  }
  for (MemPool* pool : owned) DestroyLocked(pool);
  // The context's stream-ordered allocations are gone: the device's pools keep
  // only what other contexts still use.
  for (const auto& pool : Pools().pools) {
    if (pool->device == ctx->device) TrimLocked(pool.get(), 0);
  }
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;
using sim::Runtime;

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return Guarded([&] { return sim::AllocAsync(dptr, bytesize, nullptr, true, hStream, false); });
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return Guarded([&] { return sim::AllocAsync(dptr, bytesize, nullptr, true, hStream, true); });
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return Guarded([&] { return sim::AllocAsync(dptr, bytesize, pool, false, hStream, false); });
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  return Guarded([&] { return sim::AllocAsync(dptr, bytesize, pool, false, hStream, true); });
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return Guarded([&] { return sim::FreeAsync(dptr, hStream, false); });
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return Guarded([&] { return sim::FreeAsync(dptr, hStream, true); });
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    *pool_out = reinterpret_cast<CUmemoryPool>(sim::DefaultPool(dev));
    return CUDA_SUCCESS;
  });
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    *pool = reinterpret_cast<CUmemoryPool>(sim::CurrentPool(dev));
    return CUDA_SUCCESS;
  });
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (CUresult rc = Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr || target->device != dev) return CUDA_ERROR_INVALID_VALUE;  // must be local to dev
    sim::DefaultPool(dev);  // sizes the per-device tables
    sim::Pools().current_pool[static_cast<size_t>(dev)] = target;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = sim::CheckPoolProps(poolProps); rc != CUDA_SUCCESS) return rc;
    sim::Context* owner = nullptr;
    (void)Runtime::Get().CurrentContext(&owner);  // pools need no context; one only owns it if current
    std::lock_guard lock(sim::Pools().mu);
    *pool = reinterpret_cast<CUmemoryPool>(sim::NewPool(*poolProps, owner, /*is_default=*/false));
    return CUDA_SUCCESS;
  });
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr || target->is_default) return CUDA_ERROR_INVALID_VALUE;
    sim::DestroyLocked(target);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return sim::SetAttribute(target, attr, value);
  });
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return sim::GetAttribute(target, attr, value);
  });
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    sim::TrimLocked(target, minBytesToKeep);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (count > 0 && map == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {  // validate all before applying any
      const CUmemAccessDesc& d = map[i];
      if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
          Runtime::Get().CheckDevice(d.location.id) != CUDA_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
          d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      // The pool's own device always keeps read-write access.
      if (d.location.id == target->device && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    for (size_t i = 0; i < count; ++i)
      target->peer_access[static_cast<size_t>(map[i].location.id)] = map[i].flags;
    return CUDA_SUCCESS;
  });
}


// CUDA 13.0's location-based pool queries: a device's pools as cuDeviceGet*/SetMemPool, the
// host's (HOST, HOST_NUMA node 0) made on first use and never charged.
CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* fallback = nullptr;
    sim::MemPool** current = nullptr;
    if (CUresult rc = sim::LocationSlots(location, type, &fallback, &current); rc != CUDA_SUCCESS) return rc;
    *pool_out = reinterpret_cast<CUmemoryPool>(fallback);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* fallback = nullptr;
    sim::MemPool** current = nullptr;
    if (CUresult rc = sim::LocationSlots(location, type, &fallback, &current); rc != CUDA_SUCCESS) return rc;
    *pool_out = reinterpret_cast<CUmemoryPool>(*current != nullptr ? *current : fallback);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* fallback = nullptr;
    sim::MemPool** current = nullptr;
    if (CUresult rc = sim::LocationSlots(location, type, &fallback, &current); rc != CUDA_SUCCESS) return rc;
    sim::MemPool* target = sim::Lookup(pool);
    // The pool must be of that location.
    if (target == nullptr || target->props.location.type != location->type ||
        (location->type == CU_MEM_LOCATION_TYPE_DEVICE && target->device != location->id)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *current = target;
    return CUDA_SUCCESS;
  });
}

// What a device may do with the pool's memory (cuMemPoolSetAccess); the host none for a device pool.
CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(memPool);
    if (target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int kind = 0;
    std::memcpy(&kind, &location->type, sizeof kind);
    if (kind != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = Runtime::Get().CheckDevice(location->id); rc != CUDA_SUCCESS) return rc;
    *flags = target->peer_access[static_cast<size_t>(location->id)];
    return CUDA_SUCCESS;
  });
}

// Sharing pools between processes: a pool's allocations are private mappings here (IPC memory
// exists only for cuMemAlloc allocations, api_ipc.cc), so a pool made with a shareable handle type
// answers CUDA_ERROR_NOT_SUPPORTED; one made without answers CUDA_ERROR_INVALID_VALUE, as
// documented; no pool is ever imported.
CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType,
                                          unsigned long long flags) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (handle_out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    sim::MemPool* target = sim::Lookup(pool);
    if (target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned type = 0;
    std::memcpy(&type, &handleType, sizeof type);
    if (type == 0 || (target->props.handleTypes & type) != type) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
  });
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                            CUmemAllocationHandleType handleType, unsigned long long flags) {
  (void)handle;
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    unsigned type = 0;
    std::memcpy(&type, &handleType, sizeof type);
    if (pool_out == nullptr || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_ERROR_INVALID_VALUE;  // no descriptor can name an exported pool: none is exported
  });
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (shareData_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto found = sim::MemoryRegistry::Get().FindBase(ptr);
    if (!found || found->kind != sim::AllocKind::kAsync || found->pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    // From an already shared pool only.
    if ((found->pool->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_ERROR_NOT_SUPPORTED;
  });
}

CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData* shareData) {
  return Guarded([&] {
    if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (ptr_out == nullptr || shareData == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Pools().mu);
    if (sim::Lookup(pool) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_INVALID_VALUE;  // only an imported pool's pointers can be imported: none exists
  });
}

}  // extern "C"
