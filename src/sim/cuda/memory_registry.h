// The memory side of the simulated libcuda: the process-local table of every live
// device-visible allocation, the VMM address reservations, and the few primitives
// the api_memory / api_memcpy / api_vmm / api_pool / api_array files share.
//
// Memory model (docs/sim-memory.md): device memory is real host memory. An
// allocation's CUdeviceptr is the host address of its mapping, so data written by
// one copy is read back by the next.
//
// Contract of MemoryRegistry
// - Entries never overlap. Find(addr) returns the entry whose [base, base + size)
//   contains addr, in O(log n); 10^5 live entries are routine.
// - Entries are handed out by value, so a copy stays usable after a concurrent
//   erase. Erase returns the removed entry: of two threads freeing the same base,
//   exactly one gets it and releases the memory (a double free finds nothing).
// - The registry owns no memory and charges nothing: callers map/unmap and
//   charge/credit around Insert/Erase.
// - Thread-safe. Lookups share a reader lock; mutations take the writer lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

struct MemPool;         // a stream-ordered pool (api_pool.cc)
struct PhysicalMemory;  // a cuMemCreate allocation (api_vmm.cc)

enum class AllocKind : uint8_t {
  kDevice,          // cuMemAlloc
  kPitched,         // cuMemAllocPitch
  kManaged,         // cuMemAllocManaged
  kHostPinned,      // cuMemAllocHost / cuMemHostAlloc
  kHostRegistered,  // cuMemHostRegister (the application's own memory)
  kAsync,           // cuMemAllocAsync / cuMemAllocFromPoolAsync
  kVmmMapping,      // one piece of a cuMemMap mapping
  kIpcImport,       // cuIpcOpenMemHandle: another process's allocation, charged there
  kExternalBuffer,  // cuExternalMemoryGetMappedBuffer: a view of imported memory, charged by the import
  kModuleGlobal,    // a module's .global/.const variable; the first of a module's carries its charge
};

// Bit of an accessor in Allocation::read_mask / write_mask: device d is bit d.
inline constexpr int kHostAccessor = 63;
inline uint64_t AccessorBit(int accessor) { return uint64_t{1} << accessor; }

struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;           // the range the application sees
  uint64_t mapped_length = 0;  // bytes of our own mapping at `base` (0: we own none)
  uint64_t charged = 0;        // device bytes charged; credited exactly on release
  int device = 0;
  Context* ctx = nullptr;  // owner; nullptr for objects made with no current context
  AllocKind kind = AllocKind::kDevice;
  unsigned flags = 0;       // host alloc/register flags, managed attach flags
  uint64_t buffer_id = 0;   // process-unique, never reused
  MemPool* pool = nullptr;  // kAsync: the pool whose `used` bytes it holds
  // kVmmMapping. A cuMemMap range is split into pieces where cuMemSetAccess gave
  // parts of it different access; every piece remembers the whole mapped range.
  PhysicalMemory* physical = nullptr;
  uint64_t physical_offset = 0;
  uint64_t mapping_base = 0;
  uint64_t mapping_size = 0;
  uint64_t read_mask = 0;
  uint64_t write_mask = 0;

  uint64_t end() const { return base + size; }
};

// A cuMemAddressReserve range: PROT_NONE address space, no memory.
struct Reservation {
  uint64_t base = 0;
  uint64_t size = 0;
};

class MemoryRegistry {
 public:
  enum class Access : uint8_t { kRead, kWrite };

  static MemoryRegistry& Get();

  // False (nothing inserted) if the range is empty or overlaps a live entry.
  bool Insert(const Allocation& allocation);
  // The entry containing `addr`.
  std::optional<Allocation> Find(uint64_t addr) const;
  // The entry starting exactly at `base`.
  std::optional<Allocation> FindBase(uint64_t base) const;
  // Removes and returns the entry starting exactly at `base`, if `accept` agrees
  // (checked under the writer lock, so a concurrent free cannot slip in between).
  std::optional<Allocation> Erase(uint64_t base,
                                  const std::function<bool(const Allocation&)>& accept = nullptr);
  // Removes and returns every entry matching `pred` (called under the writer lock).
  std::vector<Allocation> EraseIf(const std::function<bool(const Allocation&)>& pred);
  // Every entry intersecting [addr, addr + n), in address order.
  std::vector<Allocation> Intersecting(uint64_t addr, uint64_t n) const;
  bool Overlaps(uint64_t addr, uint64_t n) const;

