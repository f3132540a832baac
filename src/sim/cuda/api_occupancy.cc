// The occupancy calculators, from the device's attributes and what the kernel declares
// (registers, static shared memory), by the rules of NVIDIA's occupancy calculator: a block
// takes whole warps, each warp's registers in units of 256, each block's shared memory (plus
// the per-block reservation) in units of 128 bytes; an SM holds as many blocks as its threads,
// blocks, registers and shared memory all allow. And cuFuncSetCacheConfig, a preference kept.
#include <algorithm>
#include <climits>
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/device_attributes.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Function;
using fgpu::sim::cuda::Guarded;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::Runtime;

namespace {

constexpr int kWarpSize = 32;
constexpr int kRegisterUnit = 256;  // registers are given to a warp in these
constexpr int kSharedUnit = 128;    // shared memory is given to a block in these (bytes)

struct SmLimits {
  int sms = 0;
  int threads = 0;
  int blocks = 0;
  int registers = 0;
  int shared = 0;
  int reserved_per_block = 0;
  int max_shared_per_block = 0;  // opt-in
};

int Attribute(int device, CUdevice_attribute attribute) {
  int value = 0;
  (void)fgpu::sim::cuda::DeviceAttribute(Runtime::Get().spec(device), device, attribute, &value);
  return value;
}

SmLimits LimitsOf(int device) {
  return {Attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
          Attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
          Attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
          Attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
          Attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
          Attribute(device, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK),
          Attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)};
}

int RoundUpTo(int value, int unit) { return (value + unit - 1) / unit * unit; }

// Blocks of `block_size` threads and `dynamic_shared` bytes one SM holds at once.
int BlocksPerSm(const SmLimits& sm, const Function& function, int block_size, size_t dynamic_shared) {
  if (block_size <= 0 || block_size > 1024) return 0;
  const size_t shared_asked = static_cast<size_t>(function.static_shared) + dynamic_shared;
  if (dynamic_shared > static_cast<size_t>(function.max_dynamic_shared) ||
      shared_asked > static_cast<size_t>(sm.max_shared_per_block)) {
    return 0;
  }
  const int warps = (block_size + kWarpSize - 1) / kWarpSize;
  int blocks = std::min(sm.blocks, sm.threads / kWarpSize / warps);
  const int warp_registers = RoundUpTo(function.registers * kWarpSize, kRegisterUnit);
  if (warp_registers > 0) blocks = std::min(blocks, sm.registers / warp_registers / warps);
  const int block_shared = RoundUpTo(static_cast<int>(shared_asked) + sm.reserved_per_block, kSharedUnit);
  if (block_shared > 0) blocks = std::min(blocks, sm.shared / block_shared);
  return std::max(blocks, 0);
}

CUresult Lookup(CUfunction handle, Function** function, int* device) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  *function = HandleRegistry::Get().Lookup<Function>(handle, Kind::kFunction);
  if (*function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // A library's kernel (a CUkernel cast to CUfunction) has no context: the current one's device.
  if (Context* owner = (*function)->module->ctx; owner != nullptr) {
    *device = owner->device;
    return CUDA_SUCCESS;
  }
  Context* current = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&current); rc != CUDA_SUCCESS) return rc;
  *device = current->device;
  return CUDA_SUCCESS;
}

