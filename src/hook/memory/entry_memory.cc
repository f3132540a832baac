// Exported wrappers: linear device memory, VMM handles and stream-ordered allocation.
//
// Each allocation wrapper forwards untouched when the hook does not enforce, when the call is
// one the driver refuses before allocating (NULL output, zero size) or when it cannot be
// attributed to a device (no current context, a host location); otherwise it runs the
// reserve -> real call -> record protocol of MemoryAccounting::Charged. Each free claims its
// entry, frees, and releases the charge on success (MemoryAccounting::Freed). The charge of
// every path is in docs/hook-memory.md.
#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"
#include "hook/memory/pool_accounting.h"
#include "hook/memory/saturating.h"

namespace {

using fgpu::hook::Attribution;
using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::PointerKind;
using fgpu::hook::SaturatingMultiply;
using fgpu::hook::Reservation;

constexpr uint64_t kPitchAlignment = 512;  // what the drivers align pitches to (docs/sim-memory.md)

// The hook, if the call is to be charged on the current context's device.
MemoryHook* ChargeOnCurrentContext(bool arguments_valid, Attribution* at) {
  MemoryHook* hook = arguments_valid ? EnforcingMemoryHook() : nullptr;
  return hook != nullptr && hook->accounting().AttributeToCurrentContext(at) ? hook : nullptr;
}

MemoryHook* ChargeOnStream(bool arguments_valid, CUstream stream, bool per_thread, Attribution* at) {
  MemoryHook* hook = arguments_valid ? EnforcingMemoryHook() : nullptr;
  return hook != nullptr && hook->accounting().AttributeToStream(stream, per_thread, at) ? hook : nullptr;
}

// cuMemFree* / cuMemFreeAsync*: claim, free, settle. free_call() is the real free.
template <typename Free>
CUresult FreeDevicePointer(uint64_t ptr, Free&& free_call) {
  MemoryHook* hook = ptr != 0 ? EnforcingMemoryHook() : nullptr;
  if (hook == nullptr) return free_call();
  return hook->accounting().Freed(PointerKind::kDevicePointer, ptr, free_call);
}

// Pitched allocations: reserve width rounded to the pitch alignment x height, call, then charge
// what the driver chose (*pitch x height), undoing the allocation if that growth is refused.
template <typename Pointer, typename Pitch, typename Allocate, typename Free>
CUresult AllocatePitched(Pointer* dptr, Pitch* pitch, uint64_t width, uint64_t height, Allocate&& allocate,
                         Free&& free_real) {
  Attribution at;
  MemoryHook* hook =
      ChargeOnCurrentContext(dptr != nullptr && pitch != nullptr && width != 0 && height != 0, &at);
  if (hook == nullptr) return allocate();
  const uint64_t aligned_width = width > UINT64_MAX - kPitchAlignment
                                     ? UINT64_MAX
                                     : (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  Reservation reservation;
  if (!hook->accounting().Reserve(at, SaturatingMultiply(aligned_width, height), &reservation)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult rc = allocate();
  if (rc != CUDA_SUCCESS) {
    hook->accounting().Rollback(reservation);
    return rc;
  }
  const uint64_t key = *dptr;
  if (!hook->accounting().Resize(at, SaturatingMultiply(*pitch, height), &reservation) ||
      !hook->accounting().Record(PointerKind::kDevicePointer, key, at, reservation)) {
    free_real(*dptr);
    *dptr = 0;
    hook->accounting().Rollback(reservation);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  const auto real = FGPU_REAL_CUDA(cuMemAlloc_v2);
  if (real == nullptr) return MissingRealCuda();
  Attribution at;
  MemoryHook* hook = ChargeOnCurrentContext(dptr != nullptr && bytesize != 0, &at);
  if (hook == nullptr) return real(dptr, bytesize);
  return hook->accounting().Charged(
      PointerKind::kDevicePointer, at, bytesize,
      [&](uint64_t* key) {
        const CUresult rc = real(dptr, bytesize);
        if (rc == CUDA_SUCCESS) *key = *dptr;
        return rc;
      },
      [&](uint64_t key) {
        FGPU_CALL_REAL_CUDA(cuMemFree_v2, key);
        *dptr = 0;
      });
}

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  const auto real = FGPU_REAL_CUDA(cuMemAlloc);
  if (real == nullptr) return MissingRealCuda();
  Attribution at;
  MemoryHook* hook = ChargeOnCurrentContext(dptr != nullptr && bytesize != 0, &at);
  if (hook == nullptr) return real(dptr, bytesize);
  return hook->accounting().Charged(
      PointerKind::kDevicePointer, at, bytesize,
      [&](uint64_t* key) {
        const CUresult rc = real(dptr, bytesize);
        if (rc == CUDA_SUCCESS) *key = *dptr;
        return rc;
      },
      [&](uint64_t key) {
        FGPU_CALL_REAL_CUDA(cuMemFree, static_cast<CUdeviceptr_v1>(key));
        *dptr = 0;
      });
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocPitch_v2);
  if (real == nullptr) return MissingRealCuda();
  return AllocatePitched(
      dptr, pPitch, WidthInBytes, Height,
      [&] { return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); },
      [](CUdeviceptr ptr) { FGPU_CALL_REAL_CUDA(cuMemFree_v2, ptr); });
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocPitch);
  if (real == nullptr) return MissingRealCuda();
  return AllocatePitched(
      dptr, pPitch, WidthInBytes, Height,
      [&] { return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); },
      [](CUdeviceptr_v1 ptr) { FGPU_CALL_REAL_CUDA(cuMemFree, ptr); });
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocManaged);
  if (real == nullptr) return MissingRealCuda();
  Attribution at;
  MemoryHook* hook = ChargeOnCurrentContext(dptr != nullptr && bytesize != 0, &at);
  if (hook == nullptr) return real(dptr, bytesize, flags);
  return hook->accounting().Charged(
      PointerKind::kDevicePointer, at, bytesize,
      [&](uint64_t* key) {
        const CUresult rc = real(dptr, bytesize, flags);
        if (rc == CUDA_SUCCESS) *key = *dptr;
        return rc;
      },
      [&](uint64_t key) {
        FGPU_CALL_REAL_CUDA(cuMemFree_v2, key);
        *dptr = 0;
      });
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  const auto real = FGPU_REAL_CUDA(cuMemFree_v2);
  if (real == nullptr) return MissingRealCuda();
  return FreeDevicePointer(dptr, [&] { return real(dptr); });
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  const auto real = FGPU_REAL_CUDA(cuMemFree);
  if (real == nullptr) return MissingRealCuda();
  return FreeDevicePointer(dptr, [&] { return real(dptr); });
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  const auto real = FGPU_REAL_CUDA(cuMemCreate);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = handle != nullptr && prop != nullptr && size != 0 ? EnforcingMemoryHook() : nullptr;
  Attribution at;
  if (hook == nullptr || !hook->accounting().AttributeToLocation(prop->location, &at)) {
    return real(handle, size, prop, flags);
  }
  return hook->accounting().Charged(
      PointerKind::kVmmHandle, at, size,
      [&](uint64_t* key) {
        const CUresult rc = real(handle, size, prop, flags);
        if (rc == CUDA_SUCCESS) *key = *handle;
        return rc;
      },
      [&](uint64_t key) {
        FGPU_CALL_REAL_CUDA(cuMemRelease, key);
        *handle = 0;
      });
}

