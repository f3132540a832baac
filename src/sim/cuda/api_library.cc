// Libraries and their kernels beyond loading (api_module.cc): variables, modules, kernel
// enumeration and attributes, parameter layouts, unified functions; and a module's texture and
// surface references. A library is a module no context owns (Module::library); its kernels are
// its functions; its variables are placed in device memory when a context first asks for them
// (module_globals.h).
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/module.h"
#include "sim/cuda/module_globals.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

CUresult LookupLibrary(CUlibrary handle, Module** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Module>(handle, Kind::kModule);
  return *out != nullptr && (*out)->library ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult LookupKernel(CUkernel handle, Function** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Function>(handle, Kind::kFunction);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// A library's variables, placed in the current context on first use.
CUresult LibraryVariable(CUdeviceptr* dptr, size_t* bytes, CUlibrary handle, const char* name, bool managed) {
  Module* library = nullptr;
  if (CUresult rc = LookupLibrary(handle, &library); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = PlaceModuleGlobals(*library, ctx); rc != CUDA_SUCCESS) return rc;
  return FindModuleGlobal(*library, name, managed, dptr, bytes);
}

// The layout of the kernel's parameter buffer, from its PTX `.entry` declaration.
CUresult ParamInfo(Function* function, size_t index, size_t* offset, size_t* size) {
  if (offset == nullptr) return CUDA_ERROR_INVALID_VALUE;  // size is optional, as documented
  const Module& module = *function->module;
  if (module.opaque) return CUDA_ERROR_NOT_SUPPORTED;  // a binary image the simulator does not read
  for (const PtxEntry& entry : module.ptx.entries) {
    if (entry.name != function->name) continue;
    if (index >= entry.params.size()) return CUDA_ERROR_INVALID_VALUE;
    *offset = entry.params[index].offset;
    if (size != nullptr) *size = entry.params[index].size;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// A texture or surface reference the image declares: not simulated (deprecated since CUDA 11,
// gone from the runtime in 12); one it does not declare is not found.
CUresult Reference(const void* out, CUmodule handle, const char* name, bool texture) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = HandleRegistry::Get().Lookup<Module>(handle, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& names = texture ? module->ptx.texrefs : module->ptx.surfrefs;
  for (const std::string& declared : names) {
    if (declared == name) return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  return sim::Guarded([&] { return sim::LibraryVariable(dptr, bytes, library, name, false); });
}

CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  return sim::Guarded([&] { return sim::LibraryVariable(dptr, bytes, library, name, true); });
}

// The library's module in the current context: the same object, its variables placed there.
CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  return sim::Guarded([&] {
    sim::Module* module = nullptr;
    if (CUresult rc = sim::LookupLibrary(library, &module); rc != CUDA_SUCCESS) return rc;
    if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    sim::Context* ctx = nullptr;
    if (CUresult rc = sim::Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    if (CUresult rc = sim::PlaceModuleGlobals(*module, ctx); rc != CUDA_SUCCESS) return rc;
    *pMod = reinterpret_cast<CUmodule>(module);
    return CUDA_SUCCESS;
  });
}

CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  return sim::Guarded([&] {
    sim::Module* module = nullptr;
    if (CUresult rc = sim::LookupLibrary(lib, &module); rc != CUDA_SUCCESS) return rc;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = static_cast<unsigned>(sim::ModuleFunctionNames(*module).size());
    return CUDA_SUCCESS;
  });
}

CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib) {
  return sim::Guarded([&] {
    sim::Module* module = nullptr;
    if (CUresult rc = sim::LookupLibrary(lib, &module); rc != CUDA_SUCCESS) return rc;
    if (kernels == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::vector<std::string> names = sim::ModuleFunctionNames(*module);
    for (size_t i = 0; i < names.size() && i < numKernels; ++i) {
      sim::Function* function = nullptr;
      if (CUresult rc = sim::ModuleFunction(module, names[i].c_str(), &function); rc != CUDA_SUCCESS) return rc;
      kernels[i] = reinterpret_cast<CUkernel>(function);
    }
    return CUDA_SUCCESS;
  });
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                               void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption* libraryOptions,
                               void** libraryOptionValues, unsigned int numLibraryOptions) {
  return sim::Guarded([&] {
    if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
    if (library == nullptr || fileName == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::ifstream file(fileName, std::ios::binary);
    if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
    const std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (contents.size() < 4) return CUDA_ERROR_INVALID_IMAGE;
    return cuLibraryLoadData(library, contents.c_str(), jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                             libraryOptionValues, numLibraryOptions);
  });
}

// Unified functions live in binaries built for them, which the simulator does not read.
CUresult cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library, const char* symbol) {
  return sim::Guarded([&] {
    sim::Module* module = nullptr;
    if (CUresult rc = sim::LookupLibrary(library, &module); rc != CUDA_SUCCESS) return rc;
    if (fptr == nullptr || symbol == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_FOUND;
  });
}

// A kernel's attributes are its function's, on any device of the process.
CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return cuFuncGetAttribute(pi, attrib, reinterpret_cast<CUfunction>(kernel));
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(kernel), attrib, val);
}

CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return cuFuncSetCacheConfig(reinterpret_cast<CUfunction>(kernel), config);
}

CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(hfunc));
}

CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  sim::Function* function = nullptr;
  if (CUresult rc = sim::LookupKernel(kernel, &function); rc != CUDA_SUCCESS) return rc;
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!function->module->library) return CUDA_ERROR_INVALID_HANDLE;  // a module's function, not a kernel
  *pLib = reinterpret_cast<CUlibrary>(function->module);
  return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  sim::Function* function = nullptr;
  if (CUresult rc = sim::LookupKernel(kernel, &function); rc != CUDA_SUCCESS) return rc;
  return sim::ParamInfo(function, paramIndex, paramOffset, paramSize);
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  sim::Function* function = nullptr;
  if (CUresult rc = sim::LookupKernel(reinterpret_cast<CUkernel>(func), &function); rc != CUDA_SUCCESS) return rc;
  return sim::ParamInfo(function, paramIndex, paramOffset, paramSize);
}

CUresult cuModuleGetTexRef(CUtexref* pTexRef, CUmodule hmod, const char* name) {
  return sim::Guarded([&] { return sim::Reference(pTexRef, hmod, name, true); });
}

CUresult cuModuleGetSurfRef(CUsurfref* pSurfRef, CUmodule hmod, const char* name) {
  return sim::Guarded([&] { return sim::Reference(pSurfRef, hmod, name, false); });
}

}  // extern "C"
