// Contexts: primary contexts, created contexts, the per-thread current-context stack.
#include <algorithm>
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Ready;
using fgpu::sim::cuda::Runtime;

namespace {

constexpr unsigned kContextFlagsMask = 0xFF;  // CU_CTX_FLAGS_MASK

CUresult Create(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr || (flags & ~kContextFlagsMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CreateContext(dev, flags, &ctx); rc != CUDA_SUCCESS) return rc;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult Synchronize(Context* ctx) {
  fgpu::sim::cuda::WaitContextReleased(ctx);
  Runtime::SleepUntil(ctx->tail_ns.load());
  fgpu::sim::cuda::TrimPoolsAfterSync(ctx->device);
  return CUDA_SUCCESS;
}

// What a context's stack, heap and FIFO limits reserve on the device beyond the defaults its
// creation paid for (the context overhead): the heap and the FIFO as set, the stack for every
// thread the device can hold at once (cuda.h: "reservations of device memory" that
// cuCtxSetLimit makes, failing with CUDA_ERROR_OUT_OF_MEMORY).
uint64_t LimitReservation(const Context& ctx) {
  constexpr uint64_t kThreadsPerSm = 2048;  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
  const Context defaults;
  const uint64_t threads = static_cast<uint64_t>(Runtime::Get().spec(ctx.device).sm_count) * kThreadsPerSm;
  const auto above = [](size_t value, size_t base) -> uint64_t { return value > base ? value - base : 0; };
  return above(ctx.stack_limit, defaults.stack_limit) * threads +
         above(ctx.malloc_heap_limit, defaults.malloc_heap_limit) +
         above(ctx.printf_fifo_limit, defaults.printf_fifo_limit);
}

}  // namespace

extern "C" {

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) { return Create(pctx, flags, dev); }
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) { return Create(pctx, flags, dev); }

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                        CUdevice dev) {
  // Execution affinity (an SM count) only applies under MPS, which the simulator does not run.
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (numParams > 0) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  return Create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags, CUdevice dev) {
  if (ctxCreateParams != nullptr) {
    if (ctxCreateParams->numExecAffinityParams < 0) return CUDA_ERROR_INVALID_VALUE;
    if (ctxCreateParams->numExecAffinityParams > 0) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    if (ctxCreateParams->cigParams != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  }
  return Create(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* context = Runtime::Get().LookupContext(ctx);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return Runtime::Get().DestroyContext(context);
}
CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* context = Runtime::Get().LookupContext(ctx);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Runtime::Get().PushCurrent(context);
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = Runtime::Get().PopCurrent();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (ctx == nullptr) {
    Runtime::Get().SetCurrent(nullptr);
    return CUDA_SUCCESS;
  }
  Context* context = Runtime::Get().LookupContext(ctx);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Runtime::Get().SetCurrent(context);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Unvalidated, like the real driver's (its documented results are SUCCESS, DEINITIALIZED and
  // NOT_INITIALIZED): a context destroyed while bound is reported by the calls that use it.
  *pctx = reinterpret_cast<CUcontext>(Runtime::Get().BoundContext());
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(ctx, &context); rc != CUDA_SUCCESS) return rc;
  *device = context->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  return Synchronize(ctx);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* context = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(ctx, &context); rc != CUDA_SUCCESS) return rc;
  return Synchronize(context);
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(ctx, &context); rc != CUDA_SUCCESS) return rc;
  *version = 3020;  // the context ABI version every driver since 3.2 reports
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if ((flags & ~kContextFlagsMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(ctx, &context); rc != CUDA_SUCCESS) return rc;
  *ctxId = context->id;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pvalue == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(ctx->mu);
  switch (limit) {
    case CU_LIMIT_STACK_SIZE: *pvalue = ctx->stack_limit; return CUDA_SUCCESS;
    case CU_LIMIT_MALLOC_HEAP_SIZE: *pvalue = ctx->malloc_heap_limit; return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *pvalue = ctx->printf_fifo_limit; return CUDA_SUCCESS;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(ctx->mu);
  size_t* slot = nullptr;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE: slot = &ctx->stack_limit; break;
    case CU_LIMIT_MALLOC_HEAP_SIZE: slot = &ctx->malloc_heap_limit; break;
    case CU_LIMIT_PRINTF_FIFO_SIZE: slot = &ctx->printf_fifo_limit; break;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
  const uint64_t before = Runtime::Get().RoundToGranularity(ctx->device, LimitReservation(*ctx));
  const size_t old_value = *slot;
  *slot = value;
  const uint64_t after = Runtime::Get().RoundToGranularity(ctx->device, LimitReservation(*ctx));
  if (after > before && !Runtime::Get().Charge(ctx->device, after - before)) {
    *slot = old_value;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (after < before) Runtime::Get().Credit(ctx->device, before - after);
  ctx->charged_overhead = ctx->charged_overhead - before + after;  // credited with the context
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pconfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(ctx->mu);
  *pconfig = ctx->cache_config;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  int value = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&value, &config, sizeof value);
  if (value < CU_FUNC_CACHE_PREFER_NONE || value > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(ctx->mu);
  ctx->cache_config = config;  // a preference: the simulated L1/shared split does not change
  return CUDA_SUCCESS;
}

// Hopper's shared memory banks are four bytes wide, fixed: the driver reports that size and
// ignores a request for another one (both calls are deprecated).
CUresult cuCtxGetSharedMemConfig(CUsharedconfig* pConfig) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pConfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  int value = 0;
  std::memcpy(&value, &config, sizeof value);
  if (value < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE || value > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;  // Hopper's range
  return CUDA_SUCCESS;
}

// --- primary contexts ---------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().RetainPrimary(dev, &ctx); rc != CUDA_SUCCESS) return rc;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().ReleasePrimary(dev);
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().ResetPrimary(dev);
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Runtime::Get().PrimaryState(dev, flags, active);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().SetPrimaryFlags(dev, flags);
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Context* peer = Runtime::Get().LookupContext(peerContext);
  if (peer == nullptr || peer == ctx) return CUDA_ERROR_INVALID_CONTEXT;
  // cuDeviceCanAccessPeer's answer: another device is a peer, a device is not its own.
  if (peer->device == ctx->device) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  std::lock_guard lock(ctx->mu);
  if (std::find(ctx->peers.begin(), ctx->peers.end(), peer->id) != ctx->peers.end()) {
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  ctx->peers.push_back(peer->id);
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  Context* peer = Runtime::Get().LookupContext(peerContext);
  if (peer == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(ctx->mu);
  const auto enabled = std::find(ctx->peers.begin(), ctx->peers.end(), peer->id);
  if (enabled == ctx->peers.end()) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  ctx->peers.erase(enabled);
  return CUDA_SUCCESS;
}

}  // extern "C"
