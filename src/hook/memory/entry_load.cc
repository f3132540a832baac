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

// place() is a real call that may place `library` in the current context (lazy loading).
template <typename Place>
CUresult PlaceLibrary(CUlibrary library, Place&& place) {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return place();
  return hook->loads().Place(reinterpret_cast<uint64_t>(library), place);
}

// A CUkernel is placed in a context at its launch; placing it here, at the lookup (measured),
// keeps the launch path free of measurement. Both calls are what a launch would do anyway.
CUresult PlaceKernelsNow(CUlibrary library, const CUkernel* kernels, unsigned int count) {
  const auto get_module = FGPU_REAL_CUDA(cuLibraryGetModule);
  const auto get_function = FGPU_REAL_CUDA(cuKernelGetFunction);
  CUmodule module = nullptr;
  if (get_module != nullptr && get_module(&module, library) == CUDA_ERROR_OUT_OF_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY;
  for (unsigned int i = 0; get_function != nullptr && i < count; ++i) {
    CUfunction function = nullptr;
    if (get_function(&function, kernels[i]) == CUDA_ERROR_OUT_OF_MEMORY) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
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

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  const auto real = FGPU_REAL_CUDA(cuLibraryGetGlobal);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(library, [&] { return real(dptr, bytes, library, name); });
}

CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  const auto real = FGPU_REAL_CUDA(cuLibraryGetManaged);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(library, [&] { return real(dptr, bytes, library, name); });
}

CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  const auto real = FGPU_REAL_CUDA(cuLibraryGetModule);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(library, [&] { return real(pMod, library); });
}

CUresult cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library, const char* symbol) {
  const auto real = FGPU_REAL_CUDA(cuLibraryGetUnifiedFunction);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(library, [&] { return real(fptr, library, symbol); });
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  const auto real = FGPU_REAL_CUDA(cuLibraryGetKernel);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(library, [&] {
    const CUresult rc = real(pKernel, library, name);
    if (rc != CUDA_SUCCESS || EnforcingMemoryHook() == nullptr) return rc;
    return PlaceKernelsNow(library, pKernel, 1);
  });
}

CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib) {
  const auto real = FGPU_REAL_CUDA(cuLibraryEnumerateKernels);
  if (real == nullptr) return MissingRealCuda();
  return PlaceLibrary(lib, [&] {
    const CUresult rc = real(kernels, numKernels, lib);
    if (rc != CUDA_SUCCESS || EnforcingMemoryHook() == nullptr) return rc;
    // Only the entries the driver wrote: the array may be longer than the library's kernels.
    const auto count_kernels = reinterpret_cast<decltype(&::cuLibraryGetKernelCount)>(
        fgpu::hook::RealCudaByName("cuLibraryGetKernelCount"));
    unsigned int count = 0;
    if (count_kernels == nullptr || count_kernels(&count, lib) != CUDA_SUCCESS) count = 0;
    return PlaceKernelsNow(lib, kernels, count < numKernels ? count : numKernels);
  });
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  const auto real = FGPU_REAL_CUDA(cuKernelGetFunction);
  if (real == nullptr) return MissingRealCuda();
  // Not wrapped, so not in the hooked table: looked up by name (a slow path).
  const auto get_library =
      reinterpret_cast<decltype(&::cuKernelGetLibrary)>(fgpu::hook::RealCudaByName("cuKernelGetLibrary"));
  CUlibrary library = nullptr;
  if (EnforcingMemoryHook() == nullptr || get_library == nullptr || get_library(&library, kernel) != CUDA_SUCCESS) {
    return real(pFunc, kernel);  // the driver's own answer for a handle that is no kernel
  }
  return PlaceLibrary(library, [&] { return real(pFunc, kernel); });
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
