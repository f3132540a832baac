// Exported wrappers: CUDA arrays and mipmapped arrays. The driver does not say what an array
// costs, so the charge is computed from the descriptor (hook/memory/array_bytes.h) and rounded to
// the device granularity like every other charge. A descriptor that cannot be sized is one the
// driver refuses: it is forwarded untouched.
#include "hook/interpose/exports.h"
#include "hook/memory/array_bytes.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::Attribution;
using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::PointerKind;

// create() is the real call; destroy_real(handle) undoes it if the charge cannot be recorded.
template <typename Handle, typename Create, typename Destroy>
CUresult CreateCharged(PointerKind kind, Handle* handle, uint64_t bytes, Create&& create,
                       Destroy&& destroy_real) {
  MemoryHook* hook = handle != nullptr && bytes != 0 ? EnforcingMemoryHook() : nullptr;
  Attribution at;
  if (hook == nullptr || !hook->accounting().AttributeToCurrentContext(&at)) return create();
  return hook->accounting().Charged(
      kind, at, bytes,
      [&](uint64_t* key) {
        const CUresult rc = create();
        if (rc == CUDA_SUCCESS) *key = reinterpret_cast<uint64_t>(*handle);
        return rc;
      },
      [&](uint64_t) {
        destroy_real(*handle);
        *handle = nullptr;
      });
}

template <typename Handle, typename Destroy>
CUresult DestroyCharged(PointerKind kind, Handle handle, Destroy&& destroy) {
  MemoryHook* hook = handle != nullptr ? EnforcingMemoryHook() : nullptr;
  if (hook == nullptr) return destroy();
  return hook->accounting().Freed(kind, reinterpret_cast<uint64_t>(handle), destroy);
}

}  // namespace

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  const auto real = FGPU_REAL_CUDA(cuArrayCreate_v2);
  if (real == nullptr) return MissingRealCuda();
  const uint64_t bytes =
      pAllocateArray != nullptr ? fgpu::hook::ArrayBytes(fgpu::hook::From2D(*pAllocateArray)) : 0;
  return CreateCharged(
      PointerKind::kArray, pHandle, bytes, [&] { return real(pHandle, pAllocateArray); },
      [](CUarray array) { FGPU_CALL_REAL_CUDA(cuArrayDestroy, array); });
}

CUresult cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray) {
  const auto real = FGPU_REAL_CUDA(cuArrayCreate);
  if (real == nullptr) return MissingRealCuda();
  const uint64_t bytes =
      pAllocateArray != nullptr ? fgpu::hook::ArrayBytes(fgpu::hook::From2D(*pAllocateArray)) : 0;
  return CreateCharged(
      PointerKind::kArray, pHandle, bytes, [&] { return real(pHandle, pAllocateArray); },
      [](CUarray array) { FGPU_CALL_REAL_CUDA(cuArrayDestroy, array); });
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  const auto real = FGPU_REAL_CUDA(cuArray3DCreate_v2);
  if (real == nullptr) return MissingRealCuda();
  const uint64_t bytes = pAllocateArray != nullptr ? fgpu::hook::ArrayBytes(*pAllocateArray) : 0;
  return CreateCharged(
      PointerKind::kArray, pHandle, bytes, [&] { return real(pHandle, pAllocateArray); },
      [](CUarray array) { FGPU_CALL_REAL_CUDA(cuArrayDestroy, array); });
}

CUresult cuArray3DCreate(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray) {
  const auto real = FGPU_REAL_CUDA(cuArray3DCreate);
  if (real == nullptr) return MissingRealCuda();
  const uint64_t bytes =
      pAllocateArray != nullptr ? fgpu::hook::ArrayBytes(fgpu::hook::From3D(*pAllocateArray)) : 0;
  return CreateCharged(
      PointerKind::kArray, pHandle, bytes, [&] { return real(pHandle, pAllocateArray); },
      [](CUarray array) { FGPU_CALL_REAL_CUDA(cuArrayDestroy, array); });
}

CUresult cuArrayDestroy(CUarray hArray) {
  const auto real = FGPU_REAL_CUDA(cuArrayDestroy);
  if (real == nullptr) return MissingRealCuda();
  return DestroyCharged(PointerKind::kArray, hArray, [&] { return real(hArray); });
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  const auto real = FGPU_REAL_CUDA(cuMipmappedArrayCreate);
  if (real == nullptr) return MissingRealCuda();
  const uint64_t bytes = pMipmappedArrayDesc != nullptr
                             ? fgpu::hook::MipmappedArrayBytes(*pMipmappedArrayDesc, numMipmapLevels)
                             : 0;
  return CreateCharged(
      PointerKind::kMipmappedArray, pHandle, bytes,
      [&] { return real(pHandle, pMipmappedArrayDesc, numMipmapLevels); },
      [](CUmipmappedArray array) { FGPU_CALL_REAL_CUDA(cuMipmappedArrayDestroy, array); });
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  const auto real = FGPU_REAL_CUDA(cuMipmappedArrayDestroy);
  if (real == nullptr) return MissingRealCuda();
  return DestroyCharged(PointerKind::kMipmappedArray, hMipmappedArray, [&] { return real(hMipmappedArray); });
}

}  // extern "C"
