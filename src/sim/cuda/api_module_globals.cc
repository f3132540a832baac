// Module-scope variables (.global, .const) of PTX images in device memory (module_globals.h).
#include <cstring>
#include <mutex>

#include "sim/cuda/memory_registry.h"
#include "sim/cuda/module_globals.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

uint64_t AlignedTo(uint64_t value, uint64_t align) { return align <= 1 ? value : (value + align - 1) / align * align; }

// Removes and releases the variables placed so far (caller holds module.mu).
void UnplaceLocked(Module& module) {
  for (const uint64_t address : module.global_addresses) {
    if (address == 0) continue;
    const auto removed = MemoryRegistry::Get().Erase(
        address, [](const Allocation& a) { return a.kind == AllocKind::kModuleGlobal; });
    if (!removed) continue;  // the context's destruction released it already
    UnmapBacking(removed->base, removed->mapped_length);
    if (removed->charged != 0) Runtime::Get().Credit(removed->device, removed->charged);
  }
  module.global_addresses.clear();
  module.globals_placed = false;
}

}  // namespace

CUresult PlaceModuleGlobals(Module& module, Context* ctx) {
  std::lock_guard lock(module.mu);
  // A library's variables go with the context they were placed in; the next context places them anew.
  if (module.globals_placed && !module.global_addresses.empty() &&
      !MemoryRegistry::Get().FindBase(module.global_addresses.front())) {
    module.global_addresses.clear();
    module.globals_placed = false;
  }
  if (module.globals_placed) return CUDA_SUCCESS;
  const auto& variables = module.ptx.variables;
  if (variables.empty()) {
    module.globals_placed = true;
    return CUDA_SUCCESS;
  }
  Runtime& runtime = Runtime::Get();
  uint64_t total = 0;
  for (const PtxVariable& variable : variables) total = AlignedTo(total, variable.align) + variable.size;
  const uint64_t charge = runtime.RoundToGranularity(ctx->device, total);
  if (!runtime.Charge(ctx->device, charge)) return CUDA_ERROR_OUT_OF_MEMORY;
  bool charged = false;  // given to the first variable placed
  for (const PtxVariable& variable : variables) {
    const uint64_t base = MapBacking(variable.size);
    Allocation a;
    a.base = base;
    a.size = variable.size;
    a.mapped_length = variable.size;
    a.charged = charged ? 0 : charge;
    a.device = ctx->device;
    a.ctx = ctx;
    a.kind = AllocKind::kModuleGlobal;
    a.flags = variable.managed ? CU_MEM_ATTACH_GLOBAL : 0;
    a.buffer_id = MemoryRegistry::Get().NextBufferId();
    if (base == 0 || !MemoryRegistry::Get().Insert(a)) {
      if (base != 0) UnmapBacking(base, variable.size);
      UnplaceLocked(module);
      if (!charged) runtime.Credit(ctx->device, charge);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    charged = true;
    if (!variable.init.empty()) std::memcpy(reinterpret_cast<void*>(base), variable.init.data(), variable.init.size());
    module.global_addresses.push_back(base);
  }
  module.globals_placed = true;
  return CUDA_SUCCESS;
}

void ReleaseModuleGlobals(Module& module) {
  std::lock_guard lock(module.mu);
  UnplaceLocked(module);
}

CUresult FindModuleGlobal(Module& module, const std::string& name, bool managed, CUdeviceptr* dptr, size_t* bytes) {
  std::lock_guard lock(module.mu);
  const auto& variables = module.ptx.variables;
  for (size_t i = 0; i < variables.size() && i < module.global_addresses.size(); ++i) {
    if (variables[i].name != name || (managed && !variables[i].managed)) continue;
    if (dptr != nullptr) *dptr = module.global_addresses[i];
    if (bytes != nullptr) *bytes = variables[i].size;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace fgpu::sim::cuda
