// fgpu's own declarations of the CUDA driver API's types (ABI of CUDA 13.0).
//
// Contract: every name, enumerator value, struct layout and typedef alias here is
// identical to the toolkit's cuda.h 13.0, so code compiled against this header
// is binary-compatible with the real libcuda.so.1 and with fgpu's simulated one.
// Nothing here needs the CUDA toolkit; cuda_abi_check_types.cc proves the
// equality against the real header whenever the toolkit is present.
//
// Types only, no functions (those are in cuda_api.h). If the real cuda.h was
// included first, or FGPU_ABI_NO_TYPES is defined, this header defines nothing,
// so a translation unit may pair the real types with fgpu's prototypes.
//
// Legacy 32-bit structs (CUDA_MEMCPY2D_v1, CUDA_ARRAY_DESCRIPTOR_v1, ...) that
// cuda.h only exposes to the driver's own build are declared unconditionally:
// the simulated driver exports the legacy entry points that take them.
//
// CUDA_VERSION is deliberately not defined: code uses it to detect the toolkit.
#ifndef FGPU_CORE_ABI_CUDA_TYPES_H
#define FGPU_CORE_ABI_CUDA_TYPES_H

#if !defined(__cuda_cuda_h__) && !defined(FGPU_ABI_NO_TYPES)

#include <stddef.h>
#include <stdint.h>

// The CUDA release whose driver ABI these declarations reproduce.
#define FGPU_CUDA_ABI_VERSION 13000

// ---------------------------------------------------------------- scalars
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

// fgpu targets LP64 only, where the device pointer is 64 bits wide.
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;  // pre-3.2 entry points (cuMemAlloc, ...)

typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;

#define CU_DEVICE_CPU ((CUdevice)-1)
#define CU_DEVICE_INVALID ((CUdevice)-2)

typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;

// ---------------------------------------------------------------- handles
// Opaque to callers; the struct tags match cuda.h so that C++ name mangling
// of anything taking these handles agrees with code built against the toolkit.
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUlib_st* CUlibrary;
typedef struct CUkern_st* CUkernel;
typedef struct CUtexref_st* CUtexref;
typedef struct CUsurfref_st* CUsurfref;
typedef struct CUarray_st* CUarray;
typedef struct CUmipmappedArray_st* CUmipmappedArray;
typedef struct CUevent_st* CUevent;
typedef struct CUstream_st* CUstream;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphNode_st* CUgraphNode;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUgraphDeviceUpdatableNode_st* CUgraphDeviceNode;
typedef struct CUgreenCtx_st* CUgreenCtx;

// Special stream handles accepted wherever a CUstream is.
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

#ifndef CU_UUID_HAS_BEEN_DEFINED
#define CU_UUID_HAS_BEEN_DEFINED
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;
#endif

#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle_v1;
typedef CUipcMemHandle_v1 CUipcMemHandle;
typedef struct CUipcEventHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcEventHandle_v1;
typedef CUipcEventHandle_v1 CUipcEventHandle;
typedef enum CUipcMem_flags_enum {
  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1,
} CUipcMem_flags;

// ---------------------------------------------------------------- results
// X(name, value) for every CUresult of CUDA 13.0, in cuda.h order. The enum
// below is built from it, and cuGetErrorName/cuGetErrorString use it, so a
// code can never be returned without having a name.
#define FGPU_CUDA_RESULT_LIST(X) \
  X(CUDA_SUCCESS, 0) \
  X(CUDA_ERROR_INVALID_VALUE, 1) \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2) \
  X(CUDA_ERROR_NOT_INITIALIZED, 3) \
  X(CUDA_ERROR_DEINITIALIZED, 4) \
  X(CUDA_ERROR_PROFILER_DISABLED, 5) \
  X(CUDA_ERROR_PROFILER_NOT_INITIALIZED, 6) \
  X(CUDA_ERROR_PROFILER_ALREADY_STARTED, 7) \
  X(CUDA_ERROR_PROFILER_ALREADY_STOPPED, 8) \
  X(CUDA_ERROR_STUB_LIBRARY, 34) \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36) \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46) \
  X(CUDA_ERROR_NO_DEVICE, 100) \
  X(CUDA_ERROR_INVALID_DEVICE, 101) \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102) \
  X(CUDA_ERROR_INVALID_IMAGE, 200) \
  X(CUDA_ERROR_INVALID_CONTEXT, 201) \
  X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, 202) \
  X(CUDA_ERROR_MAP_FAILED, 205) \
  X(CUDA_ERROR_UNMAP_FAILED, 206) \
  X(CUDA_ERROR_ARRAY_IS_MAPPED, 207) \
  X(CUDA_ERROR_ALREADY_MAPPED, 208) \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209) \
  X(CUDA_ERROR_ALREADY_ACQUIRED, 210) \
  X(CUDA_ERROR_NOT_MAPPED, 211) \
  X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, 212) \
  X(CUDA_ERROR_NOT_MAPPED_AS_POINTER, 213) \
  X(CUDA_ERROR_ECC_UNCORRECTABLE, 214) \
  X(CUDA_ERROR_UNSUPPORTED_LIMIT, 215) \
  X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, 216) \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217) \
  X(CUDA_ERROR_INVALID_PTX, 218) \
  X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, 219) \
  X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220) \
  X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221) \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222) \
  X(CUDA_ERROR_JIT_COMPILATION_DISABLED, 223) \
  X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, 224) \
  X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, 225) \
  X(CUDA_ERROR_CONTAINED, 226) \
  X(CUDA_ERROR_INVALID_SOURCE, 300) \
  X(CUDA_ERROR_FILE_NOT_FOUND, 301) \
  X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, 302) \
  X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, 303) \
  X(CUDA_ERROR_OPERATING_SYSTEM, 304) \
  X(CUDA_ERROR_INVALID_HANDLE, 400) \
  X(CUDA_ERROR_ILLEGAL_STATE, 401) \
  X(CUDA_ERROR_LOSSY_QUERY, 402) \
  X(CUDA_ERROR_NOT_FOUND, 500) \
  X(CUDA_ERROR_NOT_READY, 600) \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700) \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701) \
  X(CUDA_ERROR_LAUNCH_TIMEOUT, 702) \
  X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, 703) \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704) \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705) \
  X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708) \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709) \
  X(CUDA_ERROR_ASSERT, 710) \
  X(CUDA_ERROR_TOO_MANY_PEERS, 711) \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712) \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713) \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714) \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715) \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716) \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717) \
  X(CUDA_ERROR_INVALID_PC, 718) \
  X(CUDA_ERROR_LAUNCH_FAILED, 719) \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720) \
  X(CUDA_ERROR_TENSOR_MEMORY_LEAK, 721) \
  X(CUDA_ERROR_NOT_PERMITTED, 800) \
  X(CUDA_ERROR_NOT_SUPPORTED, 801) \
  X(CUDA_ERROR_SYSTEM_NOT_READY, 802) \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803) \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804) \
  X(CUDA_ERROR_MPS_CONNECTION_FAILED, 805) \
  X(CUDA_ERROR_MPS_RPC_FAILURE, 806) \
  X(CUDA_ERROR_MPS_SERVER_NOT_READY, 807) \
  X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, 808) \
  X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, 809) \
  X(CUDA_ERROR_MPS_CLIENT_TERMINATED, 810) \
  X(CUDA_ERROR_CDP_NOT_SUPPORTED, 811) \
  X(CUDA_ERROR_CDP_VERSION_MISMATCH, 812) \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900) \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901) \
  X(CUDA_ERROR_STREAM_CAPTURE_MERGE, 902) \
  X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, 903) \
  X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, 904) \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 905) \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, 906) \
  X(CUDA_ERROR_CAPTURED_EVENT, 907) \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908) \
  X(CUDA_ERROR_TIMEOUT, 909) \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910) \
  X(CUDA_ERROR_EXTERNAL_DEVICE, 911) \
  X(CUDA_ERROR_INVALID_CLUSTER_SIZE, 912) \
  X(CUDA_ERROR_FUNCTION_NOT_LOADED, 913) \
  X(CUDA_ERROR_INVALID_RESOURCE_TYPE, 914) \
  X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, 915) \
  X(CUDA_ERROR_KEY_ROTATION, 916) \
  X(CUDA_ERROR_UNKNOWN, 999)

#define FGPU_ABI_ENUMERATOR_(name, value) name = value,
typedef enum cudaError_enum {
  FGPU_CUDA_RESULT_LIST(FGPU_ABI_ENUMERATOR_)
} CUresult;

