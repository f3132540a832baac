// Exported wrappers: external memory. An import maps memory another API holds (Vulkan, say): the
// interposer sees no allocation for it, so the import is where its slice pays — `size`, at
// import, on the current context's device, credited by cuDestroyExternalMemory. A buffer mapped
// from it (cuExternalMemoryGetMappedBuffer) is part of that charge.
#include <cstdint>

#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::Attribution;
using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::PointerKind;

}  // namespace

extern "C" {

CUresult cuImportExternalMemory(CUexternalMemory* extMem_out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* memHandleDesc) {
  const auto real = FGPU_REAL_CUDA(cuImportExternalMemory);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  Attribution at;
  // What the driver refuses before importing (NULL arguments, size 0) is its own to answer.
  if (hook == nullptr || extMem_out == nullptr || memHandleDesc == nullptr || memHandleDesc->size == 0 ||
      !hook->accounting().AttributeToCurrentContext(&at)) {
    return real(extMem_out, memHandleDesc);
  }
  at.owner = nullptr;  // lives until cuDestroyExternalMemory, not with a context
  const auto destroy = FGPU_REAL_CUDA(cuDestroyExternalMemory);
  return hook->accounting().Charged(
      PointerKind::kExternalMemory, at, memHandleDesc->size,
      [&](uint64_t* key) {
        const CUresult rc = real(extMem_out, memHandleDesc);
        *key = reinterpret_cast<uint64_t>(*extMem_out);
        return rc;
      },
      [&](uint64_t) {
        if (destroy != nullptr) destroy(*extMem_out);
        *extMem_out = nullptr;
      });
}

CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  const auto real = FGPU_REAL_CUDA(cuDestroyExternalMemory);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(extMem);
  return hook->accounting().Freed(PointerKind::kExternalMemory, reinterpret_cast<uint64_t>(extMem),
                                  [&] { return real(extMem); });
}

}  // extern "C"