// Credited at release although the memory lives on until its last mapping goes
// (docs/hook-memory.md "VMM").
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const auto real = FGPU_REAL_CUDA(cuMemRelease);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(handle);
  return hook->accounting().Freed(PointerKind::kVmmHandle, handle, [&] { return real(handle); });
}

}  // extern "C"

namespace {

using fgpu::hook::EnforcingPoolAccounting;
using fgpu::hook::PoolAccounting;
using fgpu::hook::PoolSlot;

// Whether `stream` is being captured, as the real cuStreamIsCapturing[_ptsz] says. On a
// capturing stream the stream-ordered allocator allocates and frees nothing: the driver turns
// the calls into the graph's allocation and free nodes, which the graph accounting charges when
// an executable graph of it first runs (docs/hook-memory.md "Graph memory"). If the driver
// cannot say, the call is treated as an ordinary one (charged: over, never under).
bool Capturing(CUstream stream, bool per_thread) {
  using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
  static const auto plain = reinterpret_cast<IsCapturing>(fgpu::hook::RealCudaByName("cuStreamIsCapturing"));
  static const auto ptsz = reinterpret_cast<IsCapturing>(fgpu::hook::RealCudaByName("cuStreamIsCapturing_ptsz"));
  const IsCapturing is_capturing = per_thread ? ptsz : plain;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is_capturing != nullptr && is_capturing(stream, &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The four stream-ordered allocation entry points differ only in the real call, the pool (null:
// the device's current pool) and how a null stream is read (_ptsz: the per-thread default
// stream). What they charge is the pool's reserve (PoolAccounting, docs/hook-memory.md
// "Stream-ordered pools"), on the stream's context's device; nothing during stream capture.
// undo(ptr) frees the allocation and synchronises the stream (a refused growth).
template <typename Allocate, typename Undo>
CUresult AllocateStreamOrdered(CUdeviceptr* dptr, size_t bytesize, CUstream stream, bool per_thread,
                               CUmemoryPool pool, Allocate&& allocate, Undo&& undo) {
  Attribution at;
  MemoryHook* hook = ChargeOnStream(dptr != nullptr && bytesize != 0, stream, per_thread, &at);
  if (hook == nullptr || Capturing(stream, per_thread)) return allocate();
  PoolAccounting* pools = EnforcingPoolAccounting();
  bool untrackable = false;  // every pool slot taken: fail closed rather than allocate uncharged
  PoolSlot* slot = pools != nullptr ? pools->ForAllocation(at.device, pool, &untrackable) : nullptr;
  if (slot == nullptr && untrackable) return pools->RefusedUntracked();
  if (slot == nullptr) return allocate();  // the driver refuses the device or the pool
  return pools->Allocate(
      slot, bytesize,
      [&](uint64_t* ptr) {
        const CUresult rc = allocate();
        if (rc == CUDA_SUCCESS) *ptr = *dptr;
        return rc;
      },
      [&](uint64_t ptr) {
        undo(ptr);
        *dptr = 0;
      });
}

// A pool allocation credits nothing when freed (the pool keeps the memory); any other pointer
// (cuMemFreeAsync also takes cuMemAlloc memory on some drivers) is freed as cuMemFree* would.
// During stream capture nothing is freed (the driver makes a free node): forwarded untouched.
template <typename Free>
CUresult FreeStreamOrdered(CUdeviceptr dptr, CUstream stream, bool per_thread, Free&& free_call) {
  PoolAccounting* pools = dptr != 0 ? EnforcingPoolAccounting() : nullptr;
  if (pools != nullptr && Capturing(stream, per_thread)) return free_call();
  CUresult rc = CUDA_SUCCESS;
  if (pools != nullptr && pools->Freed(dptr, free_call, &rc)) return rc;
  return FreeDevicePointer(dptr, free_call);
}

}  // namespace

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocAsync);
  if (real == nullptr) return MissingRealCuda();
  return AllocateStreamOrdered(
      dptr, bytesize, hStream, false, nullptr, [&] { return real(dptr, bytesize, hStream); },
      [&](CUdeviceptr ptr) {
        FGPU_CALL_REAL_CUDA(cuMemFreeAsync, ptr, hStream);
        FGPU_CALL_REAL_CUDA(cuStreamSynchronize, hStream);
      });
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocAsync_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return AllocateStreamOrdered(
      dptr, bytesize, hStream, true, nullptr, [&] { return real(dptr, bytesize, hStream); },
      [&](CUdeviceptr ptr) {
        FGPU_CALL_REAL_CUDA(cuMemFreeAsync_ptsz, ptr, hStream);
        FGPU_CALL_REAL_CUDA(cuStreamSynchronize_ptsz, hStream);
      });
}

// Charged to the pool's reserve; a pool the hook has not seen created is adopted on the stream's
// device (the driver API cannot tell a pool's location).
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocFromPoolAsync);
  if (real == nullptr) return MissingRealCuda();
  return AllocateStreamOrdered(
      dptr, bytesize, hStream, false, pool, [&] { return real(dptr, bytesize, pool, hStream); },
      [&](CUdeviceptr ptr) {
        FGPU_CALL_REAL_CUDA(cuMemFreeAsync, ptr, hStream);
        FGPU_CALL_REAL_CUDA(cuStreamSynchronize, hStream);
      });
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemAllocFromPoolAsync_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return AllocateStreamOrdered(
      dptr, bytesize, hStream, true, pool, [&] { return real(dptr, bytesize, pool, hStream); },
      [&](CUdeviceptr ptr) {
        FGPU_CALL_REAL_CUDA(cuMemFreeAsync_ptsz, ptr, hStream);
        FGPU_CALL_REAL_CUDA(cuStreamSynchronize_ptsz, hStream);
      });
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemFreeAsync);
  if (real == nullptr) return MissingRealCuda();
  return FreeStreamOrdered(dptr, hStream, false, [&] { return real(dptr, hStream); });
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuMemFreeAsync_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return FreeStreamOrdered(dptr, hStream, true, [&] { return real(dptr, hStream); });
}

// Pool lifecycle: which pools exist, where, and which one each device allocates from.
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  const auto real = FGPU_REAL_CUDA(cuMemPoolCreate);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(pool, poolProps);
  PoolAccounting* pools = rc == CUDA_SUCCESS ? EnforcingPoolAccounting() : nullptr;
  if (pools != nullptr) pools->Created(*pool, *poolProps);
  return rc;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  const auto real = FGPU_REAL_CUDA(cuMemPoolDestroy);
  if (real == nullptr) return MissingRealCuda();
  PoolAccounting* pools = EnforcingPoolAccounting();
  // Asked before: afterwards the handle is invalid.
  const bool empty = pools != nullptr && pools->DriverSaysEmpty(pool);
  const CUresult rc = real(pool);
  if (rc == CUDA_SUCCESS && pools != nullptr) pools->Destroyed(pool, empty);
  return rc;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  const auto real = FGPU_REAL_CUDA(cuDeviceSetMemPool);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(dev, pool);
  PoolAccounting* pools = rc == CUDA_SUCCESS ? EnforcingPoolAccounting() : nullptr;
  if (pools != nullptr) pools->CurrentPoolSet(dev, pool);
  return rc;
}

}  // extern "C"