// ---------------------------------------------------------------- devices
// X(name, value) for every CUdevice_attribute value of CUDA 13.0, one name
// per value: the aliases that share a value and the MAX sentinel follow in
// the enum itself, so iterating the list visits each attribute once.
#define FGPU_CUDA_DEVICE_ATTRIBUTE_LIST(X) \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1) \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2) \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3) \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4) \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5) \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6) \
  X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7) \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8) \
  X(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 9) \
  X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10) \
  X(CU_DEVICE_ATTRIBUTE_MAX_PITCH, 11) \
  X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 12) \
  X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13) \
  X(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 14) \
  X(CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 15) \
  X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16) \
  X(CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 17) \
  X(CU_DEVICE_ATTRIBUTE_INTEGRATED, 18) \
  X(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 19) \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 20) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 21) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 22) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 23) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 24) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 25) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 26) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH, 27) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, 28) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS, 29) \
  X(CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 30) \
  X(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 31) \
  X(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 32) \
  X(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33) \
  X(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34) \
  X(CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 35) \
  X(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36) \
  X(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37) \
  X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38) \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 39) \
  X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40) \
  X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH, 42) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS, 43) \
  X(CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER, 44) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH, 45) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT, 46) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, 47) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, 48) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, 49) \
  X(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50) \
  X(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 51) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH, 52) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, 53) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, 54) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, 55) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, 56) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, 57) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, 58) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, 59) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, 60) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH, 61) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS, 62) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH, 63) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT, 64) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS, 65) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH, 66) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, 67) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, 68) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 69) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 70) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 71) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 72) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, 73) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, 74) \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75) \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76) \
  X(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, 77) \
  X(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 78) \
  X(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 79) \
  X(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 80) \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 81) \
  X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 82) \
  X(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 83) \
  X(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 84) \
  X(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, 85) \
  X(CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 86) \
  X(CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 87) \
  X(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 88) \
  X(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 89) \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 90) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 91) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, 92) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1, 93) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1, 94) \
  X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 95) \
  X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 96) \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97) \
  X(CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 98) \
  X(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 99) \
  X(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 100) \
  X(CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 101) \
  X(CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED, 102) \
  X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 103) \
  X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 104) \
  X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 105) \
  X(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 106) \
  X(CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 107) \
  X(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 108) \
  X(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 109) \
  X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 110) \
  X(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 111) \
  X(CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, 112) \
  X(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 113) \
  X(CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 114) \
  X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 115) \
  X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 116) \
  X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, 117) \
  X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, 118) \
  X(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 119) \
  X(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 120) \
  X(CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 121) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 122) \
  X(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 123) \
  X(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 124) \
  X(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 125) \
  X(CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 126) \
  X(CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 127) \
  X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 128) \
  X(CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 129) \
  X(CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, 130) \
  X(CU_DEVICE_ATTRIBUTE_NUMA_ID, 131) \
  X(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 132) \
  X(CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 133) \
  X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 134) \
  X(CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED, 135) \
  X(CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, 136) \
  X(CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH, 137) \
  X(CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED, 138) \
  X(CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 139) \
  X(CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, 140) \
  X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 141) \
  X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED, 142) \
  X(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED, 143) \
  X(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, 144) \
  X(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 145) \
  X(CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED, 146) \
  X(CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 147)

typedef enum CUdevice_attribute_enum {
  FGPU_CUDA_DEVICE_ATTRIBUTE_LIST(FGPU_ABI_ENUMERATOR_)
  // Second names for values listed above.
  CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_WIDTH = 27,
  CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_HEIGHT = 28,
  CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES = 29,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_MAX = 148,
} CUdevice_attribute;

typedef struct CUdevprop_st {
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int sharedMemPerBlock;
  int totalConstantMemory;
  int SIMDWidth;
  int memPitch;
  int regsPerBlock;
  int clockRate;
  int textureAlign;
} CUdevprop_v1;
typedef CUdevprop_v1 CUdevprop;

typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  CU_POINTER_ATTRIBUTE_P2P_TOKENS = 5,
  CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
  CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  CU_POINTER_ATTRIBUTE_MAPPED = 13,
  CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14,
  CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15,
  CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16,
  CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17,
  CU_POINTER_ATTRIBUTE_MAPPING_SIZE = 18,
  CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR = 19,
  CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID = 20,
  CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE = 21,
} CUpointer_attribute;

// ---------------------------------------------------------------- contexts, streams, events
typedef enum CUctx_flags_enum {
  CU_CTX_SCHED_AUTO = 0x0,
  CU_CTX_SCHED_SPIN = 0x1,
  CU_CTX_SCHED_YIELD = 0x2,
  CU_CTX_SCHED_BLOCKING_SYNC = 0x4,
  CU_CTX_BLOCKING_SYNC = 0x4,
  CU_CTX_SCHED_MASK = 0x7,
  CU_CTX_MAP_HOST = 0x8,
  CU_CTX_LMEM_RESIZE_TO_MAX = 0x10,
  CU_CTX_COREDUMP_ENABLE = 0x20,
  CU_CTX_USER_COREDUMP_ENABLE = 0x40,
  CU_CTX_SYNC_MEMOPS = 0x80,
  CU_CTX_FLAGS_MASK = 0xFF,
} CUctx_flags;

typedef enum CUstream_flags_enum {
  CU_STREAM_DEFAULT = 0x0,
  CU_STREAM_NON_BLOCKING = 0x1,
} CUstream_flags;

typedef enum CUevent_flags_enum {
  CU_EVENT_DEFAULT = 0x0,
  CU_EVENT_BLOCKING_SYNC = 0x1,
  CU_EVENT_DISABLE_TIMING = 0x2,
  CU_EVENT_INTERPROCESS = 0x4,
} CUevent_flags;

typedef enum CUevent_record_flags_enum {
  CU_EVENT_RECORD_DEFAULT = 0x0,
  CU_EVENT_RECORD_EXTERNAL = 0x1,
} CUevent_record_flags;

typedef enum CUlimit_enum {
  CU_LIMIT_STACK_SIZE = 0x0,
  CU_LIMIT_PRINTF_FIFO_SIZE = 0x1,
  CU_LIMIT_MALLOC_HEAP_SIZE = 0x2,
  CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH = 0x3,
  CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 0x4,
  CU_LIMIT_MAX_L2_FETCH_GRANULARITY = 0x5,
  CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x6,
  CU_LIMIT_SHMEM_SIZE = 0x7,
  CU_LIMIT_CIG_ENABLED = 0x8,
  CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED = 0x9,
  CU_LIMIT_MAX = 0xA,
} CUlimit;

typedef enum CUexecAffinityType_enum {
  CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
  CU_EXEC_AFFINITY_TYPE_MAX = 1,
} CUexecAffinityType;

typedef struct CUexecAffinitySmCount_st {
  unsigned int val;
} CUexecAffinitySmCount_v1;
typedef CUexecAffinitySmCount_v1 CUexecAffinitySmCount;

typedef struct CUexecAffinityParam_st {
  CUexecAffinityType type;
  union {
    CUexecAffinitySmCount smCount;
  } param;
} CUexecAffinityParam_v1;
typedef CUexecAffinityParam_v1 CUexecAffinityParam;

typedef enum CUcigDataType_enum {
  CIG_DATA_TYPE_D3D12_COMMAND_QUEUE = 0x1,
  CIG_DATA_TYPE_NV_BLOB = 0x2,
} CUcigDataType;

typedef struct CUctxCigParam_st {
  CUcigDataType sharedDataType;
  void* sharedData;
} CUctxCigParam;

// Argument of cuCtxCreate_v4 (CUDA 12.5+).
typedef struct CUctxCreateParams_st {
  CUexecAffinityParam* execAffinityParams;
  int numExecAffinityParams;
  CUctxCigParam* cigParams;
} CUctxCreateParams;

// Host callbacks run by the driver on its own thread.
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void* userData);
typedef void (*CUhostFn)(void* userData);
typedef size_t (*CUoccupancyB2DSize)(int blockSize);

typedef enum CUoccupancy_flags_enum {
  CU_OCCUPANCY_DEFAULT = 0x0,
  CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE = 0x1,
} CUoccupancy_flags;

typedef enum CUfunc_cache_enum {
  CU_FUNC_CACHE_PREFER_NONE = 0x00,
  CU_FUNC_CACHE_PREFER_SHARED = 0x01,
  CU_FUNC_CACHE_PREFER_L1 = 0x02,
  CU_FUNC_CACHE_PREFER_EQUAL = 0x03,
} CUfunc_cache;

typedef enum CUjitInputType_enum {
  CU_JIT_INPUT_CUBIN = 0,
  CU_JIT_INPUT_PTX = 1,
  CU_JIT_INPUT_FATBINARY = 2,
  CU_JIT_INPUT_OBJECT = 3,
  CU_JIT_INPUT_LIBRARY = 4,
  CU_JIT_INPUT_NVVM = 5,
  CU_JIT_NUM_INPUT_TYPES = 6,
} CUjitInputType;

typedef struct CUlinkState_st* CUlinkState;

// Shared memory bank width (deprecated in the driver; Hopper's banks are four bytes wide).
typedef enum CUsharedconfig_enum {
  CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE = 0x00,
  CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE = 0x01,
  CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE = 0x02,
} CUsharedconfig;

typedef enum CUfunctionLoadingState_enum {
  CU_FUNCTION_LOADING_STATE_UNLOADED = 0,
  CU_FUNCTION_LOADING_STATE_LOADED = 1,
  CU_FUNCTION_LOADING_STATE_MAX,
} CUfunctionLoadingState;

typedef enum CUmoduleLoadingMode_enum {
  CU_MODULE_EAGER_LOADING = 0x1,
  CU_MODULE_LAZY_LOADING = 0x2,
} CUmoduleLoadingMode;

// Attributes of the link between two devices (cuDeviceGetP2PAttribute).
typedef enum CUdevice_P2PAttribute_enum {
  CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 0x01,
  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 0x02,
  CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 0x03,
  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_ACCESS_SUPPORTED = 0x04,  // deprecated name of the next
  CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED = 0x04,
  CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED = 0x05,
} CUdevice_P2PAttribute;

