// Kernel launch entry points: cuLaunchKernel and its variants, and the deprecated legacy launches
// (cuParamSet* + cuLaunch / cuLaunchGrid[Async], cuLaunchCooperativeKernelMultiDevice), which go
// through the same validation and device-time model.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/launch.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::ExecuteLaunch;
using fgpu::sim::cuda::Function;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::KernelLaunch;
using fgpu::sim::cuda::PrepareLaunch;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

namespace {

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared, CUstream stream, void** params, void** extra, bool per_thread, bool cooperative) {
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  KernelLaunch launch;
  if (CUresult rc = PrepareLaunch(f, grid, block, shared, params, extra, cooperative, &launch); rc != CUDA_SUCCESS) {
    return rc;
  }
  return ExecuteLaunch(launch, stream, per_thread);
}

CUresult LaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra, bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (config->numAttrs > 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative != 0) {
      cooperative = true;
    }
  }
  return Launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                config->blockDimZ, config->sharedMemBytes, config->hStream, params, extra, per_thread, cooperative);
}


// The largest parameter buffer a kernel takes (32764 bytes since CUDA 12.1 on Volta and later).
constexpr unsigned kMaxLegacyParamBytes = 32764;

CUresult LegacyFunction(CUfunction handle, Function** out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Function>(handle, Kind::kFunction);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// cuParamSet{i,f,v}: `bytes` at `offset` of the function's parameter buffer. Programs set the
// parameters first and the size last, so the bound is the largest buffer, not the size set so far.
CUresult SetLegacyParam(CUfunction handle, int offset, const void* value, unsigned bytes) {
  Function* function = nullptr;
  if (CUresult rc = LegacyFunction(handle, &function); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr && bytes > 0) return CUDA_ERROR_INVALID_VALUE;
  if (offset < 0 || bytes > kMaxLegacyParamBytes || static_cast<unsigned>(offset) > kMaxLegacyParamBytes - bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t end = static_cast<size_t>(offset) + bytes;
  if (function->legacy_params.size() < end) function->legacy_params.resize(end);
  if (bytes > 0) std::memcpy(function->legacy_params.data() + offset, value, bytes);
  return CUDA_SUCCESS;
}

// cuLaunch / cuLaunchGrid[Async]: the block shape, shared size and parameter buffer the legacy calls
// set, passed as cuLaunchKernel's packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
CUresult LegacyLaunch(CUfunction handle, int grid_width, int grid_height, CUstream stream) {
  Function* function = nullptr;
  if (CUresult rc = LegacyFunction(handle, &function); rc != CUDA_SUCCESS) return rc;
  if (grid_width <= 0 || grid_height <= 0) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {static_cast<unsigned>(grid_width), static_cast<unsigned>(grid_height), 1};
  // A shape never set is 0 x 0 x 0, which the launch refuses as cuLaunchKernel would.
  const unsigned block[3] = {static_cast<unsigned>(function->block_shape[0]),
                             static_cast<unsigned>(function->block_shape[1]),
                             static_cast<unsigned>(function->block_shape[2])};
  size_t size = function->legacy_param_size;
  // A copy at least one u64 long: the launch reads the spin kernel's duration from its first 8 bytes.
  std::vector<unsigned char> buffer(std::max<size_t>(size, sizeof(uint64_t)), 0);
  std::copy_n(function->legacy_params.begin(), std::min(size, function->legacy_params.size()), buffer.begin());
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  KernelLaunch launch;
  if (CUresult rc = PrepareLaunch(handle, grid, block, function->shared_size, nullptr, size > 0 ? extra : nullptr,
                                  false, &launch);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  return ExecuteLaunch(launch, stream, false);
}

bool IsDefaultStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

bool SameLaunchShape(const CUDA_LAUNCH_PARAMS& a, const CUDA_LAUNCH_PARAMS& b) {
  return a.gridDimX == b.gridDimX && a.gridDimY == b.gridDimY && a.gridDimZ == b.gridDimZ &&
         a.blockDimX == b.blockDimX && a.blockDimY == b.blockDimY && a.blockDimZ == b.blockDimZ &&
         a.sharedMemBytes == b.sharedMemBytes;
}

// Every launch is validated (created streams, one per device, the function's context the stream's,
// identical shapes, each within the cooperative limit) before any is queued: all run or none.
CUresult LaunchMultiDevice(const CUDA_LAUNCH_PARAMS* list, unsigned count, unsigned flags) {
  Runtime& rt = Runtime::Get();
  if (CUresult rc = rt.RequireInit(); rc != CUDA_SUCCESS) return rc;
  constexpr unsigned kKnownFlags =
      CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC | CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC;
  if (list == nullptr || count == 0 || count > static_cast<unsigned>(rt.device_count()) ||
      (flags & ~kKnownFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<KernelLaunch> launches(count);
  std::vector<int> devices;
  for (unsigned i = 0; i < count; ++i) {
    const CUDA_LAUNCH_PARAMS& params = list[i];
    if (IsDefaultStream(params.hStream) || !SameLaunchShape(params, list[0])) return CUDA_ERROR_INVALID_VALUE;
    Stream* stream = nullptr;
    if (CUresult rc = rt.ResolveStream(params.hStream, false, &stream); rc != CUDA_SUCCESS) return rc;
    Function* function = nullptr;
    if (CUresult rc = LegacyFunction(params.function, &function); rc != CUDA_SUCCESS) return rc;
    if (function->module->ctx != nullptr && function->module->ctx != stream->ctx) return CUDA_ERROR_INVALID_VALUE;
    if (std::find(devices.begin(), devices.end(), stream->ctx->device) != devices.end()) {
      return CUDA_ERROR_INVALID_VALUE;  // no two kernels on one device
    }
    devices.push_back(stream->ctx->device);
    const unsigned grid[3] = {params.gridDimX, params.gridDimY, params.gridDimZ};
    const unsigned block[3] = {params.blockDimX, params.blockDimY, params.blockDimZ};
    if (CUresult rc = PrepareLaunch(params.function, grid, block, params.sharedMemBytes, params.kernelParams,
                                    nullptr, true, &launches[i]);
        rc != CUDA_SUCCESS) {
      return rc;
    }
  }
  for (unsigned i = 0; i < count; ++i) {
    // As documented, the launch replaces the function's legacy block shape, shared size and parameters.
    Function* function = launches[i].function;
    function->block_shape[0] = static_cast<int>(list[i].blockDimX);
    function->block_shape[1] = static_cast<int>(list[i].blockDimY);
    function->block_shape[2] = static_cast<int>(list[i].blockDimZ);
    function->shared_size = list[i].sharedMemBytes;
    function->legacy_params.clear();
    function->legacy_param_size = 0;
    if (CUresult rc = ExecuteLaunch(launches[i], list[i].hStream, false); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, extra, false, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return Launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, extra, true, false);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return LaunchEx(config, f, kernelParams, extra, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return LaunchEx(config, f, kernelParams, extra, true);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void** kernelParams) {
  return Launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, nullptr, false, true);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams) {
  return Launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                kernelParams, nullptr, true, true);
}

CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
  return fgpu::sim::cuda::Guarded([&] {
    Function* function = nullptr;
    if (CUresult rc = LegacyFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
    if (numbytes > kMaxLegacyParamBytes) return CUDA_ERROR_INVALID_VALUE;
    if (function->legacy_params.size() < numbytes) function->legacy_params.resize(numbytes);
    function->legacy_param_size = numbytes;
    return CUDA_SUCCESS;
  });
}

CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
  return fgpu::sim::cuda::Guarded([&] { return SetLegacyParam(hfunc, offset, &value, sizeof value); });
}

CUresult cuParamSetf(CUfunction hfunc, int offset, float value) {
  return fgpu::sim::cuda::Guarded([&] { return SetLegacyParam(hfunc, offset, &value, sizeof value); });
}

CUresult cuParamSetv(CUfunction hfunc, int offset, void* ptr, unsigned int numbytes) {
  return fgpu::sim::cuda::Guarded([&] { return SetLegacyParam(hfunc, offset, ptr, numbytes); });
}

// Documented for module texture references, which the simulator hands none of (cuModuleGetTexRef);
// a live one of cuTexRefCreate's is accepted. Nothing is kept: no simulated kernel samples a texture.
CUresult cuParamSetTexRef(CUfunction hfunc, int texunit, CUtexref hTexRef) {
  Function* function = nullptr;
  if (CUresult rc = LegacyFunction(hfunc, &function); rc != CUDA_SUCCESS) return rc;
  if (texunit != CU_PARAM_TR_DEFAULT || hTexRef == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned flags = 0;  // any live texture reference answers; a stale one is refused
  return cuTexRefGetFlags(&flags, hTexRef);
}

CUresult cuLaunch(CUfunction f) {
  return fgpu::sim::cuda::Guarded([&] { return LegacyLaunch(f, 1, 1, nullptr); });
}

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
  return fgpu::sim::cuda::Guarded([&] { return LegacyLaunch(f, grid_width, grid_height, nullptr); });
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream) {
  return fgpu::sim::cuda::Guarded([&] { return LegacyLaunch(f, grid_width, grid_height, hStream); });
}

CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* launchParamsList, unsigned int numDevices,
                                              unsigned int flags) {
  return fgpu::sim::cuda::Guarded([&] { return LaunchMultiDevice(launchParamsList, numDevices, flags); });
}

}  // extern "C"
