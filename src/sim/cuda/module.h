// What the library and kernel entry points (api_library.cc) share with api_module.cc.
#pragma once

#include <string>
#include <vector>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// A module of `image` for `ctx` (a library when ctx is nullptr), registered as a handle.
CUresult ModuleBuild(const void* image, Context* ctx, Module** out);
// The function (kernel) `name` of a module or library handle, made on first use.
CUresult ModuleFunction(void* module, const char* name, Function** out);
// A PTX module's entries in image order; a binary one's functions looked up so far.
std::vector<std::string> ModuleFunctionNames(Module& module);

}  // namespace fgpu::sim::cuda
