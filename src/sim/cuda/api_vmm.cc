// Virtual memory management: physical handles (cuMemCreate), address reservations,
// mappings and access.
//
// A physical allocation is a memfd of its size, so it can be mapped at several
// addresses (and, exported as a file descriptor, in several processes) with the
// data shared. A reservation is PROT_NONE address space; cuMemMap puts the memfd
// there with MAP_FIXED, still PROT_NONE until cuMemSetAccess, as in the driver.
// Device memory is charged at cuMemCreate and credited when the handle is released
// and no mapping remains. Imported handles are never charged: the exporter owns it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/abi/cuda_api.h"
#include "sim/cuda/array_store.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {

struct PhysicalMemory {
  CUmemGenericAllocationHandle handle = 0;
  int fd = -1;
  uint64_t size = 0;
  CUmemAllocationProp prop{};
  int device = CU_DEVICE_CPU;  // CU_DEVICE_CPU for host locations
  uint64_t granularity = 0;
  uint64_t charged = 0;
  Context* owner = nullptr;
  int handle_refs = 1;    // cuMemCreate / import / retain, minus cuMemRelease
  uint64_t mappings = 0;  // live cuMemMap ranges
};

namespace {

constexpr uint64_t kHostGranularity = 2ull << 20;
// Handle values carry a tag so that small integers and pointers are never valid handles.
constexpr uint64_t kHandleTag = 0xF6ull << 56;
constexpr const char* kMemfdPrefix = "fgpu-sim-vmm:";

struct VmmTable {
  std::mutex mu;  // serialises every VMM mutation, registry pieces included
  std::unordered_map<CUmemGenericAllocationHandle, std::unique_ptr<PhysicalMemory>> physical;
  uint64_t next_handle = 1;
};

VmmTable& Vmm() {
  static auto* table = new VmmTable;
  return *table;
}

// Caller holds Vmm().mu. A handle the application may still use (refs > 0).
PhysicalMemory* LiveHandle(CUmemGenericAllocationHandle handle) {
  auto it = Vmm().physical.find(handle);
  return it == Vmm().physical.end() || it->second->handle_refs <= 0 ? nullptr : it->second.get();
}

// Caller holds Vmm().mu. Frees the memory once nothing refers to it any more.
void MaybeDestroy(PhysicalMemory* p) {
  if (p->handle_refs > 0 || p->mappings > 0) return;
  close(p->fd);
  if (p->charged != 0) Runtime::Get().Credit(p->device, p->charged);
  Vmm().physical.erase(p->handle);
}

// Validates an allocation property and yields the device (CU_DEVICE_CPU: host) and
// the granularity it implies.
CUresult CheckProp(const CUmemAllocationProp* prop, int* device, uint64_t* granularity) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  const unsigned handle_types = prop->requestedHandleTypes;
  if ((handle_types & CU_MEM_HANDLE_TYPE_FABRIC) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no IMEX channel
  if ((handle_types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;  // Win32 handles on Linux
  }
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (CUresult rc = Runtime::Get().CheckDevice(prop->location.id); rc != CUDA_SUCCESS) return rc;
      *device = prop->location.id;
      *granularity = Runtime::Get().spec(*device).granularity;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST && handle_types != 0)
        return CUDA_ERROR_INVALID_VALUE;
      if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id != 0) {
        return CUDA_ERROR_INVALID_VALUE;  // one NUMA node
      }
      *device = CU_DEVICE_CPU;
      *granularity = kHostGranularity;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // HOST_NUMA_CURRENT included, as cuMemCreate documents
  }
}

// Caller holds Vmm().mu.
CUmemGenericAllocationHandle AddPhysical(std::unique_ptr<PhysicalMemory> p) {
  VmmTable& table = Vmm();
  p->handle = kHandleTag | table.next_handle++;
  const CUmemGenericAllocationHandle handle = p->handle;
  table.physical.emplace(handle, std::move(p));
  return handle;
}

