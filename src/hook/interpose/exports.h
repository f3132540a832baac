// Include this (instead of core/abi/cuda_api.h / nvml_api.h) in files that define exported
// wrappers: the declarations get default visibility, so the definitions can be exported while
// the rest of libfgpu is hidden. The version script (from hooked_symbols.inc, hooked_nvml.inc
// and dlsym) then decides what is actually exported.
#pragma once

#pragma GCC visibility push(default)
#include "core/abi/cuda_api.h"
#include "core/abi/nvml_api.h"
#pragma GCC visibility pop