  // Whether `accessor` (a device, kHostAccessor, or -1 for anyone) may read or write
  // all of [addr, addr + n): the range lies in one allocation, or in back-to-back VMM
  // pieces that all grant the access.
  bool CanAccess(uint64_t addr, uint64_t n, Access access, int accessor) const;

  // How a host range relates to tracked memory, in one lookup: inside tracked memory
  // that grants the access, touching tracked memory or a reservation otherwise, or
  // untracked (the application's own memory).
  enum class HostRange : uint8_t { kAccessible, kInaccessible, kUntracked };
  HostRange ClassifyHostRange(uint64_t addr, uint64_t n, Access access) const;

  // VMM pieces. SplitAt cuts the piece strictly containing `addr` in two (no-op
  // at a boundary or outside any piece); SetAccessMasks rewrites one piece's masks.
  void SplitAt(uint64_t addr);
  bool SetAccessMasks(uint64_t base, uint64_t read_mask, uint64_t write_mask);

  // Address reservations, kept apart from the entries they will hold.
  void AddReservation(const Reservation& reservation);
  bool RemoveReservation(uint64_t base, uint64_t size);
  std::optional<Reservation> FindReservation(uint64_t addr) const;

  uint64_t NextBufferId();

 private:
  MemoryRegistry() = default;
  // The entry containing addr, or end(). Caller holds a lock.
  std::map<uint64_t, Allocation>::const_iterator Containing(uint64_t addr) const;
  // Caller holds a lock.
  bool CanAccessLocked(uint64_t addr, uint64_t n, Access access, int accessor) const;
  bool ReservationOverlapsLocked(uint64_t addr, uint64_t n) const;

  mutable std::shared_mutex mu_;
  std::map<uint64_t, Allocation> entries_;        // base -> allocation
  std::map<uint64_t, Reservation> reservations_;  // base -> reservation
  std::atomic<uint64_t> next_buffer_id_{1};
};

// --- primitives shared by the memory API files ------------------------------------

uint64_t PageSize();
inline uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return value > UINT64_MAX - (multiple - 1) ? UINT64_MAX : (value + multiple - 1) / multiple * multiple;
}

// A private anonymous NORESERVE read-write mapping of `bytes` (rounded up to pages):
// untouched pages cost nothing. `low_4g` places it below 4 GiB for the legacy 32-bit
// entry points. Returns 0 when the address space is exhausted.
uint64_t MapBacking(uint64_t bytes, bool low_4g = false);
void UnmapBacking(uint64_t base, uint64_t bytes);

// Whether [addr, addr + n) is memory the sim may touch as host memory: tracked
// allocations must grant the access; untracked memory must be mapped and must not
// lie inside a VMM reservation (whose unmapped parts are PROT_NONE).
bool HostRangeUsable(const void* addr, uint64_t n, MemoryRegistry::Access access);

// Runs an API body so that nothing escapes across the C ABI.
template <typename Body>
CUresult Guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

// --- hooks between the memory API files ---------------------------------------------

// api_ipc.cc: an allocation going away closes its export's descriptor or forgets its import.
void ForgetIpc(const Allocation& allocation);
// api_managed.cc: a managed allocation going away drops the advice recorded for it.
void ForgetManagedAdvice(const Allocation& allocation);
// api_pool.cc: returns a stream-ordered allocation's bytes to its pool and unmaps it.
void ReleaseAsyncAllocation(const Allocation& allocation);
// Release everything of one kind that `ctx` owns (ReleaseContextMemory calls them).
void ReleasePoolsOf(Context* ctx);
void ReleaseVmmOf(Context* ctx);
void ReleaseArraysOf(Context* ctx);
void ReleaseExternalOf(Context* ctx);  // api_external.cc: imported memory and semaphores

}  // namespace fgpu::sim::cuda
