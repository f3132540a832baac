// Exported wrappers: the calling thread's open compute batch is closed first (its marker then
// completes with the work the program waits for: compute_gate.h). And the points where the driver trims stream-ordered pools to their release
// threshold (every stream, event and context synchronisation) or on request (cuMemPoolTrimTo).
// Each forwards first, untouched, then settles the ledger to the pools' reserves
// (PoolAccounting, docs/hook-memory.md "Stream-ordered pools"). The driver's code is returned
// whatever the reconcile finds: a failed synchronisation may still have trimmed.
#include "hook/compute/compute_gate.h"
#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"
#include "hook/memory/pool_accounting.h"

namespace {

using fgpu::hook::EnforcingPoolAccounting;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::PoolAccounting;

// Every tracked pool, not only the synchronised device's: which device an event or a context
// belongs to costs driver calls too, and reconciling an untouched pool only reads its reserve.
CUresult ReconciledAfter(CUresult rc) {
  if (PoolAccounting* pools = EnforcingPoolAccounting()) pools->ReconcileAll();
  return rc;
}

}  // namespace

extern "C" {

CUresult cuStreamSynchronize(CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuStreamSynchronize);
  if (real == nullptr) return MissingRealCuda();
  fgpu::hook::CloseOpenBatch();
  return ReconciledAfter(real(hStream));
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuStreamSynchronize_ptsz);
  if (real == nullptr) return MissingRealCuda();
  fgpu::hook::CloseOpenBatch();
  return ReconciledAfter(real(hStream));
}

CUresult cuEventSynchronize(CUevent hEvent) {
  const auto real = FGPU_REAL_CUDA(cuEventSynchronize);
  if (real == nullptr) return MissingRealCuda();
  return ReconciledAfter(real(hEvent));
}

CUresult cuCtxSynchronize() {
  const auto real = FGPU_REAL_CUDA(cuCtxSynchronize);
  if (real == nullptr) return MissingRealCuda();
  fgpu::hook::CloseOpenBatch();
  return ReconciledAfter(real());
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  const auto real = FGPU_REAL_CUDA(cuCtxSynchronize_v2);
  if (real == nullptr) return MissingRealCuda();
  fgpu::hook::CloseOpenBatch();
  return ReconciledAfter(real(ctx));
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  const auto real = FGPU_REAL_CUDA(cuMemPoolTrimTo);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(pool, minBytesToKeep);
  if (PoolAccounting* pools = rc == CUDA_SUCCESS ? EnforcingPoolAccounting() : nullptr) pools->Reconcile(pool);
  return rc;
}

}  // extern "C"