// Stream memory operations (cuStreamWaitValue*, cuStreamWriteValue*, cuStreamBatchMemOp).
typedef enum CUstreamWaitValue_flags_enum {
  CU_STREAM_WAIT_VALUE_GEQ = 0x0,
  CU_STREAM_WAIT_VALUE_EQ = 0x1,
  CU_STREAM_WAIT_VALUE_AND = 0x2,
  CU_STREAM_WAIT_VALUE_NOR = 0x3,
  CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30,
} CUstreamWaitValue_flags;

typedef enum CUstreamWriteValue_flags_enum {
  CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
  CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 0x1,  // not in the _v2 API
} CUstreamWriteValue_flags;

typedef enum CUstreamBatchMemOpType_enum {
  CU_STREAM_MEM_OP_WAIT_VALUE_32 = 1,
  CU_STREAM_MEM_OP_WRITE_VALUE_32 = 2,
  CU_STREAM_MEM_OP_WAIT_VALUE_64 = 4,
  CU_STREAM_MEM_OP_WRITE_VALUE_64 = 5,
  CU_STREAM_MEM_OP_BARRIER = 6,  // _v2 API only
  CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES = 3,
} CUstreamBatchMemOpType;

typedef enum CUstreamMemoryBarrier_flags_enum {
  CU_STREAM_MEMORY_BARRIER_TYPE_SYS = 0x0,
  CU_STREAM_MEMORY_BARRIER_TYPE_GPU = 0x1,
} CUstreamMemoryBarrier_flags;

// One operation of a batch: `operation` tags every member; `pad` fixes the size (48 bytes).
typedef union CUstreamBatchMemOpParams_union {
  CUstreamBatchMemOpType operation;
  struct CUstreamMemOpWaitValueParams_st {
    CUstreamBatchMemOpType operation;
    CUdeviceptr address;
    union {
      cuuint32_t value;
      cuuint64_t value64;
    };
    unsigned int flags;
    CUdeviceptr alias;  // for the driver's own use
  } waitValue;
  struct CUstreamMemOpWriteValueParams_st {
    CUstreamBatchMemOpType operation;
    CUdeviceptr address;
    union {
      cuuint32_t value;
      cuuint64_t value64;
    };
    unsigned int flags;
    CUdeviceptr alias;  // for the driver's own use
  } writeValue;
  struct CUstreamMemOpFlushRemoteWritesParams_st {
    CUstreamBatchMemOpType operation;
    unsigned int flags;
  } flushRemoteWrites;
  struct CUstreamMemOpMemoryBarrierParams_st {
    CUstreamBatchMemOpType operation;
    unsigned int flags;
  } memoryBarrier;
  cuuint64_t pad[6];
} CUstreamBatchMemOpParams_v1;
typedef CUstreamBatchMemOpParams_v1 CUstreamBatchMemOpParams;

// ---------------------------------------------------------------- memory
typedef enum CUmemAttach_flags_enum {
  CU_MEM_ATTACH_GLOBAL = 0x1,
  CU_MEM_ATTACH_HOST = 0x2,
  CU_MEM_ATTACH_SINGLE = 0x4,
} CUmemAttach_flags;

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04

#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08

typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 0x1,
  CU_MEMORYTYPE_DEVICE = 0x2,
  CU_MEMORYTYPE_ARRAY = 0x3,
  CU_MEMORYTYPE_UNIFIED = 0x4,
} CUmemorytype;

typedef enum CUarray_format_enum {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x1,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x2,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x3,
  CU_AD_FORMAT_SIGNED_INT8 = 0x8,
  CU_AD_FORMAT_SIGNED_INT16 = 0x9,
  CU_AD_FORMAT_SIGNED_INT32 = 0xA,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20,
  CU_AD_FORMAT_NV12 = 0xB0,
  CU_AD_FORMAT_UNORM_INT8X1 = 0xC0,
  CU_AD_FORMAT_UNORM_INT8X2 = 0xC1,
  CU_AD_FORMAT_UNORM_INT8X4 = 0xC2,
  CU_AD_FORMAT_UNORM_INT16X1 = 0xC3,
  CU_AD_FORMAT_UNORM_INT16X2 = 0xC4,
  CU_AD_FORMAT_UNORM_INT16X4 = 0xC5,
  CU_AD_FORMAT_SNORM_INT8X1 = 0xC6,
  CU_AD_FORMAT_SNORM_INT8X2 = 0xC7,
  CU_AD_FORMAT_SNORM_INT8X4 = 0xC8,
  CU_AD_FORMAT_SNORM_INT16X1 = 0xC9,
  CU_AD_FORMAT_SNORM_INT16X2 = 0xCA,
  CU_AD_FORMAT_SNORM_INT16X4 = 0xCB,
  CU_AD_FORMAT_BC1_UNORM = 0x91,
  CU_AD_FORMAT_BC1_UNORM_SRGB = 0x92,
  CU_AD_FORMAT_BC2_UNORM = 0x93,
  CU_AD_FORMAT_BC2_UNORM_SRGB = 0x94,
  CU_AD_FORMAT_BC3_UNORM = 0x95,
  CU_AD_FORMAT_BC3_UNORM_SRGB = 0x96,
  CU_AD_FORMAT_BC4_UNORM = 0x97,
  CU_AD_FORMAT_BC4_SNORM = 0x98,
  CU_AD_FORMAT_BC5_UNORM = 0x99,
  CU_AD_FORMAT_BC5_SNORM = 0x9A,
  CU_AD_FORMAT_BC6H_UF16 = 0x9B,
  CU_AD_FORMAT_BC6H_SF16 = 0x9C,
  CU_AD_FORMAT_BC7_UNORM = 0x9D,
  CU_AD_FORMAT_BC7_UNORM_SRGB = 0x9E,
  CU_AD_FORMAT_P010 = 0x9F,
  CU_AD_FORMAT_P016 = 0xA1,
  CU_AD_FORMAT_NV16 = 0xA2,
  CU_AD_FORMAT_P210 = 0xA3,
  CU_AD_FORMAT_P216 = 0xA4,
  CU_AD_FORMAT_YUY2 = 0xA5,
  CU_AD_FORMAT_Y210 = 0xA6,
  CU_AD_FORMAT_Y216 = 0xA7,
  CU_AD_FORMAT_AYUV = 0xA8,
  CU_AD_FORMAT_Y410 = 0xA9,
  CU_AD_FORMAT_Y416 = 0xB1,
  CU_AD_FORMAT_Y444_PLANAR8 = 0xB2,
  CU_AD_FORMAT_Y444_PLANAR10 = 0xB3,
  CU_AD_FORMAT_YUV444_8bit_SemiPlanar = 0xB4,
  CU_AD_FORMAT_YUV444_16bit_SemiPlanar = 0xB5,
  CU_AD_FORMAT_UNORM_INT_101010_2 = 0x50,
  CU_AD_FORMAT_MAX = 0x7FFFFFFF,
} CUarray_format;

