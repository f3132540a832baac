#include "hook/memory/context_accounting.h"

#include "hook/memory/pthread_lock.h"
#include "slice/slice.h"

namespace fgpu::hook {

ContextAccounting::ContextAccounting(MemoryAccounting* memory, ContextMeter* meter, const RealCalls* calls)
    : memory_(memory), meter_(meter), calls_(calls) {
  pthread_mutex_init(&registry_lock_, nullptr);
  for (pthread_mutex_t& lock : device_locks_) pthread_mutex_init(&lock, nullptr);
}

bool ContextAccounting::AddRecord(const Record& record) {
  PthreadLock lock(&registry_lock_);
  for (Record& slot : records_) {
    if (slot.ctx == nullptr) {
      slot = record;
      return true;
    }
  }
  return false;
}

bool ContextAccounting::TakeRecord(CUcontext ctx, Kind kind, Record* record) {
  if (ctx == nullptr) return false;
  PthreadLock lock(&registry_lock_);
  for (Record& slot : records_) {
    if (slot.ctx == ctx && slot.kind == kind) {
      *record = slot;
      slot = Record{};
      return true;
    }
  }
  return false;
}

bool ContextAccounting::FindPrimary(CUdevice device, Record* record) const {
  PthreadLock lock(&registry_lock_);
  for (const Record& slot : records_) {
    if (slot.ctx != nullptr && slot.kind == Kind::kPrimary && slot.device == device) {
      *record = slot;
      return true;
    }
  }
  return false;
}

CUcontext ContextAccounting::AnyContextOn(CUdevice device) const {
  PthreadLock lock(&registry_lock_);
  for (const Record& slot : records_) {
    if (slot.ctx != nullptr && slot.device == device) return slot.ctx;
  }
  return nullptr;
}

bool ContextAccounting::Charged(CUcontext ctx, uint64_t* bytes, OverheadMethod* method) const {
  PthreadLock lock(&registry_lock_);
  for (const Record& slot : records_) {
    if (slot.ctx != nullptr && slot.ctx == ctx) {
      *bytes = slot.charge.bytes;
      *method = slot.method;
      return true;
    }
  }
  return false;
}

CUresult ContextAccounting::Admit(CUcontext* pctx, CUdevice device, Kind kind,
                                  FunctionRef<CUresult(CUcontext*)> make,
                                  FunctionRef<void(CUcontext)> unmake) {
  const ContextMeter::Baseline before = meter_->Before(device, AnyContextOn(device));
  const CUresult rc = make(pctx);
  if (rc != CUDA_SUCCESS) return rc;
  const CUcontext ctx = *pctx;
  const OverheadMeasurement measured = meter_->After(before, device, ctx);
  Record record;
  record.ctx = ctx;
  record.device = device;
  record.kind = kind;
  record.method = measured.method;
  if (!memory_->Reserve(Attribution{device, nullptr}, measured.bytes, &record.charge)) {
    unmake(ctx);
    *pctx = nullptr;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!AddRecord(record)) {
    // kMaxContexts charged contexts already: a charge without its record could never be
    // credited, so the context is refused (fail closed).
    memory_->ledger().CountFailClosedRefusal();
    memory_->Rollback(record.charge);
    unmake(ctx);
    *pctx = nullptr;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

void ContextAccounting::Credit(const Record& record, const std::vector<ClaimedEntry>& owned) {
  memory_->Settle(owned, /*driver_freed=*/true);
  memory_->Rollback(record.charge);
}

CUresult ContextAccounting::Create(CUcontext* pctx, CUdevice device,
                                   FunctionRef<CUresult(CUcontext*)> create) {
  if (pctx == nullptr) return create(pctx);
  PthreadLock lock(DeviceLock(device));
  return Admit(pctx, device, Kind::kCreated, create, [this](CUcontext ctx) {
    if (calls_->ctx_destroy != nullptr) calls_->ctx_destroy(ctx);
  });
}

CUresult ContextAccounting::TearDown(const Record& record, FunctionRef<CUresult()> teardown) {
  PthreadLock lock(DeviceLock(record.device));
  const std::vector<ClaimedEntry> owned = memory_->ClaimOwnedBy(record.ctx);
  const CUresult rc = teardown();
  if (rc == CUDA_SUCCESS) {
    Credit(record, owned);
  } else {
    memory_->Settle(owned, /*driver_freed=*/false);
    AddRecord(record);
  }
  return rc;
}

CUresult ContextAccounting::Destroy(CUcontext ctx, FunctionRef<CUresult(CUcontext)> destroy) {
  Record record;
  // Primary contexts are released, not destroyed, and green ones end with cuGreenCtxDestroy (their
  // CUcontext counts as a primary context): the driver refuses or leaves the green context to its
  // own teardown; nothing is credited here.
  if (!TakeRecord(ctx, Kind::kCreated, &record)) return destroy(ctx);
  return TearDown(record, [&] { return destroy(ctx); });
}

CUresult ContextAccounting::CreateGreen(CUgreenCtx* pgreen, CUdevice device,
                                        FunctionRef<CUresult(CUgreenCtx*)> create) {
  if (pgreen == nullptr) return create(pgreen);
  // Both came with green contexts (CUDA 12.4): without them the charge could neither be keyed to
  // the allocations made under the context nor undone over the cap.
  if (calls_->ctx_from_green_ctx == nullptr || calls_->green_ctx_destroy == nullptr) {
    memory_->ledger().CountFailClosedRefusal();
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  PthreadLock lock(DeviceLock(device));
  auto undo = [&] {
    calls_->green_ctx_destroy(*pgreen);
    *pgreen = nullptr;
  };
  auto make = [&](CUcontext* out) {
    const CUresult rc = create(pgreen);
    if (rc != CUDA_SUCCESS) return rc;
    const CUresult converted = calls_->ctx_from_green_ctx(out, *pgreen);
    if (converted != CUDA_SUCCESS) undo();
    return converted;
  };
  CUcontext ctx = nullptr;
  return Admit(&ctx, device, Kind::kGreen, make, [&](CUcontext) { undo(); });
}

CUresult ContextAccounting::DestroyGreen(CUgreenCtx green, FunctionRef<CUresult(CUgreenCtx)> destroy) {
  CUcontext ctx = nullptr;
  Record record;
  if (green == nullptr || calls_->ctx_from_green_ctx == nullptr ||
      calls_->ctx_from_green_ctx(&ctx, green) != CUDA_SUCCESS || !TakeRecord(ctx, Kind::kGreen, &record)) {
    return destroy(green);
  }
  return TearDown(record, [&] { return destroy(green); });
}

CUresult ContextAccounting::RetainPrimary(CUcontext* pctx, CUdevice device,
                                          FunctionRef<CUresult(CUcontext*)> retain) {
  if (pctx == nullptr || calls_->primary_ctx_get_state == nullptr) return retain(pctx);
  PthreadLock lock(DeviceLock(device));
  unsigned int flags = 0;
  int active = 0;
  // Already active: its overhead was charged when it became so. Invalid device: the driver says.
  if (calls_->primary_ctx_get_state(device, &flags, &active) != CUDA_SUCCESS || active != 0)
    return retain(pctx);
  return Admit(pctx, device, Kind::kPrimary, retain, [this, device](CUcontext) {
    if (calls_->primary_ctx_release != nullptr) calls_->primary_ctx_release(device);
  });
}

CUresult ContextAccounting::ReleasePrimary(CUdevice device, FunctionRef<CUresult(CUdevice)> release) {
  if (calls_->primary_ctx_get_state == nullptr) return release(device);
  PthreadLock lock(DeviceLock(device));
  const CUresult rc = release(device);
  if (rc != CUDA_SUCCESS) return rc;
  unsigned int flags = 0;
  int active = 1;
  if (calls_->primary_ctx_get_state(device, &flags, &active) != CUDA_SUCCESS || active != 0) return rc;
  // The last release destroyed it (and the allocations it owned). Claimed after the fact: before
  // the call nobody knows whether this release is the last.
  Record record;
  if (FindPrimary(device, &record) && TakeRecord(record.ctx, Kind::kPrimary, &record)) {
    Credit(record, memory_->ClaimOwnedBy(record.ctx));
  }
  return rc;
}

CUresult ContextAccounting::ResetPrimary(CUdevice device, FunctionRef<CUresult(CUdevice)> reset) {
  PthreadLock lock(DeviceLock(device));
  Record record;
  if (!FindPrimary(device, &record)) return reset(device);
  const std::vector<ClaimedEntry> owned = memory_->ClaimOwnedBy(record.ctx);
  const CUresult rc = reset(device);
  if (rc != CUDA_SUCCESS) {
    memory_->Settle(owned, /*driver_freed=*/false);
    return rc;
  }
  memory_->Settle(owned, /*driver_freed=*/true);
  // A driver that keeps the reset context active (still retained) will rebuild it in place:
  // its overhead stays charged until the release that makes it inactive.
  unsigned int flags = 0;
  int active = 0;
  if (calls_->primary_ctx_get_state != nullptr &&
      calls_->primary_ctx_get_state(device, &flags, &active) == CUDA_SUCCESS && active != 0) {
    return rc;
  }
  if (TakeRecord(record.ctx, Kind::kPrimary, &record)) memory_->Rollback(record.charge);
  return rc;
}

}  // namespace fgpu::hook
