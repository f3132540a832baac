// PoolAccounting: charges a stream-ordered memory pool's RESERVE (what the device really holds
// for it, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) instead of the sum of its live allocations.
//
// Contract (docs/hook-memory.md "Stream-ordered pools")
// - Per tracked pool (each device's current pool, found lazily with cuDeviceGetMemPool; pools
//   from cuMemPoolCreate; a pool first seen in cuMemAllocFromPoolAsync is adopted on the stream's
//   device) the ledger holds `charged` bytes. Host-located pools are tracked but never charged.
// - Allocate(): `live` (exact bytes of the pool's live allocations, as the hook saw them) grows
//   by the request. If live <= charged the pool has room: the driver is called with no ledger
//   operation and no pool query (fast path: no lock, no syscall). Otherwise (slow path, under the
//   pool's mutex) the growth live - charged, rounded up to the granularity, is reserved BEFORE the
//   driver is called (refused: CUDA_ERROR_OUT_OF_MEMORY, the driver is not called, nothing
//   changed); after the call RESERVED_MEM_CURRENT is read and the ledger settled to it: the
//   unneeded part of the reservation is released, a larger growth (fragmentation) is charged on
//   top, and if that is refused the allocation is undone (freed, its stream synchronised, the pool
//   trimmed back to what the ledger covers) and CUDA_ERROR_OUT_OF_MEMORY returned. Each such
//   refusal is counted once in the ledger's oom_refusals.
// - Freed(): nothing is credited (the pool keeps the memory); only `live` shrinks.
// - Reconcile*(): after a synchronisation or cuMemPoolTrimTo, `charged` is settled to the reserve.
//   Growth is charged; a drop is credited only when no allocation on that pool was in flight
//   around the query (otherwise the next reconcile does it: over-counted, never under-counted).
// - Destroyed(): a pool the driver reports empty is credited at once; one with outstanding
//   allocations when its last tracked allocation is freed (the driver releases it then too).
// - Allocate/Freed fast paths take no lock and make no syscall; the slow paths and reconciles
//   take the pool's mutex and call the driver.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "core/abi/cuda_types.h"
#include "hook/memory/device_map.h"
#include "hook/memory/pointer_table.h"
#include "hook/memory/saturating.h"

namespace fgpu::slice {
class Ledger;
}

namespace fgpu::hook {

// The real driver functions PoolAccounting calls itself (never our wrappers). Tests fake them.
struct PoolCalls {
  CUresult (*pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void*) = nullptr;
  CUresult (*device_get_mem_pool)(CUmemoryPool*, CUdevice) = nullptr;
  CUresult (*pool_trim_to)(CUmemoryPool, size_t) = nullptr;
};

// From the hook's real-symbol resolution. Call after HookState().
PoolCalls ResolvePoolCalls();

struct PoolSlot {
  std::atomic<CUmemoryPool> handle{nullptr};  // null: a free slot
  std::atomic<uint64_t> generation{0};        // bumped on every registration (stale entries)
  CUdevice device = 0;
  int slice_device = kNotInSlice;
  uint64_t granularity = kFallbackGranularity;
  bool host = false;       // host-located: never charged
  std::atomic<bool> destroyed{false};  // destroyed with outstanding allocations; set under mu
  std::atomic<uint64_t> charged{0};  // on the ledger for this pool; written under mu only
  std::atomic<uint64_t> live{0};     // exact bytes of tracked live allocations
  std::atomic<uint64_t> started{0};  // allocations begun / finished, for reconcile quiescence
  std::atomic<uint64_t> finished{0};
  std::mutex mu;
};

class PoolAccounting {
 public:
  static constexpr int kMaxPools = 256;
  static constexpr int kCachedDevices = 64;

  PoolAccounting(slice::Ledger* ledger, DeviceMap* devices, const PoolCalls* calls,
                 int log2_table_slots = PointerTable::kDefaultLog2Slots)
      : ledger_(ledger), devices_(devices), calls_(calls), table_(log2_table_slots) {}
  PoolAccounting(const PoolAccounting&) = delete;
  PoolAccounting& operator=(const PoolAccounting&) = delete;