#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_2DARRAY 0x01
#define CUDA_ARRAY3D_SURFACE_LDST 0x02
#define CUDA_ARRAY3D_CUBEMAP 0x04
#define CUDA_ARRAY3D_TEXTURE_GATHER 0x08
#define CUDA_ARRAY3D_DEPTH_TEXTURE 0x10
#define CUDA_ARRAY3D_COLOR_ATTACHMENT 0x20
#define CUDA_ARRAY3D_SPARSE 0x40
#define CUDA_ARRAY3D_DEFERRED_MAPPING 0x80
#define CUDA_ARRAY3D_VIDEO_ENCODE_DECODE 0x100

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v2;
typedef CUDA_ARRAY_DESCRIPTOR_v2 CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY_DESCRIPTOR_v1_st {
  unsigned int Width;
  unsigned int Height;
  CUarray_format Format;
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v1;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR_v2;
typedef CUDA_ARRAY3D_DESCRIPTOR_v2 CUDA_ARRAY3D_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_v1_st {
  unsigned int Width;
  unsigned int Height;
  unsigned int Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR_v1;

typedef struct CUDA_MEMCPY2D_st {
  size_t srcXInBytes;
  size_t srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes;
  size_t dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D_v2;
typedef CUDA_MEMCPY2D_v2 CUDA_MEMCPY2D;

typedef struct CUDA_MEMCPY2D_v1_st {
  unsigned int srcXInBytes;
  unsigned int srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr_v1 srcDevice;
  CUarray srcArray;
  unsigned int srcPitch;
  unsigned int dstXInBytes;
  unsigned int dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr_v1 dstDevice;
  CUarray dstArray;
  unsigned int dstPitch;
  unsigned int WidthInBytes;
  unsigned int Height;
} CUDA_MEMCPY2D_v1;

typedef struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void* reserved0;
  size_t srcPitch;
  size_t srcHeight;
  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void* reserved1;
  size_t dstPitch;
  size_t dstHeight;
  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
} CUDA_MEMCPY3D_v2;
typedef CUDA_MEMCPY3D_v2 CUDA_MEMCPY3D;

typedef struct CUDA_MEMCPY3D_v1_st {
  unsigned int srcXInBytes;
  unsigned int srcY;
  unsigned int srcZ;
  unsigned int srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr_v1 srcDevice;
  CUarray srcArray;
  void* reserved0;
  unsigned int srcPitch;
  unsigned int srcHeight;
  unsigned int dstXInBytes;
  unsigned int dstY;
  unsigned int dstZ;
  unsigned int dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr_v1 dstDevice;
  CUarray dstArray;
  void* reserved1;
  unsigned int dstPitch;
  unsigned int dstHeight;
  unsigned int WidthInBytes;
  unsigned int Height;
  unsigned int Depth;
} CUDA_MEMCPY3D_v1;

typedef struct CUDA_MEMCPY3D_PEER_st {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  CUcontext srcContext;  // ignored for arrays
  size_t srcPitch;
  size_t srcHeight;
  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  CUcontext dstContext;  // ignored for arrays
  size_t dstPitch;
  size_t dstHeight;
  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
} CUDA_MEMCPY3D_PEER_v1;
typedef CUDA_MEMCPY3D_PEER_v1 CUDA_MEMCPY3D_PEER;

// Sparse and deferred-mapping arrays.
#define CU_ARRAY_SPARSE_PROPERTIES_SINGLE_MIPTAIL 0x1

typedef struct CUDA_ARRAY_SPARSE_PROPERTIES_st {
  struct {
    unsigned int width;  // of a sparse tile, in elements
    unsigned int height;
    unsigned int depth;
  } tileExtent;
  unsigned int miptailFirstLevel;
  unsigned long long miptailSize;
  unsigned int flags;
  unsigned int reserved[4];
} CUDA_ARRAY_SPARSE_PROPERTIES_v1;
typedef CUDA_ARRAY_SPARSE_PROPERTIES_v1 CUDA_ARRAY_SPARSE_PROPERTIES;

typedef struct CUDA_ARRAY_MEMORY_REQUIREMENTS_st {
  size_t size;
  size_t alignment;
  unsigned int reserved[4];
} CUDA_ARRAY_MEMORY_REQUIREMENTS_v1;
typedef CUDA_ARRAY_MEMORY_REQUIREMENTS_v1 CUDA_ARRAY_MEMORY_REQUIREMENTS;

// ---------------------------------------------------------------- external memory and semaphores
typedef struct CUextMemory_st* CUexternalMemory;
typedef struct CUextSemaphore_st* CUexternalSemaphore;

typedef enum CUexternalMemoryHandleType_enum {
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32 = 2,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_KMT = 3,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP = 4,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE = 5,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE = 6,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE_KMT = 7,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF = 8,
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD = 9,
} CUexternalMemoryHandleType;

#define CUDA_EXTERNAL_MEMORY_DEDICATED 0x1
#define CUDA_EXTERNAL_SEMAPHORE_SIGNAL_SKIP_NVSCIBUF_MEMSYNC 0x01
#define CUDA_EXTERNAL_SEMAPHORE_WAIT_SKIP_NVSCIBUF_MEMSYNC 0x02

typedef struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st {
  CUexternalMemoryHandleType type;
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_HANDLE_DESC_v1;
typedef CUDA_EXTERNAL_MEMORY_HANDLE_DESC_v1 CUDA_EXTERNAL_MEMORY_HANDLE_DESC;

typedef struct CUDA_EXTERNAL_MEMORY_BUFFER_DESC_st {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_BUFFER_DESC_v1;
typedef CUDA_EXTERNAL_MEMORY_BUFFER_DESC_v1 CUDA_EXTERNAL_MEMORY_BUFFER_DESC;

typedef struct CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC_st {
  unsigned long long offset;
  CUDA_ARRAY3D_DESCRIPTOR arrayDesc;
  unsigned int numLevels;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC_v1;
typedef CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC_v1 CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC;

typedef enum CUexternalSemaphoreHandleType_enum {
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD = 1,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_KMT = 3,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE = 4,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_FENCE = 5,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC = 6,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX = 7,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX_KMT = 8,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD = 9,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32 = 10,
} CUexternalSemaphoreHandleType;

typedef struct CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st {
  CUexternalSemaphoreHandleType type;
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciSyncObj;
  } handle;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_v1;
typedef CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_v1 CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC;

typedef struct CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_st {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void* fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
    } keyedMutex;
    unsigned int reserved[12];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_v1;
typedef CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_v1 CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS;

typedef struct CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_st {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void* fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
      unsigned int timeoutMs;
    } keyedMutex;
    unsigned int reserved[10];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_v1;
typedef CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_v1 CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS;

// ---------------------------------------------------------------- virtual memory management
typedef enum CUmemAllocationType_enum {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
  CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF,
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
  CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
  CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
  CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
  CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF,
} CUmemAllocationHandleType;

typedef enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_NONE = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
  CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF,
} CUmemLocationType;

typedef enum CUmemAllocationCompType_enum {
  CU_MEM_ALLOCATION_COMP_NONE = 0x0,
  CU_MEM_ALLOCATION_COMP_GENERIC = 0x1,
} CUmemAllocationCompType;

typedef enum CUmemAccess_flags_enum {
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
  CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF,
} CUmemAccess_flags;

typedef enum CUmemAllocationGranularity_flags_enum {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
} CUmemAllocationGranularity_flags;

#define CU_MEM_CREATE_USAGE_TILE_POOL 0x1
#define CU_MEM_CREATE_USAGE_HW_DECOMPRESS 0x2

typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;  // a CUmemAllocationCompType
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;  // CU_MEM_CREATE_USAGE_* bits
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;

// Unified-memory advice and the range attributes that report it back.
typedef enum CUmem_advise_enum {
  CU_MEM_ADVISE_SET_READ_MOSTLY = 1,
  CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2,
  CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3,
  CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4,
  CU_MEM_ADVISE_SET_ACCESSED_BY = 5,
  CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6,
} CUmem_advise;

typedef enum CUmem_range_attribute_enum {
  CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION = 2,
  CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY = 3,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION = 4,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE = 5,
  CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID = 6,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE = 7,
  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID = 8,
} CUmem_range_attribute;

typedef struct CUmemAccessDesc_st {
  CUmemLocation location;
  CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;

// What a texture or surface object reads (CUDA_RESOURCE_DESC), and what cuMemMapArrayAsync maps
// the tiles of (sparse arrays, the memory of deferred-mapping ones).
typedef enum CUresourcetype_enum {
  CU_RESOURCE_TYPE_ARRAY = 0x00,
  CU_RESOURCE_TYPE_MIPMAPPED_ARRAY = 0x01,
  CU_RESOURCE_TYPE_LINEAR = 0x02,
  CU_RESOURCE_TYPE_PITCH2D = 0x03,
} CUresourcetype;

typedef enum CUarraySparseSubresourceType_enum {
  CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL = 0,
  CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL = 1,
} CUarraySparseSubresourceType;

typedef enum CUmemOperationType_enum {
  CU_MEM_OPERATION_TYPE_MAP = 1,
  CU_MEM_OPERATION_TYPE_UNMAP = 2,
} CUmemOperationType;

typedef enum CUmemHandleType_enum {
  CU_MEM_HANDLE_TYPE_GENERIC = 0,
} CUmemHandleType;

typedef struct CUarrayMapInfo_st {
  CUresourcetype resourceType;
  union {
    CUmipmappedArray mipmap;
    CUarray array;
  } resource;
  CUarraySparseSubresourceType subresourceType;
  union {
    struct {
      unsigned int level;
      unsigned int layer;
      unsigned int offsetX;
      unsigned int offsetY;
      unsigned int offsetZ;
      unsigned int extentWidth;
      unsigned int extentHeight;
      unsigned int extentDepth;
    } sparseLevel;
    struct {
      unsigned int layer;
      unsigned long long offset;
      unsigned long long size;
    } miptail;
  } subresource;
  CUmemOperationType memOperationType;
  CUmemHandleType memHandleType;
  union {
    CUmemGenericAllocationHandle memHandle;
  } memHandle;
  unsigned long long offset;
  unsigned int deviceBitMask;
  unsigned int flags;
  unsigned int reserved[2];
} CUarrayMapInfo_v1;
typedef CUarrayMapInfo_v1 CUarrayMapInfo;

// Batched copies: cuMemcpyBatchAsync, cuMemcpy3DBatchAsync.
typedef enum CUmemcpyFlags_enum {
  CU_MEMCPY_FLAG_DEFAULT = 0x0,
  CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE = 0x1,
} CUmemcpyFlags;

typedef enum CUmemcpySrcAccessOrder_enum {
  CU_MEMCPY_SRC_ACCESS_ORDER_INVALID = 0x0,
  CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 0x1,
  CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL = 0x2,
  CU_MEMCPY_SRC_ACCESS_ORDER_ANY = 0x3,
  CU_MEMCPY_SRC_ACCESS_ORDER_MAX = 0x7FFFFFFF,
} CUmemcpySrcAccessOrder;

typedef struct CUmemcpyAttributes_st {
  CUmemcpySrcAccessOrder srcAccessOrder;
  CUmemLocation srcLocHint;  // hints apply to managed and pageable memory only
  CUmemLocation dstLocHint;
  unsigned int flags;  // CUmemcpyFlags
} CUmemcpyAttributes_v1;
typedef CUmemcpyAttributes_v1 CUmemcpyAttributes;

typedef enum CUmemcpy3DOperandType_enum {
  CU_MEMCPY_OPERAND_TYPE_POINTER = 0x1,
  CU_MEMCPY_OPERAND_TYPE_ARRAY = 0x2,
  CU_MEMCPY_OPERAND_TYPE_MAX = 0x7FFFFFFF,
} CUmemcpy3DOperandType;

typedef struct CUoffset3D_st {
  size_t x;
  size_t y;
  size_t z;
} CUoffset3D_v1;
typedef CUoffset3D_v1 CUoffset3D;

typedef struct CUextent3D_st {
  size_t width;
  size_t height;
  size_t depth;
} CUextent3D_v1;
typedef CUextent3D_v1 CUextent3D;

typedef struct CUmemcpy3DOperand_st {
  CUmemcpy3DOperandType type;
  union {
    struct {
      CUdeviceptr ptr;
      size_t rowLength;    // in elements; 0 = tightly packed
      size_t layerHeight;  // in elements; 0 = tightly packed
      CUmemLocation locHint;
    } ptr;
    struct {
      CUarray array;
      CUoffset3D offset;
    } array;
  } op;
} CUmemcpy3DOperand_v1;
typedef CUmemcpy3DOperand_v1 CUmemcpy3DOperand;

typedef struct CUDA_MEMCPY3D_BATCH_OP_st {
  CUmemcpy3DOperand src;
  CUmemcpy3DOperand dst;
  CUextent3D extent;  // in elements, none 0
  CUmemcpySrcAccessOrder srcAccessOrder;
  unsigned int flags;  // CUmemcpyFlags
} CUDA_MEMCPY3D_BATCH_OP_v1;
typedef CUDA_MEMCPY3D_BATCH_OP_v1 CUDA_MEMCPY3D_BATCH_OP;

// ---------------------------------------------------------------- stream-ordered allocation
typedef enum CUmemPool_attribute_enum {
  CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8,
} CUmemPool_attribute;

#define CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS 0x2

typedef struct CUmemPoolProps_st {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;  // 0 = the system default
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps_v1;
typedef CUmemPoolProps_v1 CUmemPoolProps;

typedef struct CUmemPoolPtrExportData_st {
  unsigned char reserved[64];
} CUmemPoolPtrExportData_v1;
typedef CUmemPoolPtrExportData_v1 CUmemPoolPtrExportData;

// ---------------------------------------------------------------- modules, functions, launch
typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET = 10,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
  CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15,
  CU_FUNC_ATTRIBUTE_MAX = 16,
} CUfunction_attribute;

typedef enum CUjit_option_enum {
  CU_JIT_MAX_REGISTERS = 0,
  CU_JIT_THREADS_PER_BLOCK = 1,
  CU_JIT_WALL_TIME = 2,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
  CU_JIT_TARGET_FROM_CUCONTEXT = 8,
  CU_JIT_TARGET = 9,
  CU_JIT_FALLBACK_STRATEGY = 10,
  CU_JIT_GENERATE_DEBUG_INFO = 11,
  CU_JIT_LOG_VERBOSE = 12,
  CU_JIT_GENERATE_LINE_INFO = 13,
  CU_JIT_CACHE_MODE = 14,
  CU_JIT_NEW_SM3X_OPT = 15,
  CU_JIT_FAST_COMPILE = 16,
  CU_JIT_GLOBAL_SYMBOL_NAMES = 17,
  CU_JIT_GLOBAL_SYMBOL_ADDRESSES = 18,
  CU_JIT_GLOBAL_SYMBOL_COUNT = 19,
  CU_JIT_LTO = 20,
  CU_JIT_FTZ = 21,
  CU_JIT_PREC_DIV = 22,
  CU_JIT_PREC_SQRT = 23,
  CU_JIT_FMA = 24,
  CU_JIT_REFERENCED_KERNEL_NAMES = 25,
  CU_JIT_REFERENCED_KERNEL_COUNT = 26,
  CU_JIT_REFERENCED_VARIABLE_NAMES = 27,
  CU_JIT_REFERENCED_VARIABLE_COUNT = 28,
  CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES = 29,
  CU_JIT_POSITION_INDEPENDENT_CODE = 30,
  CU_JIT_MIN_CTA_PER_SM = 31,
  CU_JIT_MAX_THREADS_PER_BLOCK = 32,
  CU_JIT_OVERRIDE_DIRECTIVE_VALUES = 33,
  CU_JIT_SPLIT_COMPILE = 34,
  CU_JIT_NUM_OPTIONS = 35,
} CUjit_option;

typedef enum CUlibraryOption_enum {
  CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
  CU_LIBRARY_BINARY_IS_PRESERVED = 1,
  CU_LIBRARY_NUM_OPTIONS = 2,
} CUlibraryOption;

// Markers inside cuLaunchKernel's `extra` array.
#define CU_LAUNCH_PARAM_END_AS_INT 0x00
#define CU_LAUNCH_PARAM_END ((void*)CU_LAUNCH_PARAM_END_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT 0x01
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void*)CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT 0x02
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void*)CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)

typedef enum CUaccessProperty_enum {
  CU_ACCESS_PROPERTY_NORMAL = 0,
  CU_ACCESS_PROPERTY_STREAMING = 1,
  CU_ACCESS_PROPERTY_PERSISTING = 2,
} CUaccessProperty;

typedef struct CUaccessPolicyWindow_st {
  void* base_ptr;
  size_t num_bytes;
  float hitRatio;
  CUaccessProperty hitProp;
  CUaccessProperty missProp;
} CUaccessPolicyWindow_v1;
typedef CUaccessPolicyWindow_v1 CUaccessPolicyWindow;

typedef enum CUsynchronizationPolicy_enum {
  CU_SYNC_POLICY_AUTO = 1,
  CU_SYNC_POLICY_SPIN = 2,
  CU_SYNC_POLICY_YIELD = 3,
  CU_SYNC_POLICY_BLOCKING_SYNC = 4,
} CUsynchronizationPolicy;

typedef enum CUclusterSchedulingPolicy_enum {
  CU_CLUSTER_SCHEDULING_POLICY_DEFAULT = 0,
  CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
  CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING = 2,
} CUclusterSchedulingPolicy;

typedef enum CUlaunchMemSyncDomain_enum {
  CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT = 0,
  CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE = 1,
} CUlaunchMemSyncDomain;

typedef struct CUlaunchMemSyncDomainMap_st {
  unsigned char default_;
  unsigned char remote;
} CUlaunchMemSyncDomainMap;

typedef enum CUlaunchAttributeID_enum {
  CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
  CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
  CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
  CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = 9,
  CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN = 10,
  CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION = 11,
  CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12,
  CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE = 13,
  CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 14,
  CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING = 16,
  CU_LAUNCH_ATTRIBUTE_MAX = 17,
} CUlaunchAttributeID;

// 64 bytes whatever the attribute; `pad` fixes the size.
typedef union CUlaunchAttributeValue_union {
  char pad[64];
  CUaccessPolicyWindow accessPolicyWindow;
  int cooperative;
  CUsynchronizationPolicy syncPolicy;
  struct {
    unsigned int x;
    unsigned int y;
    unsigned int z;
  } clusterDim;
  CUclusterSchedulingPolicy clusterSchedulingPolicyPreference;
  int programmaticStreamSerializationAllowed;
  struct {
    CUevent event;
    int flags;
    int triggerAtBlockStart;
  } programmaticEvent;
  struct {
    CUevent event;
    int flags;
  } launchCompletionEvent;
  int priority;
  CUlaunchMemSyncDomainMap memSyncDomainMap;
  CUlaunchMemSyncDomain memSyncDomain;
  struct {
    unsigned int x;
    unsigned int y;
    unsigned int z;
  } preferredClusterDim;
  struct {
    int deviceUpdatable;
    CUgraphDeviceNode devNode;
  } deviceUpdatableKernelNode;
  unsigned int sharedMemCarveout;
  unsigned int nvlinkUtilCentricScheduling;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];  // value starts at offset 8
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

// Argument of the deprecated cuLaunchCooperativeKernelMultiDevice: one launch per device.
typedef struct CUDA_LAUNCH_PARAMS_st {
  CUfunction function;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  void** kernelParams;
} CUDA_LAUNCH_PARAMS_v1;
typedef CUDA_LAUNCH_PARAMS_v1 CUDA_LAUNCH_PARAMS;

#define CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC   0x01
#define CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC  0x02

// cuParamSetTexRef's texture unit: the one the module's texture reference names.
#define CU_PARAM_TR_DEFAULT -1

// ---------------------------------------------------------------- graphs and stream capture
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
} CUstreamCaptureMode;

typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
} CUstreamCaptureStatus;