CUresult MaxActiveBlocks(int* num_blocks, CUfunction handle, int block_size, size_t dynamic_shared, unsigned flags) {
  Function* function = nullptr;
  int device = 0;
  if (CUresult rc = Lookup(handle, &function, &device); rc != CUDA_SUCCESS) return rc;
  if (num_blocks == nullptr || block_size <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *num_blocks = BlocksPerSm(LimitsOf(device), *function, block_size, dynamic_shared);
  return CUDA_SUCCESS;
}

// The block size with the most threads resident per SM (the largest on a tie), and the grid
// that fills every SM with it.
CUresult MaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction handle, CUoccupancyB2DSize shared_of,
                               size_t dynamic_shared, int limit, unsigned flags) {
  Function* function = nullptr;
  int device = 0;
  if (CUresult rc = Lookup(handle, &function, &device); rc != CUDA_SUCCESS) return rc;
  if (min_grid == nullptr || block_size == nullptr || limit < 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const SmLimits sm = LimitsOf(device);
  const int most = limit == 0 ? 1024 : std::min(limit, 1024);
  int best_size = 0;
  int best_blocks = 0;
  for (int size = most / kWarpSize * kWarpSize; size > 0; size -= kWarpSize) {
    const size_t shared = shared_of != nullptr ? shared_of(size) : dynamic_shared;
    const int blocks = BlocksPerSm(sm, *function, size, shared);
    if (blocks * size > best_blocks * best_size) {
      best_size = size;
      best_blocks = blocks;
    }
  }
  if (best_size == 0 && most < kWarpSize) {  // a limit below one warp: that many threads
    best_size = most;
    best_blocks = BlocksPerSm(sm, *function, most, shared_of != nullptr ? shared_of(most) : dynamic_shared);
  }
  *block_size = best_size;
  *min_grid = best_blocks * sm.sms;
  return CUDA_SUCCESS;
}

// The most dynamic shared memory a block may ask for with `num_blocks` blocks of `block_size`
// resident on one SM.
CUresult AvailableDynamicShared(size_t* out, CUfunction handle, int num_blocks, int block_size) {
  Function* function = nullptr;
  int device = 0;
  if (CUresult rc = Lookup(handle, &function, &device); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || num_blocks <= 0 || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  const SmLimits sm = LimitsOf(device);
  if (BlocksPerSm(sm, *function, block_size, 0) < num_blocks) {
    *out = 0;
    return CUDA_SUCCESS;
  }
  const int per_block = sm.shared / num_blocks / kSharedUnit * kSharedUnit - sm.reserved_per_block - function->static_shared;
  const int cap = std::min(function->max_dynamic_shared, sm.max_shared_per_block - function->static_shared);
  *out = static_cast<size_t>(std::clamp(per_block, 0, std::max(cap, 0)));
  return CUDA_SUCCESS;
}

// Clusters (compute capability 9.0): a cluster's blocks run at once on the SMs of one GPC. The
// simulated device's SMs are spread evenly over GPCs of at most kSmsPerGpc (132 SMs: 8 GPCs of
// 16 or 17); a cluster of up to 8 blocks is portable (16 with the non-portable opt-in, which the
// simulator does not record, so 8 is the most it answers).
constexpr int kSmsPerGpc = 18;
constexpr int kPortableClusterSize = 8;

// The cluster size a launch configuration names (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), 0 if none.
CUresult ConfiguredClusterSize(const CUlaunchConfig& config, int* size) {
  *size = 0;
  if (config.numAttrs > 0 && config.attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    if (config.attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    const auto& dim = config.attrs[i].value.clusterDim;
    if (dim.x == 0 || dim.y == 0 || dim.z == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    const uint64_t blocks = uint64_t{dim.x} * dim.y * dim.z;
    if (blocks > kPortableClusterSize) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *size = static_cast<int>(blocks);
  }
  return CUDA_SUCCESS;
}

CUresult ClusterBlocksPerSm(CUfunction handle, const CUlaunchConfig* config, int* blocks_per_sm, int* device) {
  Function* function = nullptr;
  if (CUresult rc = Lookup(handle, &function, device); rc != CUDA_SUCCESS) return rc;
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (Runtime::Get().spec(*device).cc_major < 9) return CUDA_ERROR_NOT_SUPPORTED;  // no clusters before Hopper
  const uint64_t block = uint64_t{config->blockDimX} * config->blockDimY * config->blockDimZ;
  if (block == 0 || block > 1024) return CUDA_ERROR_INVALID_VALUE;
  *blocks_per_sm = BlocksPerSm(LimitsOf(*device), *function, static_cast<int>(block), config->sharedMemBytes);
  return CUDA_SUCCESS;
}

CUresult MaxPotentialClusterSize(int* cluster_size, CUfunction handle, const CUlaunchConfig* config) {
  int blocks_per_sm = 0, device = 0;
  if (cluster_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = ClusterBlocksPerSm(handle, config, &blocks_per_sm, &device); rc != CUDA_SUCCESS) return rc;
  const int sms = LimitsOf(device).sms;
  const int gpcs = std::max(1, (sms + kSmsPerGpc - 1) / kSmsPerGpc);
  const int smallest_gpc = sms / gpcs;
  *cluster_size = std::min(kPortableClusterSize, blocks_per_sm * smallest_gpc);
  return CUDA_SUCCESS;
}

CUresult MaxActiveClusters(int* clusters, CUfunction handle, const CUlaunchConfig* config) {
  int blocks_per_sm = 0, device = 0;
  if (clusters == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = ClusterBlocksPerSm(handle, config, &blocks_per_sm, &device); rc != CUDA_SUCCESS) return rc;
  int size = 0;
  if (CUresult rc = ConfiguredClusterSize(*config, &size); rc != CUDA_SUCCESS) return rc;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;  // no required size: the configuration must name one
  const int sms = LimitsOf(device).sms;
  const int gpcs = std::max(1, (sms + kSmsPerGpc - 1) / kSmsPerGpc);
  int total = 0;
  for (int gpc = 0; gpc < gpcs; ++gpc) {
    const int gpc_sms = sms / gpcs + (gpc < sms % gpcs ? 1 : 0);
    total += blocks_per_sm * gpc_sms / size;
  }
  *clusters = total;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func, const CUlaunchConfig* config) {
  return fgpu::sim::cuda::Guarded([&] { return MaxActiveClusters(numClusters, func, config); });
}

CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func, const CUlaunchConfig* config) {
  return fgpu::sim::cuda::Guarded([&] { return MaxPotentialClusterSize(clusterSize, func, config); });
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  return Guarded([&] { return MaxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, 0); });
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunction func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags) {
  return Guarded([&] { return MaxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, flags); });
}
CUresult cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                          int blockSizeLimit) {
  return Guarded([&] {
    return MaxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                 blockSizeLimit, 0);
  });
}
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize, CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags) {
  return Guarded([&] {
    return MaxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                                 blockSizeLimit, flags);
  });
}
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func, int numBlocks,
                                                 int blockSize) {
  return Guarded([&] { return AvailableDynamicShared(dynamicSmemSize, func, numBlocks, blockSize); });
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Function* function = HandleRegistry::Get().Lookup<Function>(hfunc, Kind::kFunction);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int value = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&value, &config, sizeof value);
  if (value < CU_FUNC_CACHE_PREFER_NONE || value > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  function->cache_config = config;  // a preference: the simulated L1/shared split does not change
  return CUDA_SUCCESS;
}

}  // extern "C"
