// Exported wrappers: loading code (modules, libraries) and a context's limits (stack, malloc
// heap, printf FIFO). What each takes on the device is measured and charged
// (hook/memory/load_accounting.h); unloading, lowering the limit, or destroying the context
// credits it.
#include <cstdint>

#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;
using fgpu::hook::PointerKind;

// load(CUmodule*) is one of the real cuModuleLoad* calls.
template <typename Load>
CUresult LoadModule(CUmodule* module, Load&& load) {
  MemoryHook* hook = EnforcingMemoryHook();
  // A NULL output is the driver's error to give; nothing is loaded.
  if (hook == nullptr || module == nullptr) return load(module);
  const auto unload = FGPU_REAL_CUDA(cuModuleUnload);
  return hook->loads().Load(
      PointerKind::kModule,
      [&](uint64_t* handle) {
        const CUresult rc = load(module);
        *handle = reinterpret_cast<uint64_t>(*module);
        return rc;
      },
      [&](uint64_t) {
        if (unload != nullptr) unload(*module);
        *module = nullptr;
      });
}

// load() is one of the real cuLibraryLoad* calls, writing *library.
template <typename Load>
CUresult LoadLibrary(CUlibrary* library, Load&& load) {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr || library == nullptr) return load();
  const auto unload = FGPU_REAL_CUDA(cuLibraryUnload);
  return hook->loads().Load(
      PointerKind::kLibrary,
      [&](uint64_t* handle) {
        const CUresult rc = load();
        *handle = reinterpret_cast<uint64_t>(*library);
        return rc;
      },
      [&](uint64_t) {
        if (unload != nullptr) unload(*library);
        *library = nullptr;
      });
}

}  // namespace

extern "C" {

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  const auto real = FGPU_REAL_CUDA(cuModuleLoad);
  if (real == nullptr) return MissingRealCuda();
  return LoadModule(module, [&](CUmodule* out) { return real(out, fname); });
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  const auto real = FGPU_REAL_CUDA(cuModuleLoadData);
  if (real == nullptr) return MissingRealCuda();
  return LoadModule(module, [&](CUmodule* out) { return real(out, image); });
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions, CUjit_option* options,
                            void** optionValues) {
  const auto real = FGPU_REAL_CUDA(cuModuleLoadDataEx);
  if (real == nullptr) return MissingRealCuda();
  return LoadModule(module, [&](CUmodule* out) { return real(out, image, numOptions, options, optionValues); });
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  const auto real = FGPU_REAL_CUDA(cuModuleLoadFatBinary);
  if (real == nullptr) return MissingRealCuda();
  return LoadModule(module, [&](CUmodule* out) { return real(out, fatCubin); });
}

CUresult cuModuleUnload(CUmodule hmod) {
  const auto real = FGPU_REAL_CUDA(cuModuleUnload);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(hmod);
  return hook->loads().Unload(PointerKind::kModule, reinterpret_cast<uint64_t>(hmod), [&] { return real(hmod); });
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption* libraryOptions,
                           void** libraryOptionValues, unsigned int numLibraryOptions) {
  const auto real = FGPU_REAL_CUDA(cuLibraryLoadData);
  if (real == nullptr) return MissingRealCuda();
  return LoadLibrary(library, [&] {
    return real(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues,
                numLibraryOptions);
  });
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                               void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption* libraryOptions,
                               void** libraryOptionValues, unsigned int numLibraryOptions) {
  const auto real = FGPU_REAL_CUDA(cuLibraryLoadFromFile);
  if (real == nullptr) return MissingRealCuda();
  return LoadLibrary(library, [&] {
    return real(library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                libraryOptionValues, numLibraryOptions);
  });
}

CUresult cuLibraryUnload(CUlibrary library) {
  const auto real = FGPU_REAL_CUDA(cuLibraryUnload);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(library);
  return hook->loads().Unload(PointerKind::kLibrary, reinterpret_cast<uint64_t>(library),
                              [&] { return real(library); });
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  const auto real = FGPU_REAL_CUDA(cuCtxSetLimit);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  // Not wrapped, so not in the hooked table: looked up by name (a slow path).
  const auto get = reinterpret_cast<decltype(&::cuCtxGetLimit)>(fgpu::hook::RealCudaByName("cuCtxGetLimit"));
  if (hook == nullptr || get == nullptr) return real(limit, value);
  return hook->loads().SetLimit(
      limit, value, [&](size_t v) { return real(limit, v); }, [&](size_t* v) { return get(v, limit); });
}

}  // extern "C"