// Puts PROT_NONE reservation back over [base, base + size) after a mapping goes.
void RestoreReservation(uint64_t base, uint64_t size) {
  (void)mmap(reinterpret_cast<void*>(base), size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

// The VMM pieces covering [ptr, ptr + size) exactly and without gaps, or empty.
std::vector<Allocation> CoveringPieces(uint64_t ptr, uint64_t size) {
  std::vector<Allocation> pieces = MemoryRegistry::Get().Intersecting(ptr, size);
  uint64_t cursor = ptr;
  for (const Allocation& piece : pieces) {
    if (piece.kind != AllocKind::kVmmMapping || piece.base > cursor) return {};
    cursor = piece.end();
  }
  if (pieces.empty() || cursor < ptr + size) return {};
  return pieces;
}

int Protection(uint64_t read_mask, uint64_t write_mask) {
  if (write_mask != 0) return PROT_READ | PROT_WRITE;
  return read_mask != 0 ? PROT_READ : PROT_NONE;
}

CUresult AccessorOf(const CUmemLocation& location, int* accessor) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (CUresult rc = Runtime::Get().CheckDevice(location.id); rc != CUDA_SUCCESS) return rc;
      *accessor = location.id;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      *accessor = kHostAccessor;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Create(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                unsigned long long flags) {
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int device = CU_DEVICE_CPU;
  uint64_t granularity = 0;
  if (CUresult rc = CheckProp(prop, &device, &granularity); rc != CUDA_SUCCESS) return rc;
  if (size == 0 || size % granularity != 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = std::make_unique<PhysicalMemory>();
  p->size = size;
  p->prop = *prop;
  p->device = device;
  p->granularity = granularity;
  p->charged = device == CU_DEVICE_CPU ? 0 : Runtime::Get().RoundToGranularity(device, size);
  (void)Runtime::Get().CurrentContext(&p->owner);  // VMM needs no context; one owns it if current
  // The memfd's name records the properties an importer needs.
  const std::string name = kMemfdPrefix + std::to_string(prop->location.type) + ":" +
                           std::to_string(prop->location.id) + ":" +
                           std::to_string(prop->requestedHandleTypes);
  if (p->charged != 0 && !Runtime::Get().Charge(device, p->charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  p->fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  // Owner-only (memfd_create makes it 0777): a descriptor handed over (SCM_RIGHTS) works for its
  // receiver whoever it is, but reopening it by path (/proc/<pid>/fd) opens nothing for another user.
  if (p->fd >= 0 && fchmod(p->fd, S_IRUSR | S_IWUSR) != 0) {
    close(p->fd);
    p->fd = -1;
  }
  if (p->fd < 0 || ftruncate(p->fd, static_cast<off_t>(size)) != 0) {
    if (p->fd >= 0) close(p->fd);
    if (p->charged != 0) Runtime::Get().Credit(device, p->charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(Vmm().mu);
  *handle = AddPhysical(std::move(p));
  return CUDA_SUCCESS;
}

CUresult Import(CUmemGenericAllocationHandle* handle, void* os_handle, CUmemAllocationHandleType type) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  // Only descriptors exported by a simulated driver (ours or another process's).
  char target[256] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  const std::string prefix = std::string("/memfd:") + kMemfdPrefix;
  if (n <= 0 || std::string(target, static_cast<size_t>(n)).rfind(prefix, 0) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  int location_type = 0, location_id = 0;
  unsigned handle_types = 0;
  if (std::sscanf(target + prefix.size(), "%d:%d:%u", &location_type, &location_id, &handle_types) != 3) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = std::make_unique<PhysicalMemory>();
  p->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p->prop.location.type = static_cast<CUmemLocationType>(location_type);
  p->prop.location.id = location_id;
  p->prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  int device = CU_DEVICE_CPU;
  uint64_t granularity = 0;
  if (CheckProp(&p->prop, &device, &granularity) != CUDA_SUCCESS) return CUDA_ERROR_NOT_SUPPORTED;
  p->size = static_cast<uint64_t>(st.st_size);
  p->device = device;
  p->granularity = granularity;
  (void)Runtime::Get().CurrentContext(&p->owner);
  p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (p->fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(Vmm().mu);
  *handle = AddPhysical(std::move(p));
  return CUDA_SUCCESS;
}

CUresult Reserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                 unsigned long long flags) {
  if (ptr == nullptr || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size % PageSize() != 0 || addr % PageSize() != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;  // a power of two, or 0
  uint64_t align = std::max<uint64_t>(alignment, kHostGranularity);
  for (int d = 0; d < Runtime::Get().device_count(); ++d) {
    align = std::max(align, Runtime::Get().spec(d).granularity);
  }
  if (size > UINT64_MAX - align) return CUDA_ERROR_OUT_OF_MEMORY;
  constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  uint64_t base = 0;
  if (addr != 0 && addr % align == 0) {  // the hint, if that space is free
    void* p =
        mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && reinterpret_cast<uint64_t>(p) == addr) {
      base = addr;
    } else if (p != MAP_FAILED) {
      munmap(p, size);  // kernels without MAP_FIXED_NOREPLACE treat it as a plain hint
    }
  }
  if (base == 0) {
    void* p = mmap(nullptr, size + align, PROT_NONE, kReserveFlags, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto raw = reinterpret_cast<uint64_t>(p);
    base = RoundUp(raw, align);  // keep [base, base + size), give back the slack on both sides
    if (base > raw) munmap(p, base - raw);
    if (const uint64_t tail = raw + align - base; tail > 0)
      munmap(reinterpret_cast<void*>(base + size), tail);
  }
  MemoryRegistry::Get().AddReservation({base, size});
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult Map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
             unsigned long long flags) {
  if (size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Vmm().mu);
  PhysicalMemory* p = LiveHandle(handle);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ptr % p->granularity != 0 || size % p->granularity != 0 || offset % p->granularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (offset > p->size || size > p->size - offset || ptr > UINT64_MAX - size) return CUDA_ERROR_INVALID_VALUE;
  MemoryRegistry& registry = MemoryRegistry::Get();
  const auto reservation = registry.FindReservation(ptr);
  if (!reservation || ptr + size > reservation->base + reservation->size) return CUDA_ERROR_INVALID_VALUE;
  if (registry.Overlaps(ptr, size)) return CUDA_ERROR_INVALID_VALUE;  // only unmapped space can be mapped
  void* mapped = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd,
                      static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) {
    RestoreReservation(ptr, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation piece;
  piece.base = ptr;
  piece.size = size;
  piece.device = p->device;
  piece.ctx = p->owner;
  piece.kind = AllocKind::kVmmMapping;
  piece.flags = p->prop.requestedHandleTypes;
  piece.physical = p;
  piece.physical_offset = offset;
  piece.mapping_base = ptr;
  piece.mapping_size = size;
  bool inserted = false;
  try {
    piece.buffer_id = registry.NextBufferId();
    inserted = registry.Insert(piece);
  } catch (...) {
    inserted = false;
  }
  if (!inserted) {
    RestoreReservation(ptr, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ++p->mappings;
  return CUDA_SUCCESS;
}

CUresult Unmap(CUdeviceptr ptr, size_t size) {
  if (size == 0 || ptr > UINT64_MAX - size) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Vmm().mu);
  const std::vector<Allocation> pieces = CoveringPieces(ptr, size);
  if (pieces.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (const Allocation& piece : pieces) {  // whole mappings only, never a sub-range
    if (piece.mapping_base < ptr || piece.mapping_base + piece.mapping_size > ptr + size) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  MemoryRegistry& registry = MemoryRegistry::Get();
  std::vector<CUmemGenericAllocationHandle> touched;
  for (const Allocation& piece : pieces) {
    registry.Erase(piece.base);
    if (piece.base == piece.mapping_base) {  // the first piece stands for its whole mapping
      --piece.physical->mappings;
      touched.push_back(piece.physical->handle);
    }
  }
  RestoreReservation(ptr, size);
  for (CUmemGenericAllocationHandle handle : touched) {
    auto it = Vmm().physical.find(handle);  // may already be gone: one handle, several mappings
    if (it != Vmm().physical.end()) MaybeDestroy(it->second.get());
  }
  return CUDA_SUCCESS;
}

CUresult SetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0 || size == 0 || ptr > UINT64_MAX - size) return CUDA_ERROR_INVALID_VALUE;
  if (ptr % PageSize() != 0 || size % PageSize() != 0) return CUDA_ERROR_INVALID_VALUE;
  std::vector<int> accessors(count);
  for (size_t i = 0; i < count; ++i) {
    if (CUresult rc = AccessorOf(desc[i].location, &accessors[i]); rc != CUDA_SUCCESS) return rc;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::lock_guard lock(Vmm().mu);
  if (CoveringPieces(ptr, size).empty()) return CUDA_ERROR_INVALID_VALUE;  // must be fully mapped
  MemoryRegistry& registry = MemoryRegistry::Get();
  registry.SplitAt(ptr);
  registry.SplitAt(ptr + size);
  for (const Allocation& piece : registry.Intersecting(ptr, size)) {
    uint64_t read = piece.read_mask;
    uint64_t write = piece.write_mask;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t bit = AccessorBit(accessors[i]);
      read &= ~bit;
      write &= ~bit;
      if ((desc[i].flags & CU_MEM_ACCESS_FLAGS_PROT_READ) != 0) read |= bit;
      if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) write |= bit;
    }
    // The host mapping carries the union: the sim executes every accessor's copies.
    if (mprotect(reinterpret_cast<void*>(piece.base), piece.size, Protection(read, write)) != 0) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    registry.SetAccessMasks(piece.base, read, write);
  }
  return CUDA_SUCCESS;
}

// Caller holds Vmm().mu. Removes every mapping of `p`, wherever it is mapped.
void UnmapAll(PhysicalMemory* p) {
  const auto pieces = MemoryRegistry::Get().EraseIf([p](const Allocation& a) { return a.physical == p; });
  for (const Allocation& piece : pieces) RestoreReservation(piece.base, piece.size);
  p->mappings = 0;
}

}  // namespace

CUresult MapPhysicalIntoArray(CUmemGenericAllocationHandle handle, uint64_t offset, uint64_t bytes, int device,
                              std::byte** data) {
  std::lock_guard lock(Vmm().mu);
  PhysicalMemory* p = LiveHandle(handle);
  if (p == nullptr || p->device != device || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (offset > p->size || bytes > p->size - offset || offset % PageSize() != 0) return CUDA_ERROR_INVALID_VALUE;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  ++p->mappings;
  *data = static_cast<std::byte*>(mapped);
  return CUDA_SUCCESS;
}

CUresult CheckPhysicalRange(CUmemGenericAllocationHandle handle, uint64_t offset, uint64_t bytes, int device) {
  std::lock_guard lock(Vmm().mu);
  const PhysicalMemory* p = LiveHandle(handle);
  if (p == nullptr || p->device != device || offset > p->size || bytes > p->size - offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

void UnmapPhysicalFromArray(CUmemGenericAllocationHandle handle, void* data, uint64_t bytes) {
  std::lock_guard lock(Vmm().mu);
  munmap(data, bytes);
  auto it = Vmm().physical.find(handle);
  if (it == Vmm().physical.end()) return;
  --it->second->mappings;
  MaybeDestroy(it->second.get());
}

void ReleaseVmmOf(Context* ctx) {
  std::lock_guard lock(Vmm().mu);
  std::vector<PhysicalMemory*> owned;
  for (const auto& [handle, p] : Vmm().physical) {
    if (p->owner == ctx) owned.push_back(p.get());
  }
  for (PhysicalMemory* p : owned) {
    UnmapAll(p);
    p->handle_refs = 0;
    MaybeDestroy(p);
  }
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;
using sim::Ready;
using sim::Runtime;

extern "C" {

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::Create(handle, size, prop, flags);
  });
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Vmm().mu);
    sim::PhysicalMemory* p = sim::LiveHandle(handle);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    --p->handle_refs;
    sim::MaybeDestroy(p);  // the memory goes only once no mapping remains either
    return CUDA_SUCCESS;
  });
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::Reserve(ptr, size, alignment, addr, flags);
  });
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Vmm().mu);
    sim::MemoryRegistry& registry = sim::MemoryRegistry::Get();
    const auto reservation = registry.FindReservation(ptr);
    if (!reservation || reservation->base != ptr || reservation->size != size)
      return CUDA_ERROR_INVALID_VALUE;
    if (registry.Overlaps(ptr, size)) return CUDA_ERROR_INVALID_VALUE;  // unmap first
    registry.RemoveReservation(ptr, size);
    munmap(reinterpret_cast<void*>(ptr), size);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::Map(ptr, size, offset, handle, flags);
  });
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::Unmap(ptr, size);
  });
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::SetAccess(ptr, size, desc, count);
  });
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int accessor = 0;
    if (CUresult rc = sim::AccessorOf(*location, &accessor); rc != CUDA_SUCCESS) return rc;
    const auto piece = sim::MemoryRegistry::Get().Find(ptr);
    if (!piece || piece->kind != sim::AllocKind::kVmmMapping) return CUDA_ERROR_INVALID_VALUE;
    const uint64_t bit = sim::AccessorBit(accessor);
    if ((piece->write_mask & bit) != 0) {
      *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    } else {
      *flags = (piece->read_mask & bit) != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    int device = CU_DEVICE_CPU;
    uint64_t value = 0;
    if (CUresult rc = sim::CheckProp(prop, &device, &value); rc != CUDA_SUCCESS) return rc;
    *granularity = value;  // minimum and recommended are the same on the simulated devices
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Vmm().mu);
    const sim::PhysicalMemory* p = sim::LiveHandle(handle);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *prop = p->prop;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Vmm().mu);
    const auto piece = sim::MemoryRegistry::Get().Find(reinterpret_cast<uint64_t>(addr));
    if (!piece || piece->kind != sim::AllocKind::kVmmMapping) return CUDA_ERROR_INVALID_VALUE;
    ++piece->physical->handle_refs;  // live while mapped, even if every handle was released
    *handle = piece->physical->handle;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    if (shareableHandle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
    std::lock_guard lock(sim::Vmm().mu);
    const sim::PhysicalMemory* p = sim::LiveHandle(handle);
    if (p == nullptr || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
      return CUDA_ERROR_INVALID_VALUE;
    if ((p->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
      return CUDA_ERROR_INVALID_VALUE;  // not requested at cuMemCreate
    }
    const int fd = dup(p->fd);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    *static_cast<int*>(shareableHandle) = fd;
    return CUDA_SUCCESS;
  });
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  return Guarded([&] {
    if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
    return sim::Import(handle, osHandle, shHandleType);
  });
}

}  // extern "C"
