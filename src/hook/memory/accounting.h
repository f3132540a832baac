// MemoryAccounting: the reserve -> real call -> commit/rollback protocol every allocation
// wrapper follows, and the claim -> real free -> release protocol of every free.
//
// Contract (docs/hook-memory.md)
// - Attribute*: which device, and which owning context, a call charges: the current context
//   (cuMemAlloc*, managed, arrays), the stream's context (stream-ordered allocations), the
//   property's location (cuMemCreate; host locations are not device memory). False when the hook
//   cannot attribute the call (no current context, an invalid stream): the wrapper forwards it
//   untouched and the driver reports the problem.
// - Charged(): reserves the request rounded up to the device's allocation granularity; a refusal
//   is CUDA_ERROR_OUT_OF_MEMORY and the driver is not called. A driver error rolls the
//   reservation back and is returned untouched. On success the key is recorded; if the table
//   cannot record it the allocation is undone, the charge rolled back and
//   CUDA_ERROR_OUT_OF_MEMORY returned: a charge is never kept without its entry.
// - A device outside the slice has cap 0: every allocation there is refused (fail closed).
// - Counters (docs/hook.md "Counters"): every caller answers a false Reserve, Resize or Record
//   with CUDA_ERROR_OUT_OF_MEMORY, so those refusals are counted where their reason is known: over
//   the cap (a device outside the slice included) in the ledger's oom_refusals; a device whose
//   identity cannot be read, or a charge the table cannot keep, in fail_closed_refusals. One
//   relaxed atomic add on the refusal path; nothing on success.
// - Freed(): the entry is claimed before the driver frees (so two racing frees cannot both credit,
//   and an address the driver hands out again never meets a stale entry), the charge released
//   only when the driver succeeded; on failure the entry is restored and the error returned.
//   Unknown keys are forwarded untouched.
// - Charged/Freed take no lock, make no syscall of their own, allocate nothing, log nothing.
//   ClaimOwnedBy walks the whole table and allocates: context teardown only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/interpose/real_calls.h"
#include "hook/memory/device_map.h"
#include "hook/memory/pointer_table.h"

namespace fgpu::slice {
class Ledger;
}

namespace fgpu::hook {

struct Attribution {
  CUdevice device = 0;
  CUcontext owner = nullptr;  // destroyed with this context (null: owned by the process)
};

struct Reservation {
  int slice_device = kNotInSlice;
  uint64_t bytes = 0;  // as charged: rounded up to the granularity
};

struct ClaimedEntry {
  PointerKind kind{};
  uint64_t key = 0;
  PointerEntry entry;
};

class MemoryAccounting {
 public:
  MemoryAccounting(slice::Ledger* ledger, DeviceMap* devices, PointerTable* table, const RealCalls* calls)
      : ledger_(ledger), devices_(devices), table_(table), calls_(calls) {}
  MemoryAccounting(const MemoryAccounting&) = delete;
  MemoryAccounting& operator=(const MemoryAccounting&) = delete;

  bool AttributeToCurrentContext(Attribution* at) const;
  bool AttributeToStream(CUstream stream, bool per_thread_default, Attribution* at) const;
  bool AttributeToLocation(const CUmemLocation& location, Attribution* at) const;

  // Rounds `bytes` up to the device's granularity and charges it. False: over the cap, a
  // device outside the slice, or a device that cannot be identified; nothing changed, the
  // refusal counted.
  bool Reserve(const Attribution& at, uint64_t bytes, Reservation* reservation);
  // Makes the reservation `bytes` (rounded), charging or returning the difference. False (the
  // growth is refused, and counted): the reservation is unchanged.
  bool Resize(const Attribution& at, uint64_t bytes, Reservation* reservation);
  void Rollback(const Reservation& reservation);
  // Grows `reservation` (empty, or on at's device) by `bytes`, the total rounded to the
  // granularity, whatever the cap: for memory the driver placed and cannot take back.
  // *over_cap: the cap was passed (counted as a refusal). False: the device is unknown or
  // outside the slice; nothing changed.
  bool GrowOverCap(const Attribution& at, uint64_t bytes, Reservation* reservation, bool* over_cap);
  // Whether key has an entry (a lock-free table probe).
  bool Holds(PointerKind kind, uint64_t key) const {
    PointerEntry entry;
    return table_->Find(kind, key, &entry);
  }
  // Remembers key -> charge. False when the table cannot (counted as a fail-closed refusal):
  // the caller undoes and rolls back.
  bool Record(PointerKind kind, uint64_t key, const Attribution& at, const Reservation& reservation);

  // allocate(uint64_t* key) -> CUresult calls the driver; undo(uint64_t key) frees what it
  // allocated (and clears the caller's output) when the charge cannot be recorded.
  template <typename Allocate, typename Undo>
  CUresult Charged(PointerKind kind, const Attribution& at, uint64_t bytes, Allocate&& allocate, Undo&& undo);

  // free_call() -> CUresult calls the driver.
  template <typename Free>
  CUresult Freed(PointerKind kind, uint64_t key, Free&& free_call);

  // Takes key's entry out of the table (false: there is none), for a caller that replaces it.
  bool Claim(PointerKind kind, uint64_t key, ClaimedEntry* claimed) {
    claimed->kind = kind;
    claimed->key = key;
    return table_->Erase(kind, key, &claimed->entry);
  }

  // Context teardown: claims every entry the context owns (before the driver destroys it, as a
  // free does), then Settle credits them all if the driver succeeded or restores them if not.
  std::vector<ClaimedEntry> ClaimOwnedBy(CUcontext ctx);
  void Settle(const std::vector<ClaimedEntry>& claimed, bool driver_freed);

  // Credits a charge that is not in the table (context overhead).
  void Release(int slice_device, uint64_t bytes);

  DeviceMap& devices() { return *devices_; }
  slice::Ledger& ledger() { return *ledger_; }

 private:
  void Settle(const ClaimedEntry& claimed, bool driver_freed);
  // Count a refusal in the ledger and return false, for `return RefusedOverCap();`.
  bool RefusedOverCap();
  bool RefusedFailClosed();

  slice::Ledger* ledger_;
  DeviceMap* devices_;
  PointerTable* table_;
  const RealCalls* calls_;
};

template <typename Allocate, typename Undo>
CUresult MemoryAccounting::Charged(PointerKind kind, const Attribution& at, uint64_t bytes,
                                   Allocate&& allocate, Undo&& undo) {
  Reservation reservation;
  if (!Reserve(at, bytes, &reservation)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t key = 0;
  const CUresult rc = allocate(&key);
  if (rc != CUDA_SUCCESS) {
    Rollback(reservation);
    return rc;
  }
  if (!Record(kind, key, at, reservation)) {
    undo(key);
    Rollback(reservation);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

template <typename Free>
CUresult MemoryAccounting::Freed(PointerKind kind, uint64_t key, Free&& free_call) {
  ClaimedEntry claimed{kind, key, {}};
  if (!table_->Erase(kind, key, &claimed.entry)) return free_call();
  const CUresult rc = free_call();
  Settle(claimed, rc == CUDA_SUCCESS);
  return rc;
}

}  // namespace fgpu::hook
