#include "hook/memory/accounting.h"

#include "hook/memory/saturating.h"
#include "slice/slice.h"

namespace fgpu::hook {
bool MemoryAccounting::AttributeToCurrentContext(Attribution* at) const {
  if (calls_->ctx_get_current == nullptr || calls_->ctx_get_device == nullptr) return false;
  CUcontext ctx = nullptr;
  if (calls_->ctx_get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr) return false;
  CUdevice device = 0;
  if (calls_->ctx_get_device(&device) != CUDA_SUCCESS) return false;
  at->device = device;
  at->owner = ctx;
  return true;
}

bool MemoryAccounting::AttributeToStream(CUstream stream, bool per_thread_default, Attribution* at) const {
  auto stream_get_ctx = per_thread_default && calls_->stream_get_ctx_ptsz != nullptr
                            ? calls_->stream_get_ctx_ptsz
                            : calls_->stream_get_ctx;
  if (stream_get_ctx == nullptr) return AttributeToCurrentContext(at);  // cannot ask: the usual answer
  CUcontext ctx = nullptr;
  // An invalid stream: forwarded, the driver reports it.
  if (stream_get_ctx(stream, &ctx) != CUDA_SUCCESS || ctx == nullptr) return false;
  CUdevice device = 0;
  if (calls_->ctx_get_device_of != nullptr) {
    if (calls_->ctx_get_device_of(&device, ctx) != CUDA_SUCCESS) return false;
  } else {
    // Drivers before CUDA 13 cannot name another context's device: the stream's context is
    // almost always the current one; when it is not we still charge the current device.
    if (calls_->ctx_get_device == nullptr || calls_->ctx_get_device(&device) != CUDA_SUCCESS) return false;
  }
  at->device = device;
  at->owner = ctx;
  return true;
}

bool MemoryAccounting::AttributeToLocation(const CUmemLocation& location, Attribution* at) const {
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) return false;  // host memory is not device memory
  at->device = location.id;
  at->owner = nullptr;
  // VMM handles made while a context is current die with it (docs/sim-memory.md "Contexts").
  CUcontext ctx = nullptr;
  if (calls_->ctx_get_current != nullptr && calls_->ctx_get_current(&ctx) == CUDA_SUCCESS) at->owner = ctx;
  return true;
}

bool MemoryAccounting::RefusedOverCap() {
  ledger_->CountOomRefusal();
  return false;
}

bool MemoryAccounting::RefusedFailClosed() {
  ledger_->CountFailClosedRefusal();
  return false;
}

bool MemoryAccounting::Reserve(const Attribution& at, uint64_t bytes, Reservation* reservation) {
  CudaDeviceFacts facts;
  if (!devices_->Cuda(at.device, &facts)) return RefusedFailClosed();  // which GPU it is is unknown
  if (facts.slice_device == kNotInSlice) return RefusedOverCap();     // a cap of 0
  const uint64_t charged = RoundUpToGranule(bytes, facts.granularity);
  if (!ledger_->Reserve(facts.slice_device, charged)) return RefusedOverCap();
  reservation->slice_device = facts.slice_device;
  reservation->bytes = charged;
  return true;
}

bool MemoryAccounting::Resize(const Attribution& at, uint64_t bytes, Reservation* reservation) {
  CudaDeviceFacts facts;
  if (!devices_->Cuda(at.device, &facts) || facts.slice_device != reservation->slice_device) {
    return RefusedFailClosed();  // the device cannot be identified as the one reserved on
  }
  const uint64_t charged = RoundUpToGranule(bytes, facts.granularity);
  if (charged > reservation->bytes) {
    if (!ledger_->Reserve(reservation->slice_device, charged - reservation->bytes)) return RefusedOverCap();
  } else if (charged < reservation->bytes) {
    ledger_->Release(reservation->slice_device, reservation->bytes - charged);
  }
  reservation->bytes = charged;
  return true;
}

bool MemoryAccounting::GrowOverCap(const Attribution& at, uint64_t bytes, Reservation* reservation,
                                   bool* over_cap) {
  *over_cap = false;
  CudaDeviceFacts facts;
  if (!devices_->Cuda(at.device, &facts)) return RefusedFailClosed();
  if (facts.slice_device == kNotInSlice) return RefusedOverCap();
  if (reservation->bytes != 0 && reservation->slice_device != facts.slice_device) return RefusedFailClosed();
  const uint64_t total = RoundUpToGranule(reservation->bytes + bytes, facts.granularity);
  const uint64_t more = total - reservation->bytes;
  if (!ledger_->Reserve(facts.slice_device, more)) {
    if (!ledger_->ReserveOverCap(facts.slice_device, more)) return RefusedFailClosed();
    *over_cap = true;
    ledger_->CountOomRefusal();
  }
  reservation->slice_device = facts.slice_device;
  reservation->bytes = total;
  return true;
}

void MemoryAccounting::Rollback(const Reservation& reservation) {
  Release(reservation.slice_device, reservation.bytes);
}

void MemoryAccounting::Release(int slice_device, uint64_t bytes) {
  if (slice_device != kNotInSlice && bytes != 0) ledger_->Release(slice_device, bytes);
}

bool MemoryAccounting::Record(PointerKind kind, uint64_t key, const Attribution& at,
                              const Reservation& reservation) {
  PointerEntry entry;
  entry.device = reservation.slice_device;
  entry.bytes = reservation.bytes;
  entry.owner = reinterpret_cast<uint64_t>(at.owner);
  // A charge the table cannot keep could never be credited: the allocation is refused.
  return table_->Insert(kind, key, entry) || RefusedFailClosed();
}

void MemoryAccounting::Settle(const ClaimedEntry& claimed, bool driver_freed) {
  if (driver_freed) {
    Release(claimed.entry.device, claimed.entry.bytes);
  } else if (!table_->Insert(claimed.kind, claimed.key, claimed.entry)) {
    // Still allocated but no longer findable: keep the charge (fail closed); the slice reclaims
    // it when this process exits.
  }
}

std::vector<ClaimedEntry> MemoryAccounting::ClaimOwnedBy(CUcontext ctx) {
  std::vector<ClaimedEntry> claimed;
  table_->EraseOwnedBy(reinterpret_cast<uint64_t>(ctx),
                       [&](PointerKind kind, uint64_t key, const PointerEntry& entry) {
                         try {
                           claimed.push_back({kind, key, entry});
                         } catch (...) {
                           // Out of host memory: leave this entry in the table. If the context goes, its
                           // charge stays until the process exits (over-counted, never under-counted).
                           Settle(ClaimedEntry{kind, key, entry}, /*driver_freed=*/false);
                         }
                       });
  return claimed;
}

void MemoryAccounting::Settle(const std::vector<ClaimedEntry>& claimed, bool driver_freed) {
  for (const ClaimedEntry& entry : claimed) Settle(entry, driver_freed);
}

}  // namespace fgpu::hook
