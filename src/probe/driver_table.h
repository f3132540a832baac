// DriverTable: every CUDA driver entry point the probe calls, obtained one way.
//
// The probe exists to exercise the ways real programs reach the driver, because
// an interposer must catch all of them: linking (`direct`), dlopen + dlsym of the
// exported names (`dlsym`, as TensorFlow/XLA do), and cuGetProcAddress with base
// names (`procaddress`, the 11.3 form; `procaddress_v2`, cudart 12+/13). The whole
// table is built once, before cuInit (cudart fetches its entry points before cuInit
// too), so a command never mixes lookup paths.
//
// Contract
// - Each member is named after the exported symbol whose ABI the probe calls
//   (`cu.cuMemAlloc_v2(&ptr, bytes)`), typed from core/abi/cuda_api.h.
// - Through cuGetProcAddress, a base name is asked for at `cuda_version` with
//   CU_GET_PROC_ADDRESS_DEFAULT. The driver answers with the newest variant
//   introduced at or before that version, so each entry records the first version
//   whose variant has the ABI we call; an older --cuda-version is refused
//   (the driver would hand back, say, the 32-bit legacy cuMemAlloc).
// - The getters themselves (cuGetProcAddress, cuGetProcAddress_v2) are linked
//   symbols in `direct` mode and dlsym'd from libcuda.so.1 in every other mode, the
//   way cudart bootstraps.
// - Build fails, naming the symbol, when any lookup yields NULL or an error.
// - Two lists: FGPU_PROBE_DRIVER_ENTRIES, which every command needs (up to 11.2, the
//   stream-ordered allocator), and FGPU_PROBE_GRAPH_ENTRIES, looked up only when a
//   command launches graphs (`spin --graph-kernels N`). The graph list needs 12.0
//   (cuGraphAddKernelNode_v2); keeping it separate lets every other command keep
//   working with --cuda-version 11020..11080, as cudart 11.x programs ask. The
//   members of both lists are always declared; the graph ones stay null unless
//   requested.
#ifndef FGPU_PROBE_DRIVER_TABLE_H_
#define FGPU_PROBE_DRIVER_TABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "core/abi/cuda_api.h"

// X(exported symbol, base name, first CUDA version whose variant has this ABI)
#define FGPU_PROBE_DRIVER_ENTRIES(X)                                        \
  X(cuInit, cuInit, 2000)                                                   \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020)                           \
  X(cuGetErrorName, cuGetErrorName, 6000)                                   \
  X(cuDeviceGet, cuDeviceGet, 2000)                                         \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000)                               \
  X(cuDeviceGetName, cuDeviceGetName, 2000)                                 \
  X(cuDeviceGetUuid_v2, cuDeviceGetUuid, 9020)                              \
  X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020)                            \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)                       \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)               \
  X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 7000)          \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000)                                 \
  X(cuMemGetInfo_v2, cuMemGetInfo, 3020)                                    \
  X(cuMemAlloc_v2, cuMemAlloc, 3020)                                        \
  X(cuMemFree_v2, cuMemFree, 3020)                                          \
  X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020)                                    \
  X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020)                                    \
  X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020)                              \
  X(cuMemAllocManaged, cuMemAllocManaged, 6000)                             \
  X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020)    \
  X(cuMemCreate, cuMemCreate, 10020)                                        \
  X(cuMemRelease, cuMemRelease, 10020)                                      \
  X(cuMemAddressReserve, cuMemAddressReserve, 10020)                        \
  X(cuMemAddressFree, cuMemAddressFree, 10020)                              \
  X(cuMemMap, cuMemMap, 10020)                                              \
  X(cuMemUnmap, cuMemUnmap, 10020)                                          \
  X(cuMemSetAccess, cuMemSetAccess, 10020)                                  \
  X(cuStreamCreate, cuStreamCreate, 2000)                                   \
  X(cuStreamDestroy_v2, cuStreamDestroy, 2000)                              \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000)                         \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020)                                \
  X(cuMemFreeAsync, cuMemFreeAsync, 11020)                                  \
  X(cuMemPoolCreate, cuMemPoolCreate, 11020)                                \
  X(cuMemPoolDestroy, cuMemPoolDestroy, 11020)                              \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020)                \
  X(cuArrayCreate_v2, cuArrayCreate, 3020)                                  \
  X(cuArray3DCreate_v2, cuArray3DCreate, 3020)                              \
  X(cuArrayDestroy, cuArrayDestroy, 2000)                                   \
  X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000)                   \
  X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000)                 \
  X(cuImportExternalMemory, cuImportExternalMemory, 10000)                  \
  X(cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedBuffer, 10000) \
  X(cuDestroyExternalMemory, cuDestroyExternalMemory, 10000)                \
  X(cuModuleLoadData, cuModuleLoadData, 2000)                               \
  X(cuModuleUnload, cuModuleUnload, 2000)                                   \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000)                         \
  X(cuLaunchKernel, cuLaunchKernel, 4000)                                   \
  X(cuEventCreate, cuEventCreate, 2000)                                     \
  X(cuEventRecord, cuEventRecord, 2000)                                     \
  X(cuEventQuery, cuEventQuery, 2000)                                       \
  X(cuEventSynchronize, cuEventSynchronize, 2000)                           \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000)                           \
  X(cuEventDestroy_v2, cuEventDestroy, 2000)

