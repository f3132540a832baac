// Compile-time proof that cuda_api.h declares each driver entry point with the
// signature the CUDA 13.0 toolkit gives it.
//
// With __CUDA_API_VERSION_INTERNAL defined, cuda.h declares every exported
// name as itself (legacy, _v2, _ptsz and _ptds variants alike) instead of
// renaming through macros. Including fgpu's cuda_api.h afterwards redeclares
// the same extern "C" functions, now over the REAL types (cuda_types.h skips
// itself once cuda.h is seen): a prototype that differs in any parameter or in
// the return type is a conflicting declaration, i.e. a compile error.
//
// Then every line of cuda_symbols.inc is checked against cudaTypedefs.h: the
// exported function's type must be PFN_<base>_v<version>[_ptsz], which pins
// both the signature and the version number the simulator's cuGetProcAddress
// will use.
#include <type_traits>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cudaProfilerTypedefs.h>

#include "core/abi/cuda_api.h"

namespace {

// The typedef names per-thread variants of functions without a stream argument
// with _ptds, not _ptsz. The X-macro only says "per thread", so these are
// spelled out.
using PFN_cuMemcpy_v7000_ptsz = PFN_cuMemcpy_v7000_ptds;
using PFN_cuMemcpyHtoD_v7000_ptsz = PFN_cuMemcpyHtoD_v7000_ptds;
using PFN_cuMemcpyDtoH_v7000_ptsz = PFN_cuMemcpyDtoH_v7000_ptds;
using PFN_cuMemcpyDtoD_v7000_ptsz = PFN_cuMemcpyDtoD_v7000_ptds;
using PFN_cuMemcpy2D_v7000_ptsz = PFN_cuMemcpy2D_v7000_ptds;
using PFN_cuMemsetD8_v7000_ptsz = PFN_cuMemsetD8_v7000_ptds;
using PFN_cuMemsetD16_v7000_ptsz = PFN_cuMemsetD16_v7000_ptds;
using PFN_cuMemsetD32_v7000_ptsz = PFN_cuMemsetD32_v7000_ptds;
using PFN_cuMemcpyPeer_v7000_ptsz = PFN_cuMemcpyPeer_v7000_ptds;
using PFN_cuMemsetD2D8_v7000_ptsz = PFN_cuMemsetD2D8_v7000_ptds;
using PFN_cuMemsetD2D16_v7000_ptsz = PFN_cuMemsetD2D16_v7000_ptds;
using PFN_cuMemsetD2D32_v7000_ptsz = PFN_cuMemsetD2D32_v7000_ptds;
using PFN_cuMemcpy2DUnaligned_v7000_ptsz = PFN_cuMemcpy2DUnaligned_v7000_ptds;
using PFN_cuMemcpy3D_v7000_ptsz = PFN_cuMemcpy3D_v7000_ptds;
using PFN_cuMemcpy3DPeer_v7000_ptsz = PFN_cuMemcpy3DPeer_v7000_ptds;
using PFN_cuMemcpyDtoA_v7000_ptsz = PFN_cuMemcpyDtoA_v7000_ptds;
using PFN_cuMemcpyAtoD_v7000_ptsz = PFN_cuMemcpyAtoD_v7000_ptds;
using PFN_cuMemcpyHtoA_v7000_ptsz = PFN_cuMemcpyHtoA_v7000_ptds;
using PFN_cuMemcpyAtoH_v7000_ptsz = PFN_cuMemcpyAtoH_v7000_ptds;
using PFN_cuMemcpyAtoA_v7000_ptsz = PFN_cuMemcpyAtoA_v7000_ptds;

#define FGPU_PFN_0(base, version) PFN_##base##_v##version
#define FGPU_PFN_1(base, version) PFN_##base##_v##version##_ptsz
#define FGPU_PFN(base, version, per_thread) FGPU_PFN_##per_thread(base, version)

#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread)                          \
  static_assert(std::is_same_v<decltype(&exported), FGPU_PFN(base, version, per_thread)>, \
                #exported " is not PFN_" #base "_v" #version);
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL

#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) +1
constexpr int kSymbols = 0
#include "core/abi/cuda_symbols.inc"
    ;
#undef FGPU_CUDA_SYMBOL

}  // namespace

extern const int kFgpuApiChecks = kSymbols;
