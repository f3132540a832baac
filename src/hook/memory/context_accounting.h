// ContextAccounting: charges the device memory a context takes, and credits it — with everything
// the context owned — when the driver destroys it.
//
// Contract (docs/hook-memory.md "Contexts")
// - Create (cuCtxCreate*) and RetainPrimary (the retain that makes a device's primary context
//   active) measure the new context's overhead (ContextMeter) and reserve it on the device. Over
//   the cap: the context is destroyed (released) again and CUDA_ERROR_OUT_OF_MEMORY returned.
// - Destroy (cuCtxDestroy*): a context this class charged is credited with all the allocations it
//   owned (the driver frees them); they are claimed before the driver call and restored if it
//   fails. Unknown contexts (primary ones included) are forwarded untouched.
// - ReleasePrimary: after a successful release that left the primary context inactive, credits
//   it and what it owned. ResetPrimary: claims first, credits on success.
// - CreateGreen (cuGreenCtxCreate) is measured and charged like Create; the record is keyed by
//   the green context's CUcontext (cuCtxFromGreenCtx: allocations made under it are attributed to
//   that handle). Over the cap: destroyed again with cuGreenCtxDestroy. DestroyGreen
//   (cuGreenCtxDestroy) credits it like Destroy. cuCtxDestroy of a green context's CUcontext is not
//   how the driver ends one (it is treated as a primary context): forwarded, nothing credited.
// - Context operations on one device are serialised by a per-device mutex (they are rare and the
//   measurement must not interleave); allocation paths never take it.
// - At most kMaxContexts charged contexts per process; one more is refused like an over-cap one
//   (a charge is never kept without its record).
#pragma once

#include <pthread.h>

#include <cstdint>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/interpose/function_ref.h"
#include "hook/memory/accounting.h"
#include "hook/memory/context_meter.h"

namespace fgpu::hook {

class ContextAccounting {
 public:
  static constexpr int kMaxContexts = 256;
  static constexpr int kDeviceLocks = 64;

  ContextAccounting(MemoryAccounting* memory, ContextMeter* meter, const RealCalls* calls);
  ContextAccounting(const ContextAccounting&) = delete;
  ContextAccounting& operator=(const ContextAccounting&) = delete;

  // create(out) is the real cuCtxCreate* call.
  CUresult Create(CUcontext* pctx, CUdevice device, FunctionRef<CUresult(CUcontext*)> create);
  CUresult Destroy(CUcontext ctx, FunctionRef<CUresult(CUcontext)> destroy);
  // create(out) is the real cuGreenCtxCreate call, destroy the real cuGreenCtxDestroy.
  CUresult CreateGreen(CUgreenCtx* pgreen, CUdevice device, FunctionRef<CUresult(CUgreenCtx*)> create);
  CUresult DestroyGreen(CUgreenCtx green, FunctionRef<CUresult(CUgreenCtx)> destroy);
  CUresult RetainPrimary(CUcontext* pctx, CUdevice device, FunctionRef<CUresult(CUcontext*)> retain);
  CUresult ReleasePrimary(CUdevice device, FunctionRef<CUresult(CUdevice)> release);
  CUresult ResetPrimary(CUdevice device, FunctionRef<CUresult(CUdevice)> reset);

  // The overhead charged for `ctx` and how it was found; false if this class did not charge it.
  bool Charged(CUcontext ctx, uint64_t* bytes, OverheadMethod* method) const;

  // The mutex every measured operation on `device` holds (contexts here, loads and limits in
  // LoadAccounting), so that no two measurements on one device interleave.
  pthread_mutex_t* DeviceLock(CUdevice device) {
    return &device_locks_[static_cast<unsigned>(device) % kDeviceLocks];
  }

 private:
  // How the driver ends a context: each kind is credited only by its own teardown.
  enum class Kind : uint8_t { kCreated, kPrimary, kGreen };

  struct Record {
    CUcontext ctx = nullptr;
    CUdevice device = 0;
    Kind kind = Kind::kCreated;
    Reservation charge;
    OverheadMethod method = OverheadMethod::kEstimate;
  };

  // Measures and charges a context `make` just created; on refusal `unmake` undoes it.
  CUresult Admit(CUcontext* pctx, CUdevice device, Kind kind, FunctionRef<CUresult(CUcontext*)> make,
                 FunctionRef<void(CUcontext)> unmake);
  // Claims what the taken `record`'s context owned, runs the driver's `teardown`, credits on
  // success and restores everything (record included) on failure.
  CUresult TearDown(const Record& record, FunctionRef<CUresult()> teardown);
  // Credits a destroyed context's overhead and the claimed allocations it owned.
  void Credit(const Record& record, const std::vector<ClaimedEntry>& owned);

  // Registry of charged contexts, under registry_lock_.
  bool AddRecord(const Record& record);
  bool TakeRecord(CUcontext ctx, Kind kind, Record* record);
  bool FindPrimary(CUdevice device, Record* record) const;
  CUcontext AnyContextOn(CUdevice device) const;

  MemoryAccounting* memory_;
  ContextMeter* meter_;
  const RealCalls* calls_;
  mutable pthread_mutex_t registry_lock_;
  Record records_[kMaxContexts];
  pthread_mutex_t device_locks_[kDeviceLocks];
};

}  // namespace fgpu::hook
