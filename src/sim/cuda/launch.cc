#include "sim/cuda/launch.h"

#include <cstring>
#include <memory>

#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

namespace fgpu::sim::cuda {
namespace {

constexpr unsigned kMaxBlockThreads = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535u, 65535u};
constexpr unsigned kMaxResidentThreadsPerSm = 2048;
constexpr unsigned kMaxResidentBlocksPerSm = 32;

// The first kernel argument of `fgpu_spin` (u64 nanoseconds), from either parameter form.
uint64_t SpinParameter(void** kernel_params, void** extra) {
  uint64_t ns = 0;
  if (kernel_params != nullptr && kernel_params[0] != nullptr) {
    std::memcpy(&ns, kernel_params[0], sizeof(ns));
    return ns;
  }
  for (void** it = extra; it != nullptr && *it != CU_LAUNCH_PARAM_END; it += 2) {
    if (it[0] == CU_LAUNCH_PARAM_BUFFER_POINTER && it[1] != nullptr) {
      std::memcpy(&ns, it[1], sizeof(ns));
      return ns;
    }
  }
  return 0;
}

}  // namespace

CUresult PrepareLaunch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                       void** kernel_params, void** extra, bool cooperative, KernelLaunch* out) {
  Runtime& rt = Runtime::Get();
  if (CUresult rc = rt.RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = rt.CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  Function* function = HandleRegistry::Get().Lookup<Function>(f, Kind::kFunction);
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (kernel_params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (grid[axis] == 0 || block[axis] == 0) return CUDA_ERROR_INVALID_VALUE;
    if (grid[axis] > kMaxGridDim[axis] || block[axis] > kMaxBlockDim[axis]) return CUDA_ERROR_INVALID_VALUE;
    threads *= block[axis];
  }
  if (threads > kMaxBlockThreads) return CUDA_ERROR_INVALID_VALUE;
  if (shared_bytes > static_cast<unsigned>(function->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
  if (cooperative) {
    const uint64_t blocks = uint64_t{grid[0]} * grid[1] * grid[2];
    const uint64_t per_sm = std::min<uint64_t>(kMaxResidentBlocksPerSm, kMaxResidentThreadsPerSm / threads);
    if (blocks > per_sm * static_cast<uint64_t>(rt.spec(ctx->device).sm_count)) {
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
  }
  out->function = function;
  std::memcpy(out->grid, grid, sizeof(out->grid));
  std::memcpy(out->block, block, sizeof(out->block));
  out->shared_bytes = shared_bytes;
  out->param_ns = function->duration_from_param ? SpinParameter(kernel_params, extra) : 0;
  return CUDA_SUCCESS;
}

uint64_t KernelDurationNs(const KernelLaunch& launch, int device) {
  const uint64_t blocks = uint64_t{launch.grid[0]} * launch.grid[1] * launch.grid[2];
  const auto sms = static_cast<uint64_t>(Runtime::Get().spec(device).sm_count);
  const uint64_t waves = (blocks + sms - 1) / sms;
  const uint64_t wave_ns = launch.function->duration_from_param ? launch.param_ns : launch.function->wave_ns;
  return waves * wave_ns;
}

CUresult ExecuteLaunch(const KernelLaunch& launch, CUstream stream_handle, bool per_thread) {
  Runtime& rt = Runtime::Get();
  Stream* stream = nullptr;
  if (CUresult rc = rt.ResolveStream(stream_handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (Graph* graph = stream->capture.load()) {
    auto node = std::make_unique<GraphNode>();
    node->type = GraphNode::Type::kKernel;
    node->kernel = launch;
    node->device = stream->ctx->device;
    node->kernel_params.func = launch.function != nullptr ? reinterpret_cast<CUfunction>(launch.function) : nullptr;
    node->kernel_params.gridDimX = launch.grid[0];
    node->kernel_params.gridDimY = launch.grid[1];
    node->kernel_params.gridDimZ = launch.grid[2];
    node->kernel_params.blockDimX = launch.block[0];
    node->kernel_params.blockDimY = launch.block[1];
    node->kernel_params.blockDimZ = launch.block[2];
    node->kernel_params.sharedMemBytes = launch.shared_bytes;
    node->kernel_params.ctx = reinterpret_cast<CUcontext>(stream->ctx);
    AppendCapturedNode(*graph, std::move(node));
    return CUDA_SUCCESS;
  }
  const uint64_t duration = KernelDurationNs(launch, stream->ctx->device);
  RunOrHold(*stream, [&rt, stream, duration] { rt.EnqueueWork(*stream, duration); });
  return CUDA_SUCCESS;
}

}  // namespace fgpu::sim::cuda