typedef enum CUgraphInstantiate_flags_enum {
  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2,
  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH = 4,
  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8,
} CUgraphInstantiate_flags;

typedef enum CUgraphInstantiateResult_enum {
  CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
  CUDA_GRAPH_INSTANTIATE_ERROR = 1,
  CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
  CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
  CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4,
  CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED = 5,
} CUgraphInstantiateResult;

typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

typedef struct CUDA_KERNEL_NODE_PARAMS_st {
  CUfunction func;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
} CUDA_KERNEL_NODE_PARAMS_v1;

// v2 adds a kernel/context pair; the unversioned name means v2 since CUDA 12.0.
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  CUfunction func;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;
typedef CUDA_KERNEL_NODE_PARAMS_v2 CUDA_KERNEL_NODE_PARAMS;

typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v1_st {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;  // out
} CUDA_MEM_ALLOC_NODE_PARAMS_v1;
typedef CUDA_MEM_ALLOC_NODE_PARAMS_v1 CUDA_MEM_ALLOC_NODE_PARAMS;

typedef enum CUgraphNodeType_enum {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_MEMSET = 2,
  CU_GRAPH_NODE_TYPE_HOST = 3,
  CU_GRAPH_NODE_TYPE_GRAPH = 4,
  CU_GRAPH_NODE_TYPE_EMPTY = 5,
  CU_GRAPH_NODE_TYPE_WAIT_EVENT = 6,
  CU_GRAPH_NODE_TYPE_EVENT_RECORD = 7,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL = 8,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT = 9,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11,
  CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12,
  CU_GRAPH_NODE_TYPE_CONDITIONAL = 13,
} CUgraphNodeType;

