// The one definition of kWrapperTable in libfgpu.so: the address of every exported wrapper.
// Taking each address here is what turns a hooked name without a wrapper into a link error.
#include "hook/interpose/exports.h"
#include "hook/interpose/wrapper_table.h"

namespace fgpu::hook {

constinit const WrapperTable kWrapperTable = {
#define FGPU_HOOK(name) &::name,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
#define FGPU_HOOK_NVML(name) &::name,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
};

}  // namespace fgpu::hook
