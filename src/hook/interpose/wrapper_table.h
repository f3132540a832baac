// The addresses of libfgpu's exported wrappers, one typed member per hooked symbol.
//
// Contract
// - kWrapperTable is constant-initialised (constinit: no constructor ever runs for it) and
//   defined in exactly one object per binary:
//     * libfgpu.so: entry_wrapper_table.cc takes the address of every wrapper, so a name in
//       hooked_symbols.inc / hooked_nvml.inc without a wrapper definition fails the link.
//     * fgpu_hook_test (the internal objects without any wrapper, so the test binary does not
//       interpose on itself): symbol_map_test.cc defines stand-ins with the same types.
// - CudaWrapperAddress / NvmlWrapperAddress read it by symbol; no init needed.
#pragma once

#include "core/abi/cuda_api.h"
#include "core/abi/nvml_api.h"
#include "hook/interpose/real_driver.h"

namespace fgpu::hook {

struct WrapperTable {
#define FGPU_HOOK(name) decltype(&::name) name;
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
#define FGPU_HOOK_NVML(name) decltype(&::name) name;
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
};

extern const WrapperTable kWrapperTable;

void* CudaWrapperAddress(CudaSymbol symbol);
void* NvmlWrapperAddress(NvmlSymbol symbol);

}  // namespace fgpu::hook