// How cuGraphAddNode embeds a child graph: a clone (no memory nodes allowed in it), or the
// graph itself, moved into (and from then on owned by) the parent.
typedef enum CUgraphChildGraphNodeOwnership_enum {
  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE = 0,
  CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE = 1,
} CUgraphChildGraphNodeOwnership;

// Same layout as v2; the member of CUgraphNodeParams.
typedef struct CUDA_KERNEL_NODE_PARAMS_v3_st {
  CUfunction func;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v3;

// Same layout as v1; the member of CUgraphNodeParams.
typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v2_st {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;  // out
} CUDA_MEM_ALLOC_NODE_PARAMS_v2;

typedef struct CUDA_MEM_FREE_NODE_PARAMS_st {
  CUdeviceptr dptr;
} CUDA_MEM_FREE_NODE_PARAMS;

typedef struct CUDA_CHILD_GRAPH_NODE_PARAMS_st {
  CUgraph graph;
  CUgraphChildGraphNodeOwnership ownership;
} CUDA_CHILD_GRAPH_NODE_PARAMS;

// An edge's data (cuGraphAddNode_v2): all zero is the default full dependency.
typedef struct CUgraphEdgeData_st {
  unsigned char from_port;
  unsigned char to_port;
  unsigned char type;
  unsigned char reserved[5];
} CUgraphEdgeData;

// The node kinds of graphs beyond kernels, allocations and child graphs.
typedef struct CUuserObject_st* CUuserObject;
typedef cuuint64_t CUgraphConditionalHandle;

typedef struct CUDA_MEMSET_NODE_PARAMS_st {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value;
  unsigned int elementSize;  // 1, 2 or 4
  size_t width;              // in elements
  size_t height;
} CUDA_MEMSET_NODE_PARAMS_v1;
typedef CUDA_MEMSET_NODE_PARAMS_v1 CUDA_MEMSET_NODE_PARAMS;

typedef struct CUDA_MEMSET_NODE_PARAMS_v2_st {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value;
  unsigned int elementSize;
  size_t width;
  size_t height;
  CUcontext ctx;
} CUDA_MEMSET_NODE_PARAMS_v2;

typedef struct CUDA_HOST_NODE_PARAMS_st {
  CUhostFn fn;
  void* userData;
} CUDA_HOST_NODE_PARAMS_v1;
typedef CUDA_HOST_NODE_PARAMS_v1 CUDA_HOST_NODE_PARAMS;

typedef struct CUDA_HOST_NODE_PARAMS_v2_st {
  CUhostFn fn;
  void* userData;
} CUDA_HOST_NODE_PARAMS_v2;

typedef struct CUDA_MEMCPY_NODE_PARAMS_st {
  int flags;
  int reserved;
  CUcontext copyCtx;
  CUDA_MEMCPY3D copyParams;
} CUDA_MEMCPY_NODE_PARAMS;

typedef struct CUDA_EVENT_RECORD_NODE_PARAMS_st {
  CUevent event;
} CUDA_EVENT_RECORD_NODE_PARAMS;

typedef struct CUDA_EVENT_WAIT_NODE_PARAMS_st {
  CUevent event;
} CUDA_EVENT_WAIT_NODE_PARAMS;

typedef struct CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_st {
  CUexternalSemaphore* extSemArray;
  const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray;
  unsigned int numExtSems;
} CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1;
typedef CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v1 CUDA_EXT_SEM_SIGNAL_NODE_PARAMS;

typedef struct CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v2_st {
  CUexternalSemaphore* extSemArray;
  const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray;
  unsigned int numExtSems;
} CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v2;

typedef struct CUDA_EXT_SEM_WAIT_NODE_PARAMS_st {
  CUexternalSemaphore* extSemArray;
  const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray;
  unsigned int numExtSems;
} CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1;
typedef CUDA_EXT_SEM_WAIT_NODE_PARAMS_v1 CUDA_EXT_SEM_WAIT_NODE_PARAMS;

typedef struct CUDA_EXT_SEM_WAIT_NODE_PARAMS_v2_st {
  CUexternalSemaphore* extSemArray;
  const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray;
  unsigned int numExtSems;
} CUDA_EXT_SEM_WAIT_NODE_PARAMS_v2;

typedef struct CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st {
  CUcontext ctx;
  unsigned int count;
  CUstreamBatchMemOpParams* paramArray;
  unsigned int flags;
} CUDA_BATCH_MEM_OP_NODE_PARAMS_v1;
typedef CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 CUDA_BATCH_MEM_OP_NODE_PARAMS;

typedef struct CUDA_BATCH_MEM_OP_NODE_PARAMS_v2_st {
  CUcontext ctx;
  unsigned int count;
  CUstreamBatchMemOpParams* paramArray;
  unsigned int flags;
} CUDA_BATCH_MEM_OP_NODE_PARAMS_v2;

typedef enum CUgraphConditionalNodeType_enum {
  CU_GRAPH_COND_TYPE_IF = 0,
  CU_GRAPH_COND_TYPE_WHILE = 1,
  CU_GRAPH_COND_TYPE_SWITCH = 2,
} CUgraphConditionalNodeType;

#define CU_GRAPH_COND_ASSIGN_DEFAULT 0x1

typedef struct CUDA_CONDITIONAL_NODE_PARAMS {
  CUgraphConditionalHandle handle;
  CUgraphConditionalNodeType type;
  unsigned int size;
  CUgraph* phGraph_out;  // out: the body graphs, owned by the node
  CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;

typedef enum CUgraphDependencyType_enum {
  CU_GRAPH_DEPENDENCY_TYPE_DEFAULT = 0,
  CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1,
} CUgraphDependencyType;

#define CU_GRAPH_KERNEL_NODE_PORT_DEFAULT 0
#define CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC 1
#define CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER 2

typedef enum CUgraphExecUpdateResult_enum {
  CU_GRAPH_EXEC_UPDATE_SUCCESS = 0x0,
  CU_GRAPH_EXEC_UPDATE_ERROR = 0x1,
  CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 0x2,
  CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 0x3,
  CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 0x4,
  CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 0x5,
  CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 0x6,
  CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 0x7,
  CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 0x8,
} CUgraphExecUpdateResult;

typedef struct CUgraphExecUpdateResultInfo_st {
  CUgraphExecUpdateResult result;
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo_v1;
typedef CUgraphExecUpdateResultInfo_v1 CUgraphExecUpdateResultInfo;

typedef enum CUstreamUpdateCaptureDependencies_flags_enum {
  CU_STREAM_ADD_CAPTURE_DEPENDENCIES = 0x0,
  CU_STREAM_SET_CAPTURE_DEPENDENCIES = 0x1,
} CUstreamUpdateCaptureDependencies_flags;

typedef enum CUgraphDebugDot_flags_enum {
  CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE = 1 << 0,
  CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES = 1 << 1,
  CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS = 1 << 2,
  CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS = 1 << 3,
  CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS = 1 << 4,
  CU_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS = 1 << 5,
  CU_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS = 1 << 6,
  CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_SIGNAL_NODE_PARAMS = 1 << 7,
  CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_WAIT_NODE_PARAMS = 1 << 8,
  CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES = 1 << 9,
  CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES = 1 << 10,
  CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS = 1 << 11,
  CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS = 1 << 12,
  CU_GRAPH_DEBUG_DOT_FLAGS_BATCH_MEM_OP_NODE_PARAMS = 1 << 13,
  CU_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO = 1 << 14,
  CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS = 1 << 15,
} CUgraphDebugDot_flags;

typedef enum CUuserObject_flags_enum {
  CU_USER_OBJECT_NO_DESTRUCTOR_SYNC = 1,
} CUuserObject_flags;

typedef enum CUuserObjectRetain_flags_enum {
  CU_GRAPH_USER_OBJECT_MOVE = 1,
} CUuserObjectRetain_flags;

// Kernel node and stream attributes are launch attributes under other names.
typedef CUlaunchAttributeID CUkernelNodeAttrID;
typedef CUlaunchAttributeValue CUkernelNodeAttrValue_v1;
typedef CUkernelNodeAttrValue_v1 CUkernelNodeAttrValue;
typedef CUlaunchAttributeID CUstreamAttrID;
typedef CUlaunchAttributeValue CUstreamAttrValue_v1;
typedef CUstreamAttrValue_v1 CUstreamAttrValue;
#define CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
#define CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
#define CU_STREAM_ATTRIBUTE_PRIORITY CU_LAUNCH_ATTRIBUTE_PRIORITY
#define CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP
#define CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
#define CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
#define CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE CU_LAUNCH_ATTRIBUTE_COOPERATIVE
#define CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
#define CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
#define CU_KERNEL_NODE_ATTRIBUTE_PRIORITY CU_LAUNCH_ATTRIBUTE_PRIORITY
#define CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP
#define CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
#define CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION
#define CU_KERNEL_NODE_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE
#define CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT

// Argument of cuGraphAddNode[_v2] and cuGraph[Exec]NodeSetParams; the padding member gives
// the union its full size.
typedef struct CUgraphNodeParams_st {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_KERNEL_NODE_PARAMS_v3 kernel;
    CUDA_MEMCPY_NODE_PARAMS memcpy;
    CUDA_MEMSET_NODE_PARAMS_v2 memset;
    CUDA_HOST_NODE_PARAMS_v2 host;
    CUDA_CHILD_GRAPH_NODE_PARAMS graph;
    CUDA_EVENT_WAIT_NODE_PARAMS eventWait;
    CUDA_EVENT_RECORD_NODE_PARAMS eventRecord;
    CUDA_EXT_SEM_SIGNAL_NODE_PARAMS_v2 extSemSignal;
    CUDA_EXT_SEM_WAIT_NODE_PARAMS_v2 extSemWait;
    CUDA_MEM_ALLOC_NODE_PARAMS_v2 alloc;
    CUDA_MEM_FREE_NODE_PARAMS free;
    CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 memOp;
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
  };
  long long reserved2;
} CUgraphNodeParams;

typedef enum CUgraphMem_attribute_enum {
  CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0,
  CU_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3,
} CUgraphMem_attribute;

// ---------------------------------------------------------------- tensor maps
#define CU_TENSOR_MAP_NUM_QWORDS 16
// An opaque 128-byte descriptor of a tensor for the Tensor Memory Accelerator.
typedef struct CUtensorMap_st {
#if defined(__cplusplus) && (__cplusplus >= 201103L)
  alignas(128)
#elif __STDC_VERSION__ >= 201112L
  _Alignas(128)
#endif
      cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;

typedef enum CUtensorMapDataType_enum {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_UINT16,
  CU_TENSOR_MAP_DATA_TYPE_UINT32,
  CU_TENSOR_MAP_DATA_TYPE_INT32,
  CU_TENSOR_MAP_DATA_TYPE_UINT64,
  CU_TENSOR_MAP_DATA_TYPE_INT64,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
  CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B,
} CUtensorMapDataType;

typedef enum CUtensorMapInterleave_enum {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_INTERLEAVE_16B,
  CU_TENSOR_MAP_INTERLEAVE_32B,
} CUtensorMapInterleave;

typedef enum CUtensorMapSwizzle_enum {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B,
  CU_TENSOR_MAP_SWIZZLE_64B,
  CU_TENSOR_MAP_SWIZZLE_128B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
} CUtensorMapSwizzle;

typedef enum CUtensorMapL2promotion_enum {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
} CUtensorMapL2promotion;

typedef enum CUtensorMapFloatOOBfill_enum {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
} CUtensorMapFloatOOBfill;

typedef enum CUtensorMapIm2ColWideMode_enum {
  CU_TENSOR_MAP_IM2COL_WIDE_MODE_W = 0,
  CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
} CUtensorMapIm2ColWideMode;

// ---------------------------------------------------------------- platform features
// Async notifications (cuDeviceRegisterAsyncNotification).
typedef struct CUasyncCallbackEntry_st* CUasyncCallbackHandle;
typedef enum CUasyncNotificationType_enum {
  CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET = 0x1,
} CUasyncNotificationType;
typedef struct CUasyncNotificationInfo_st {
  CUasyncNotificationType type;
  union {
    struct {
      unsigned long long bytesOverBudget;
    } overBudget;
  } info;
} CUasyncNotificationInfo;
typedef void (*CUasyncCallback)(CUasyncNotificationInfo* info, void* userData, CUasyncCallbackHandle callback);

// GPUDirect RDMA write flushing (cuFlushGPUDirectRDMAWrites).
typedef enum CUflushGPUDirectRDMAWritesTarget_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX = 0,
} CUflushGPUDirectRDMAWritesTarget;
typedef enum CUflushGPUDirectRDMAWritesScope_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER = 100,
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES = 200,
} CUflushGPUDirectRDMAWritesScope;
typedef enum CUflushGPUDirectRDMAWritesOptions_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST = 1 << 0,
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_MEMOPS = 1 << 1,
} CUflushGPUDirectRDMAWritesOptions;