  // After a successful cuMemPoolCreate / cuDeviceSetMemPool.
  void Created(CUmemoryPool pool, const CUmemPoolProps& props);
  void CurrentPoolSet(CUdevice device, CUmemoryPool pool);
  // Before cuMemPoolDestroy: whether the driver says nothing is allocated from it; after it
  // succeeded: Destroyed.
  bool DriverSaysEmpty(CUmemoryPool pool) const;
  void Destroyed(CUmemoryPool pool, bool driver_says_empty);

  // The pool an allocation on `device` draws from (`pool` null: the device's current pool).
  // Null when the hook cannot tell (the driver refuses the query or the device: the caller
  // forwards, and the driver refuses the allocation too) — or, with `*full` set, when every
  // one of the kMaxPools slots is taken: the caller must refuse (RefusedUntracked), since an
  // allocation from a pool the hook cannot track would escape the cap.
  PoolSlot* ForAllocation(CUdevice device, CUmemoryPool pool, bool* full = nullptr);
  // Counts an allocation refused because its pool cannot be tracked in the ledger's
  // fail_closed_refusals; returns CUDA_ERROR_OUT_OF_MEMORY.
  CUresult RefusedUntracked();

  // allocate(uint64_t* ptr) -> CUresult calls the driver; undo(uint64_t ptr) frees the
  // allocation and synchronises its stream (the slow path's refused growth).
  template <typename AllocateFn, typename UndoFn>
  CUresult Allocate(PoolSlot* slot, uint64_t bytes, AllocateFn&& allocate, UndoFn&& undo);

  // free_call() -> CUresult. False (free_call not called): not a tracked pool allocation.
  template <typename Free>
  bool Freed(uint64_t ptr, Free&& free_call, CUresult* rc);

  void ReconcileAll();
  void Reconcile(CUmemoryPool pool);

  // For tests and the docs' invariants: what the ledger holds for `pool` (0 if untracked).
  uint64_t ChargedFor(CUmemoryPool pool) const;
  uint64_t LiveFor(CUmemoryPool pool) const;

 private:
  PoolSlot* Find(CUmemoryPool pool) const;
  // Finds or registers (under registry_mu_). Null: the device is unknown, or no free slot (then
  // `*full` is set when given).
  PoolSlot* Register(CUmemoryPool pool, CUdevice device, bool host, bool* full = nullptr);
  bool QueryReserve(const PoolSlot& slot, uint64_t* reserve) const;
  // Under slot->mu: settles the ledger's `held` bytes for the slot towards `reserve`, never
  // below `floor`. False: growth refused (held unchanged). Stores the result in slot->charged.
  bool SettleLocked(PoolSlot* slot, uint64_t held, uint64_t reserve, uint64_t floor);
  void ReconcileLocked(PoolSlot* slot);
  void FinalizeLocked(PoolSlot* slot);
  void Record(PoolSlot* slot, uint64_t ptr, uint64_t bytes);
  void DropLive(PoolSlot* slot, uint64_t bytes);
  // Counts an allocation refused for the cap (a pool outside the slice has cap 0) in the
  // ledger's oom_refusals; returns CUDA_ERROR_OUT_OF_MEMORY.
  CUresult RefusedOverCap();
  // The slow path of Allocate, under slot->mu. Undo as in Allocate.
  template <typename AllocateFn, typename UndoFn>
  CUresult AllocateSlow(PoolSlot* slot, uint64_t bytes, uint64_t live_after, AllocateFn& allocate, UndoFn& undo);