// Looked up only on request (DriverEntrySet::kWithGraphs), see above.
#define FGPU_PROBE_GRAPH_ENTRIES(X)                                         \
  X(cuGraphCreate, cuGraphCreate, 10000)                                    \
  X(cuGraphAddKernelNode_v2, cuGraphAddKernelNode, 12000)                   \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040)        \
  X(cuGraphLaunch, cuGraphLaunch, 10000)                                    \
  X(cuGraphExecDestroy, cuGraphExecDestroy, 10000)                          \
  X(cuGraphDestroy, cuGraphDestroy, 10000)

#define FGPU_PROBE_ALL_DRIVER_ENTRIES(X) \
  FGPU_PROBE_DRIVER_ENTRIES(X)           \
  FGPU_PROBE_GRAPH_ENTRIES(X)

namespace fgpu::probe {

enum class LookupMode { kDirect, kDlsym, kProcAddress, kProcAddressV2 };

// "direct", "dlsym", "procaddress", "procaddress_v2".
std::string_view LookupModeName(LookupMode mode);
bool ParseLookupMode(std::string_view text, LookupMode* mode);

// Which lists a table holds.
enum class DriverEntrySet { kCore, kWithGraphs };

// One entry of the lists above, by name.
struct DriverEntry {
  const char* exported;
  const char* base;
  int since;
};

// The entries of `set`, FGPU_PROBE_DRIVER_ENTRIES first; `*count` is set to their number.
const DriverEntry* DriverEntries(DriverEntrySet set, size_t* count);

// The newest first-ABI version among the entries of `set`: the lowest --cuda-version
// that works (11020 for kCore, 12000 with graphs).
int MinimumCudaVersion(DriverEntrySet set = DriverEntrySet::kCore);

struct DriverTable {
#define FGPU_PROBE_MEMBER_(exported, base, since) decltype(&::exported) exported = nullptr;
  FGPU_PROBE_ALL_DRIVER_ENTRIES(FGPU_PROBE_MEMBER_)
#undef FGPU_PROBE_MEMBER_
  decltype(&::cuGetProcAddress) cuGetProcAddress = nullptr;
  decltype(&::cuGetProcAddress_v2) cuGetProcAddress_v2 = nullptr;
  LookupMode mode = LookupMode::kProcAddressV2;
  int cuda_version = 12000;
  void* library = nullptr;  // dlopen("libcuda.so.1"), kept open for the process
};

// What went wrong when a table could not be built, for the probe's error line.
struct LookupFailure {
  std::string call;    // the function that failed: "dlsym", "cuGetProcAddress_v2", ...
  std::string symbol;  // the entry point being looked up
  int code = 0;        // CUresult of a getter, 0 otherwise
  std::string detail;  // dlerror() text, query status, ...
};

// Fills the members of `set` (the others stay null).
bool BuildDriverTable(LookupMode mode, int cuda_version, DriverEntrySet set, DriverTable* table,
                      LookupFailure* failure);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_DRIVER_TABLE_H_