// Handles for address ranges (cuMemGetHandleForAddressRange).
typedef enum CUmemRangeHandleType_enum {
  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1,
  CU_MEM_RANGE_HANDLE_TYPE_MAX = 0x7FFFFFFF,
} CUmemRangeHandleType;
typedef enum CUmemRangeFlags_enum {
  CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE = 0x1,
} CUmemRangeFlags;

// Atomic operations over a link (cuDeviceGetHostAtomicCapabilities, cuDeviceGetP2PAtomicCapabilities).
typedef enum CUatomicOperation_enum {
  CU_ATOMIC_OPERATION_INTEGER_ADD = 0,
  CU_ATOMIC_OPERATION_INTEGER_MIN = 1,
  CU_ATOMIC_OPERATION_INTEGER_MAX = 2,
  CU_ATOMIC_OPERATION_INTEGER_INCREMENT = 3,
  CU_ATOMIC_OPERATION_INTEGER_DECREMENT = 4,
  CU_ATOMIC_OPERATION_AND = 5,
  CU_ATOMIC_OPERATION_OR = 6,
  CU_ATOMIC_OPERATION_XOR = 7,
  CU_ATOMIC_OPERATION_EXCHANGE = 8,
  CU_ATOMIC_OPERATION_CAS = 9,
  CU_ATOMIC_OPERATION_FLOAT_ADD = 10,
  CU_ATOMIC_OPERATION_FLOAT_MIN = 11,
  CU_ATOMIC_OPERATION_FLOAT_MAX = 12,
  CU_ATOMIC_OPERATION_MAX,
} CUatomicOperation;
typedef enum CUatomicOperationCapability_enum {
  CU_ATOMIC_CAPABILITY_SIGNED = 1u << 0,
  CU_ATOMIC_CAPABILITY_UNSIGNED = 1u << 1,
  CU_ATOMIC_CAPABILITY_REDUCTION = 1u << 2,
  CU_ATOMIC_CAPABILITY_SCALAR_32 = 1u << 3,
  CU_ATOMIC_CAPABILITY_SCALAR_64 = 1u << 4,
  CU_ATOMIC_CAPABILITY_SCALAR_128 = 1u << 5,
  CU_ATOMIC_CAPABILITY_VECTOR_32x4 = 1u << 6,
} CUatomicOperationCapability;

// GPU coredump settings (cuCoredumpGet/SetAttribute[Global]).
typedef enum CUcoredumpSettings_enum {
  CU_COREDUMP_ENABLE_ON_EXCEPTION = 1,
  CU_COREDUMP_TRIGGER_HOST,
  CU_COREDUMP_LIGHTWEIGHT,
  CU_COREDUMP_ENABLE_USER_TRIGGER,
  CU_COREDUMP_FILE,
  CU_COREDUMP_PIPE,
  CU_COREDUMP_GENERATION_FLAGS,
  CU_COREDUMP_MAX,
} CUcoredumpSettings;
typedef enum CUCoredumpGenerationFlags {
  CU_COREDUMP_DEFAULT_FLAGS = 0,
  CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES = (1 << 0),
  CU_COREDUMP_SKIP_GLOBAL_MEMORY = (1 << 1),
  CU_COREDUMP_SKIP_SHARED_MEMORY = (1 << 2),
  CU_COREDUMP_SKIP_LOCAL_MEMORY = (1 << 3),
  CU_COREDUMP_SKIP_ABORT = (1 << 4),
  CU_COREDUMP_SKIP_CONSTBANK_MEMORY = (1 << 5),
  CU_COREDUMP_LIGHTWEIGHT_FLAGS = CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES | CU_COREDUMP_SKIP_GLOBAL_MEMORY |
                                  CU_COREDUMP_SKIP_SHARED_MEMORY | CU_COREDUMP_SKIP_LOCAL_MEMORY |
                                  CU_COREDUMP_SKIP_CONSTBANK_MEMORY,
} CUCoredumpGenerationFlags;

// Memory decompression (cuMemBatchDecompressAsync).
typedef enum CUmemDecompressAlgorithm_enum {
  CU_MEM_DECOMPRESS_UNSUPPORTED = 0,
  CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE = 1 << 0,
  CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY = 1 << 1,
  CU_MEM_DECOMPRESS_ALGORITHM_LZ4 = 1 << 2,
} CUmemDecompressAlgorithm;
typedef struct CUmemDecompressParams_st {
  size_t srcNumBytes;
  size_t dstNumBytes;
  cuuint32_t* dstActBytes;
  const void* src;
  void* dst;
  CUmemDecompressAlgorithm algo;
  unsigned char padding[20];
} CUmemDecompressParams;

// Profiler output (cuProfilerInitialize, deprecated).
typedef enum CUoutput_mode_enum {
  CU_OUT_KEY_VALUE_PAIR = 0x00,
  CU_OUT_CSV = 0x01,
} CUoutput_mode;