  slice::Ledger* ledger_;
  DeviceMap* devices_;
  const PoolCalls* calls_;
  PointerTable table_;  // ptr -> {device: slot index, bytes: exact size, owner: generation}
  std::mutex registry_mu_;
  std::atomic<int> slot_count_{0};  // slots [0, count) were ever used
  PoolSlot slots_[kMaxPools];
  std::atomic<PoolSlot*> current_[kCachedDevices] = {};
};

// The process's PoolAccounting; null unless the memory hook enforces (EnforcingMemoryHook()).
PoolAccounting* EnforcingPoolAccounting();

// ---- templates ----

bool LedgerReserve(slice::Ledger* ledger, int slice_device, uint64_t bytes);
void LedgerRelease(slice::Ledger* ledger, int slice_device, uint64_t bytes);

template <typename AllocateFn, typename UndoFn>
CUresult PoolAccounting::Allocate(PoolSlot* slot, uint64_t bytes, AllocateFn&& allocate, UndoFn&& undo) {
  if (slot->host) {  // host memory is not device memory
    uint64_t ignored = 0;
    return allocate(&ignored);
  }
  slot->started.fetch_add(1);
  const uint64_t live_after = slot->live.fetch_add(bytes) + bytes;
  CUresult rc;
  if (live_after >= bytes && live_after <= slot->charged.load()) {
    // Fast path: the pool's reserve already covers every live allocation and this one.
    uint64_t ptr = 0;
    rc = allocate(&ptr);
    if (rc == CUDA_SUCCESS) {
      Record(slot, ptr, bytes);
    } else {
      DropLive(slot, bytes);
    }
  } else {
    std::lock_guard lock(slot->mu);
    rc = AllocateSlow(slot, bytes, live_after, allocate, undo);
  }
  slot->finished.fetch_add(1);
  return rc;
}

template <typename AllocateFn, typename UndoFn>
CUresult PoolAccounting::AllocateSlow(PoolSlot* slot, uint64_t bytes, uint64_t live_after, AllocateFn& allocate,
                                      UndoFn& undo) {
  const uint64_t before = slot->charged.load();
  const uint64_t shortfall = live_after < bytes ? UINT64_MAX : live_after > before ? live_after - before : 0;
  const uint64_t need = RoundUpToGranule(shortfall, slot->granularity);
  if (need != 0 && !LedgerReserve(ledger_, slot->slice_device, need)) {
    DropLive(slot, bytes);
    return RefusedOverCap();
  }
  uint64_t ptr = 0;
  const CUresult rc = allocate(&ptr);
  if (rc != CUDA_SUCCESS) {
    LedgerRelease(ledger_, slot->slice_device, need);
    DropLive(slot, bytes);
    return rc;
  }
  uint64_t reserve = 0;
  if (!QueryReserve(*slot, &reserve)) {
    slot->charged.store(before + need);  // cannot tell: keep the whole reservation
    Record(slot, ptr, bytes);
    return CUDA_SUCCESS;
  }
  // Never below what was charged before: lowering is a reconcile's job (it checks quiescence).
  if (SettleLocked(slot, before + need, reserve, before)) {
    Record(slot, ptr, bytes);
    return CUDA_SUCCESS;
  }
  // The driver grew the pool by more than the ledger admits: give this allocation back.
  undo(ptr);
  DropLive(slot, bytes);
  if (calls_->pool_trim_to != nullptr) calls_->pool_trim_to(slot->handle.load(), before + need);
  if (QueryReserve(*slot, &reserve) && !SettleLocked(slot, before + need, reserve, before)) {
    slot->charged.store(before + need);  // still above the cap: the next reconcile retries
  }
  return RefusedOverCap();
}

template <typename Free>
bool PoolAccounting::Freed(uint64_t ptr, Free&& free_call, CUresult* rc) {
  PointerEntry entry;
  if (!table_.Erase(PointerKind::kDevicePointer, ptr, &entry)) return false;
  *rc = free_call();
  if (*rc != CUDA_SUCCESS) {
    (void)table_.Insert(PointerKind::kDevicePointer, ptr, entry);  // still allocated
    return true;
  }
  PoolSlot* slot = &slots_[entry.device];
  if (slot->generation.load() != entry.owner) return true;  // its pool is gone
  DropLive(slot, entry.bytes);
  if (slot->destroyed.load() && slot->live.load() == 0) {
    std::lock_guard lock(slot->mu);
    if (slot->destroyed.load() && slot->live.load() == 0) FinalizeLocked(slot);
  }
  return true;
}

}  // namespace fgpu::hook
