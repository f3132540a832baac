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
  return memory_->Freed(kind, handle, unload);
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
