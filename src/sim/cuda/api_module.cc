// Modules, libraries and functions. PTX images are parsed (ptx_image.h) for their `.entry`
// names, so that looking up a missing kernel fails as on a real driver, their parameter layout
// and their module-scope variables (placed in device memory, module_globals.h); binary images
// (cubin, fatbin) are accepted without inspection and any name resolves (so enumerating one
// lists only the functions looked up so far).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/launch.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/module.h"
#include "sim/cuda/module_globals.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Function;
using fgpu::sim::cuda::Guarded;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::Module;
using fgpu::sim::cuda::Runtime;

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;
constexpr int kMaxDynamicSharedOptin = 227 * 1024;
constexpr size_t kMaxPtxBytes = 64u << 20;

bool IsBinaryImage(const void* image) {
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof(magic));
  return std::memcmp(image, "\x7f" "ELF", 4) == 0 || magic == kFatbinMagic || magic == kFatbinWrapperMagic;
}

CUresult BuildModule(const void* image, Context* ctx, Module** out) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto module = std::make_unique<Module>();
  module->ctx = ctx;
  if (IsBinaryImage(image)) {
    module->opaque = true;
  } else {
    const auto* text = static_cast<const char*>(image);
    const std::string_view ptx(text, strnlen(text, kMaxPtxBytes));
    if (ptx.find(".version") == std::string_view::npos || ptx.find(".target") == std::string_view::npos) {
      return CUDA_ERROR_INVALID_PTX;
    }
    module->ptx = fgpu::sim::cuda::ParsePtx(ptx);
    for (const auto& entry : module->ptx.entries) module->entries.push_back(entry.name);
  }
  module->library = ctx == nullptr;
  // A module's variables take device memory when it loads; a library's when a context first uses it.
  if (ctx != nullptr) {
    if (CUresult rc = fgpu::sim::cuda::PlaceModuleGlobals(*module, ctx); rc != CUDA_SUCCESS) return rc;
  }
  HandleRegistry::Get().Insert(module.get(), Kind::kModule);
  *out = module.release();
  return CUDA_SUCCESS;
}

CUresult LoadForCurrentContext(CUmodule* out, const void* image) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  Module* module = nullptr;
  if (CUresult rc = BuildModule(image, ctx, &module); rc != CUDA_SUCCESS) return rc;
  *out = reinterpret_cast<CUmodule>(module);
  return CUDA_SUCCESS;
}

CUresult Unload(void* handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Module* module = HandleRegistry::Get().Lookup<Module>(handle, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, function] : module->functions) HandleRegistry::Get().Erase(function.get());
  HandleRegistry::Get().Erase(module);
  fgpu::sim::cuda::ReleaseModuleGlobals(*module);
  delete module;
  return CUDA_SUCCESS;
}

CUresult GetFunction(void* module_handle, const char* name, Function** out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = HandleRegistry::Get().Lookup<Module>(module_handle, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const std::string key(name);
  if (!module->opaque && std::find(module->entries.begin(), module->entries.end(), key) == module->entries.end()) {
    return CUDA_ERROR_NOT_FOUND;
  }
  std::lock_guard lock(module->mu);
  auto& slot = module->functions[key];
  if (!slot) {
    const fgpu::sim::SimConfig& config = Runtime::Get().shared().config();
    slot = std::make_unique<Function>();
    slot->module = module;
    slot->name = key;
    auto timed = config.kernel_wave_ns.find(key);
    if (timed != config.kernel_wave_ns.end()) {
      slot->wave_ns = timed->second;
    } else if (key == fgpu::sim::cuda::kSpinKernelName) {
      slot->duration_from_param = true;
    } else {
      slot->wave_ns = config.default_kernel_wave_ns;
    }
    HandleRegistry::Get().Insert(slot.get(), Kind::kFunction);
  }
  *out = slot.get();
  return CUDA_SUCCESS;
}

CUresult LookupFunction(CUfunction handle, Function** out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Function>(handle, Kind::kFunction);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// The names cuModuleEnumerateFunctions reports: a PTX module's entries in image order; for a
// binary image, which the simulator does not read, the functions looked up so far, by name.
std::vector<std::string> FunctionNames(Module& module) {
  if (!module.opaque) return module.entries;
  std::vector<std::string> names;
  std::lock_guard lock(module.mu);
  for (const auto& [name, function] : module.functions) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) { return LoadForCurrentContext(module, image); }

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions, CUjit_option* options,
                            void** optionValues) {
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return LoadForCurrentContext(module, image);  // JIT options change nothing the simulator models
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return LoadForCurrentContext(module, fatCubin);
}

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (module == nullptr || fname == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream file(fname, std::ios::binary);
  if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (contents.size() < 4) return CUDA_ERROR_INVALID_IMAGE;
  return LoadForCurrentContext(module, contents.c_str());
}

CUresult cuModuleUnload(CUmodule hmod) { return Unload(hmod); }

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* function = nullptr;
  if (CUresult rc = GetFunction(hmod, name, &function); rc != CUDA_SUCCESS) return rc;
  *hfunc = reinterpret_cast<CUfunction>(function);
  return CUDA_SUCCESS;
}