// ---------------------------------------------------------------- checkpoints, logs, multicast, graphics
typedef enum CUprocessState_enum {
  CU_PROCESS_STATE_RUNNING = 0,
  CU_PROCESS_STATE_LOCKED,
  CU_PROCESS_STATE_CHECKPOINTED,
  CU_PROCESS_STATE_FAILED,
} CUprocessState;
typedef struct CUcheckpointLockArgs_st {
  unsigned int timeoutMs;
  unsigned int reserved0;
  cuuint64_t reserved1[7];
} CUcheckpointLockArgs;
typedef struct CUcheckpointCheckpointArgs_st {
  cuuint64_t reserved[8];
} CUcheckpointCheckpointArgs;
typedef struct CUcheckpointGpuPair_st {
  CUuuid oldUuid;
  CUuuid newUuid;
} CUcheckpointGpuPair;
typedef struct CUcheckpointRestoreArgs_st {
  CUcheckpointGpuPair* gpuPairs;
  unsigned int gpuPairsCount;
  char reserved[52 - sizeof(CUcheckpointGpuPair*)];
  cuuint64_t reserved1;
} CUcheckpointRestoreArgs;
typedef struct CUcheckpointUnlockArgs_st {
  cuuint64_t reserved[8];
} CUcheckpointUnlockArgs;

typedef enum CUlogLevel_enum {
  CU_LOG_LEVEL_ERROR = 0,
  CU_LOG_LEVEL_WARNING = 1,
} CUlogLevel;
typedef struct CUlogsCallbackEntry_st* CUlogsCallbackHandle;
typedef void (*CUlogsCallback)(void* data, CUlogLevel logLevel, char* message, size_t length);
typedef unsigned int CUlogIterator;

typedef struct CUmulticastObjectProp_st {
  unsigned int numDevices;
  size_t size;
  unsigned long long handleTypes;
  unsigned long long flags;
} CUmulticastObjectProp_v1;
typedef CUmulticastObjectProp_v1 CUmulticastObjectProp;
typedef enum CUmulticastGranularity_flags_enum {
  CU_MULTICAST_GRANULARITY_MINIMUM = 0x0,
  CU_MULTICAST_GRANULARITY_RECOMMENDED = 0x1,
} CUmulticastGranularity_flags;

typedef struct CUgraphicsResource_st* CUgraphicsResource;
typedef enum CUgraphicsMapResourceFlags_enum {
  CU_GRAPHICS_MAP_RESOURCE_FLAGS_NONE = 0x00,
  CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY = 0x01,
  CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD = 0x02,
} CUgraphicsMapResourceFlags;

// ---------------------------------------------------------------- green contexts and device resources
typedef struct CUdevResourceDesc_st* CUdevResourceDesc;

typedef enum {
  CU_GREEN_CTX_DEFAULT_STREAM = 0x1,  // required
} CUgreenCtxCreate_flags;

typedef enum {
  CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING = 0x1,
  CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 0x2,
} CUdevSmResourceSplit_flags;

typedef enum {
  CU_DEV_RESOURCE_TYPE_INVALID = 0,
  CU_DEV_RESOURCE_TYPE_SM = 1,
} CUdevResourceType;

typedef struct CUdevSmResource_st {
  unsigned int smCount;
  unsigned int minSmPartitionSize;
  unsigned int smCoscheduledAlignment;
} CUdevSmResource;

// A resource: `type` says which union member is set; the padding is the driver's own.
typedef struct CUdevResource_st {
  CUdevResourceType type;
  unsigned char _internal_padding[92];
  union {
    CUdevSmResource sm;
    unsigned char _oversize[48];
  };
} CUdevResource_v1;
typedef CUdevResource_v1 CUdevResource;

// ---------------------------------------------------------------- textures and surfaces
// Texture and surface objects are 64-bit values, not pointers.
typedef unsigned long long CUtexObject_v1;
typedef CUtexObject_v1 CUtexObject;
typedef unsigned long long CUsurfObject_v1;
typedef CUsurfObject_v1 CUsurfObject;

typedef enum CUaddress_mode_enum {
  CU_TR_ADDRESS_MODE_WRAP = 0,
  CU_TR_ADDRESS_MODE_CLAMP = 1,
  CU_TR_ADDRESS_MODE_MIRROR = 2,
  CU_TR_ADDRESS_MODE_BORDER = 3,
} CUaddress_mode;

typedef enum CUfilter_mode_enum {
  CU_TR_FILTER_MODE_POINT = 0,
  CU_TR_FILTER_MODE_LINEAR = 1,
} CUfilter_mode;

typedef struct CUDA_RESOURCE_DESC_st {
  CUresourcetype resType;
  union {
    struct {
      CUarray hArray;
    } array;
    struct {
      CUmipmappedArray hMipmappedArray;
    } mipmap;
    struct {
      CUdeviceptr devPtr;
      CUarray_format format;
      unsigned int numChannels;
      size_t sizeInBytes;
    } linear;
    struct {
      CUdeviceptr devPtr;
      CUarray_format format;
      unsigned int numChannels;
      size_t width;
      size_t height;
      size_t pitchInBytes;
    } pitch2D;
    struct {
      int reserved[32];
    } reserved;
  } res;
  unsigned int flags;
} CUDA_RESOURCE_DESC_v1;
typedef CUDA_RESOURCE_DESC_v1 CUDA_RESOURCE_DESC;

typedef struct CUDA_TEXTURE_DESC_st {
  CUaddress_mode addressMode[3];
  CUfilter_mode filterMode;
  unsigned int flags;
  unsigned int maxAnisotropy;
  CUfilter_mode mipmapFilterMode;
  float mipmapLevelBias;
  float minMipmapLevelClamp;
  float maxMipmapLevelClamp;
  float borderColor[4];
  int reserved[12];
} CUDA_TEXTURE_DESC_v1;
typedef CUDA_TEXTURE_DESC_v1 CUDA_TEXTURE_DESC;

typedef enum CUresourceViewFormat_enum {
  CU_RES_VIEW_FORMAT_NONE = 0x00,
  CU_RES_VIEW_FORMAT_UINT_1X8 = 0x01,
  CU_RES_VIEW_FORMAT_UINT_2X8 = 0x02,
  CU_RES_VIEW_FORMAT_UINT_4X8 = 0x03,
  CU_RES_VIEW_FORMAT_SINT_1X8 = 0x04,
  CU_RES_VIEW_FORMAT_SINT_2X8 = 0x05,
  CU_RES_VIEW_FORMAT_SINT_4X8 = 0x06,
  CU_RES_VIEW_FORMAT_UINT_1X16 = 0x07,
  CU_RES_VIEW_FORMAT_UINT_2X16 = 0x08,
  CU_RES_VIEW_FORMAT_UINT_4X16 = 0x09,
  CU_RES_VIEW_FORMAT_SINT_1X16 = 0x0a,
  CU_RES_VIEW_FORMAT_SINT_2X16 = 0x0b,
  CU_RES_VIEW_FORMAT_SINT_4X16 = 0x0c,
  CU_RES_VIEW_FORMAT_UINT_1X32 = 0x0d,
  CU_RES_VIEW_FORMAT_UINT_2X32 = 0x0e,
  CU_RES_VIEW_FORMAT_UINT_4X32 = 0x0f,
  CU_RES_VIEW_FORMAT_SINT_1X32 = 0x10,
  CU_RES_VIEW_FORMAT_SINT_2X32 = 0x11,
  CU_RES_VIEW_FORMAT_SINT_4X32 = 0x12,
  CU_RES_VIEW_FORMAT_FLOAT_1X16 = 0x13,
  CU_RES_VIEW_FORMAT_FLOAT_2X16 = 0x14,
  CU_RES_VIEW_FORMAT_FLOAT_4X16 = 0x15,
  CU_RES_VIEW_FORMAT_FLOAT_1X32 = 0x16,
  CU_RES_VIEW_FORMAT_FLOAT_2X32 = 0x17,
  CU_RES_VIEW_FORMAT_FLOAT_4X32 = 0x18,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC1 = 0x19,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC2 = 0x1a,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC3 = 0x1b,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC4 = 0x1c,
  CU_RES_VIEW_FORMAT_SIGNED_BC4 = 0x1d,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC5 = 0x1e,
  CU_RES_VIEW_FORMAT_SIGNED_BC5 = 0x1f,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC6H = 0x20,
  CU_RES_VIEW_FORMAT_SIGNED_BC6H = 0x21,
  CU_RES_VIEW_FORMAT_UNSIGNED_BC7 = 0x22,
} CUresourceViewFormat;

typedef struct CUDA_RESOURCE_VIEW_DESC_st {
  CUresourceViewFormat format;
  size_t width;
  size_t height;
  size_t depth;
  unsigned int firstMipmapLevel;
  unsigned int lastMipmapLevel;
  unsigned int firstLayer;
  unsigned int lastLayer;
  unsigned int reserved[16];
} CUDA_RESOURCE_VIEW_DESC_v1;
typedef CUDA_RESOURCE_VIEW_DESC_v1 CUDA_RESOURCE_VIEW_DESC;

// cuTexRefSetArray's only flag; the sampling flags of texture references and objects.
#define CU_TRSA_OVERRIDE_FORMAT 0x01
#define CU_TRSF_READ_AS_INTEGER         0x01
#define CU_TRSF_NORMALIZED_COORDINATES  0x02
#define CU_TRSF_SRGB  0x10
#define CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION  0x20
#define CU_TRSF_SEAMLESS_CUBEMAP  0x40

// ---------------------------------------------------------------- driver entry points
typedef enum CUdriverProcAddress_flags_enum {
  CU_GET_PROC_ADDRESS_DEFAULT = 0x0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 0x1,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 0x2,
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

#endif  // !__cuda_cuda_h__ && !FGPU_ABI_NO_TYPES
#endif  // FGPU_CORE_ABI_CUDA_TYPES_H
