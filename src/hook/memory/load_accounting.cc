#include "hook/memory/load_accounting.h"

#include <algorithm>

#include "hook/memory/pthread_lock.h"

namespace fgpu::hook {

uint64_t ContextLimitKey(CUcontext ctx, CUlimit limit) {
  // Limits are small enumerators; a context handle is a pointer well below 2^60.
  return (reinterpret_cast<uint64_t>(ctx) << 4) | (static_cast<uint64_t>(limit) & 0xF);
}

LoadAccounting::LoadAccounting(MemoryAccounting* memory, ContextMeter* meter, ContextAccounting* contexts)
    : memory_(memory), meter_(meter), contexts_(contexts) {}

CUresult LoadAccounting::Load(PointerKind kind, FunctionRef<CUresult(uint64_t*)> load,
                              FunctionRef<void(uint64_t)> unload) {
  Attribution at;
  uint64_t handle = 0;
  if (!memory_->AttributeToCurrentContext(&at)) return load(&handle);
  PthreadLock lock(contexts_->DeviceLock(at.device));
  const ContextMeter::Baseline before = meter_->Before(at.device, at.owner);
  const CUresult rc = load(&handle);
  if (rc != CUDA_SUCCESS) return rc;
  int64_t taken = 0;
  if (!meter_->Change(before, at.device, at.owner, &taken) || taken <= 0) return CUDA_SUCCESS;
  // A library is loaded for every context, present and future: the process owns it.
  if (kind == PointerKind::kLibrary) at.owner = nullptr;
  Reservation reservation;
  if (!memory_->Reserve(at, static_cast<uint64_t>(taken), &reservation)) {
    unload(handle);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!memory_->Record(kind, handle, at, reservation)) {
    unload(handle);
    memory_->Rollback(reservation);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

CUresult LoadAccounting::Unload(PointerKind kind, uint64_t handle, FunctionRef<CUresult()> unload) {
  const CUresult rc = memory_->Freed(kind, handle, unload);
  ClaimedEntry refused;
  if (rc == CUDA_SUCCESS && kind == PointerKind::kLibrary) memory_->Claim(PointerKind::kRefusedLibrary, handle, &refused);
  return rc;
}

CUresult LoadAccounting::Place(uint64_t library, FunctionRef<CUresult()> place) {
  Attribution at;
  if (!memory_->AttributeToCurrentContext(&at)) return place();
  if (memory_->Holds(PointerKind::kRefusedLibrary, library)) return CUDA_ERROR_OUT_OF_MEMORY;
  PthreadLock lock(contexts_->DeviceLock(at.device));
  const ContextMeter::Baseline before = meter_->Before(at.device, at.owner);
  // Measured whatever the call returns: a lookup of a name the library lacks still places it.
  const CUresult rc = place();
  int64_t taken = 0;
  if (!meter_->Change(before, at.device, at.owner, &taken) || taken <= 0) return rc;
  at.owner = nullptr;  // the library's record: the process owns it, as at its load
  const CUresult charged = ChargePlacement(at, library, static_cast<uint64_t>(taken));
  return charged != CUDA_SUCCESS ? charged : rc;
}

CUresult LoadAccounting::ChargePlacement(const Attribution& at, uint64_t library, uint64_t taken) {
  ClaimedEntry old;
  Reservation reservation;
  if (memory_->Claim(PointerKind::kLibrary, library, &old)) reservation = {old.entry.device, old.entry.bytes};
  bool over_cap = false;
  if (!memory_->GrowOverCap(at, taken, &reservation, &over_cap)) {
    // The device cannot be charged at all: keep what the library had, refuse its use.
    if (reservation.bytes != 0) memory_->Record(PointerKind::kLibrary, library, at, reservation);
    over_cap = true;
  } else if (!memory_->Record(PointerKind::kLibrary, library, at, reservation)) {
    memory_->Rollback(reservation);  // a charge no unload could find: not kept (counted fail-closed)
    over_cap = true;
  }
  if (!over_cap) return CUDA_SUCCESS;
  memory_->Record(PointerKind::kRefusedLibrary, library, at, Reservation{reservation.slice_device, 0});
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult LoadAccounting::SetLimit(CUlimit limit, size_t value, FunctionRef<CUresult(size_t)> set,
                                  FunctionRef<CUresult(size_t*)> get) {
  Attribution at;
  if (!memory_->AttributeToCurrentContext(&at)) return set(value);
  PthreadLock lock(contexts_->DeviceLock(at.device));
  size_t old_value = 0;
  const bool restorable = get(&old_value) == CUDA_SUCCESS;
  const ContextMeter::Baseline before = meter_->Before(at.device, at.owner);
  const CUresult rc = set(value);
  if (rc != CUDA_SUCCESS) return rc;
  int64_t taken = 0;
  if (!meter_->Change(before, at.device, at.owner, &taken) || taken == 0) return CUDA_SUCCESS;
  const uint64_t key = ContextLimitKey(at.owner, limit);
  if (taken < 0) {
    ShrinkLimit(key, static_cast<uint64_t>(-taken));
    return CUDA_SUCCESS;
  }
  if (!GrowLimit(at, key, static_cast<uint64_t>(taken))) {
    if (restorable) set(old_value);  // the driver gives the growth back
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

bool LoadAccounting::GrowLimit(const Attribution& at, uint64_t key, uint64_t taken) {
  ClaimedEntry old;
  Reservation reservation;
  if (!memory_->Claim(PointerKind::kContextLimit, key, &old)) {
    if (!memory_->Reserve(at, taken, &reservation)) return false;
  } else {
    reservation = {old.entry.device, old.entry.bytes};
    if (!memory_->Resize(at, old.entry.bytes + taken, &reservation)) {
      memory_->Record(PointerKind::kContextLimit, key, at, reservation);  // back as it was
      return false;
    }
  }
  if (memory_->Record(PointerKind::kContextLimit, key, at, reservation)) return true;
  memory_->Rollback(reservation);
  return false;
}

void LoadAccounting::ShrinkLimit(uint64_t key, uint64_t given_back) {
  ClaimedEntry old;
  if (!memory_->Claim(PointerKind::kContextLimit, key, &old)) return;  // never charged: nothing to credit
  const uint64_t credited = std::min(given_back, old.entry.bytes);
  memory_->Release(old.entry.device, credited);
  if (credited == old.entry.bytes) return;
  Attribution at;
  at.owner = reinterpret_cast<CUcontext>(old.entry.owner);
  const Reservation rest{old.entry.device, old.entry.bytes - credited};
  if (!memory_->Record(PointerKind::kContextLimit, key, at, rest)) memory_->Rollback(rest);
}

}  // namespace fgpu::hook