// A PTX image's .global/.const variables, placed when it loaded; a binary image declares none
// the simulator can read. dptr and bytes are each optional, as documented.
CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = HandleRegistry::Get().Lookup<Module>(hmod, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Guarded([&] {
    if (module->library) {  // a library handle used as a module: placed in the current context
      Context* ctx = nullptr;
      if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
      if (CUresult rc = fgpu::sim::cuda::PlaceModuleGlobals(*module, ctx); rc != CUDA_SUCCESS) return rc;
    }
    return fgpu::sim::cuda::FindModuleGlobal(*module, name, false, dptr, bytes);
  });
}

// The 32-bit form can name only a variable placed below 4 GiB, which the simulator does not do.
CUresult cuModuleGetGlobal(CUdeviceptr_v1* dptr, unsigned int* bytes, CUmodule hmod, const char* name) {
  CUdeviceptr address = 0;
  size_t size = 0;
  if (CUresult rc = cuModuleGetGlobal_v2(&address, &size, hmod, name); rc != CUDA_SUCCESS) return rc;
  if (address > UINT32_MAX || size > UINT32_MAX) return CUDA_ERROR_INVALID_VALUE;
  if (dptr != nullptr) *dptr = static_cast<CUdeviceptr_v1>(address);
  if (bytes != nullptr) *bytes = static_cast<unsigned int>(size);
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* function = HandleRegistry::Get().Lookup<Function>(hfunc, Kind::kFunction);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 70; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = function->max_dynamic_shared; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = 0; break;
    default:
      if (static_cast<int>(attrib) < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
      *pi = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Function* function = HandleRegistry::Get().Lookup<Function>(hfunc, Kind::kFunction);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > kMaxDynamicSharedOptin) return CUDA_ERROR_INVALID_VALUE;
    function->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  }
  if (static_cast<int>(attrib) < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;  // other attributes are hints with no simulated effect
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* function = HandleRegistry::Get().Lookup<Function>(hfunc, Kind::kFunction);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = function->name.c_str();
  return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* function = nullptr;
  if (CUresult rc = LookupFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
  *hmod = reinterpret_cast<CUmodule>(function->module);
  return CUDA_SUCCESS;
}

// Functions are complete once looked up: there is no lazy loading to finish.
CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* found = nullptr;
  if (CUresult rc = LookupFunction(function, &found); rc != CUDA_SUCCESS) return rc;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function) {
  Function* found = nullptr;
  return LookupFunction(function, &found);
}

// Deprecated: the bank width is fixed on Hopper, so a valid request changes nothing.
CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  Function* function = nullptr;
  if (CUresult rc = LookupFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
  int value = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&value, &config, sizeof value);
  if (value < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE || value > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Legacy launch configuration: validated against the device's block limits and kept.
CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
  Function* function = nullptr;
  if (CUresult rc = LookupFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
  if (x < 1 || y < 1 || z < 1 || x > 1024 || y > 1024 || z > 64 || x * y * z > 1024) return CUDA_ERROR_INVALID_VALUE;
  function->block_shape[0] = x;
  function->block_shape[1] = y;
  function->block_shape[2] = z;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
  Function* function = nullptr;
  if (CUresult rc = LookupFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
  if (bytes > static_cast<unsigned>(kMaxDynamicSharedOptin)) return CUDA_ERROR_INVALID_VALUE;
  function->shared_size = bytes;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = HandleRegistry::Get().Lookup<Module>(mod, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Guarded([&] {
    *count = static_cast<unsigned>(FunctionNames(*module).size());
    return CUDA_SUCCESS;
  });
}

CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmodule mod) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = HandleRegistry::Get().Lookup<Module>(mod, Kind::kModule);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Guarded([&] {
    const std::vector<std::string> names = FunctionNames(*module);
    for (size_t i = 0; i < names.size() && i < numFunctions; ++i) {
      Function* function = nullptr;
      if (CUresult rc = GetFunction(module, names[i].c_str(), &function); rc != CUDA_SUCCESS) return rc;
      functions[i] = reinterpret_cast<CUfunction>(function);
    }
    return CUDA_SUCCESS;
  });
}

// Lazy unless CUDA_MODULE_LOADING=EAGER, as the driver reads it (lazy is its default since 12.2).
// Nothing else changes: modules are complete when loaded either way.
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* setting = std::getenv("CUDA_MODULE_LOADING");
  const bool eager = setting != nullptr && std::strcmp(setting, "EAGER") == 0;
  *mode = eager ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

// Libraries are context-independent modules; their kernels are functions.
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
                           unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)libraryOptions;
  (void)libraryOptionValues;
  (void)numJitOptions;
  (void)numLibraryOptions;
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* module = nullptr;
  if (CUresult rc = BuildModule(code, nullptr, &module); rc != CUDA_SUCCESS) return rc;
  *library = reinterpret_cast<CUlibrary>(module);
  return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library) { return Unload(library); }

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  if (pKernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* function = nullptr;
  if (CUresult rc = GetFunction(library, name, &function); rc != CUDA_SUCCESS) return rc;
  *pKernel = reinterpret_cast<CUkernel>(function);
  return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!HandleRegistry::Get().Is(kernel, Kind::kFunction)) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace fgpu::sim::cuda {

CUresult ModuleBuild(const void* image, Context* ctx, Module** out) { return BuildModule(image, ctx, out); }
CUresult ModuleFunction(void* module, const char* name, Function** out) { return GetFunction(module, name, out); }
std::vector<std::string> ModuleFunctionNames(Module& module) { return FunctionNames(module); }

}  // namespace fgpu::sim::cuda
