// A module's (or library's) module-scope variables in device memory (api_module_globals.cc):
// placed when a module is loaded, or when a library is first used in a context, each in its
// own mapping with its initial bytes, all charged together as the module's device memory.
#pragma once

#include <cstdint>
#include <string>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// Places the variables on `ctx`'s device (once; later calls do nothing). Charges their sizes,
// each aligned, summed and rounded up to the granularity: CUDA_ERROR_OUT_OF_MEMORY and nothing
// placed if the device cannot take it.
CUresult PlaceModuleGlobals(Module& module, Context* ctx);
// Unmaps them and credits the charge (module unload; the context's destruction does the same).
void ReleaseModuleGlobals(Module& module);
// The variable `name` (managed ones only when `managed`): its address and size, CUDA_ERROR_NOT_FOUND
// if the image declares none. The module's globals must be placed.
CUresult FindModuleGlobal(Module& module, const std::string& name, bool managed, CUdeviceptr* dptr, size_t* bytes);

}  // namespace fgpu::sim::cuda
