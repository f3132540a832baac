// RTLD_DEEPBIND, which would let a library reach the driver without passing libfgpu.
//
// A library opened with RTLD_DEEPBIND resolves its symbols in its own scope (itself and its
// dependencies) before the global one. If it links libcuda.so.1, its cu* calls bind to the
// driver there and never see the preloaded wrappers: a slice's cap would not apply to it. The
// dlopen/dlmopen overrides (entry_dlopen.cc) therefore clear the flag, so that the library binds
// through the global scope, where libfgpu comes first, like any other library.
//
// Contract
// - OpenModeFor(mode, pass_through): `mode` without RTLD_DEEPBIND, every other bit kept; `mode`
//   unchanged in pass-through (FGPU_DISABLE=1 promises a process as if fgpu were absent).
// - DlopenMode(mode): OpenModeFor with pass-through as the hook's state says once init has
//   finished, else as FGPU_DISABLE in environ says (DisabledIn): a dlopen must never start init,
//   which would load the driver into a process that may never use CUDA. Called only for a mode
//   with RTLD_DEEPBIND; no lock, no allocation.
#pragma once

namespace fgpu::hook {

int OpenModeFor(int mode, bool pass_through);
int DlopenMode(int mode);

}  // namespace fgpu::hook
