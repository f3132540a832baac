// Exported wrappers: context creation and teardown (green contexts included). The device memory a
// context takes is measured and charged (hook/memory/context_accounting.h); destroying, releasing
// the last reference to, or resetting a context credits it with everything it owned.
#include "hook/compute/compute_gate.h"
#include "hook/interpose/exports.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;

// create(CUcontext*) is the real call of one of the cuCtxCreate variants.
template <typename Create>
CUresult CreateContext(CUcontext* pctx, CUdevice dev, Create&& create) {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return create(pctx);
  return hook->contexts().Create(pctx, dev, create);
}

template <typename Destroy>
CUresult DestroyContext(CUcontext ctx, Destroy&& destroy) {
  fgpu::hook::ComputeContextClosing(ctx, -1);
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return destroy(ctx);
  return hook->contexts().Destroy(ctx, destroy);
}

template <typename Release>
CUresult ReleasePrimary(CUdevice dev, Release&& release) {
  fgpu::hook::ComputeContextClosing(nullptr, dev);
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return release(dev);
  return hook->contexts().ReleasePrimary(dev, release);
}

template <typename Reset>
CUresult ResetPrimary(CUdevice dev, Reset&& reset) {
  fgpu::hook::ComputeContextClosing(nullptr, dev);
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return reset(dev);
  return hook->contexts().ResetPrimary(dev, reset);
}

// The CUcontext of a green context, where its work (and this hook's markers) runs; null if the
// driver cannot say (no green contexts, a bad handle: the destroy then fails on its own).
CUcontext ContextOfGreenContext(CUgreenCtx green) {
  using FromGreen = CUresult (*)(CUcontext*, CUgreenCtx);
  static const auto from_green = reinterpret_cast<FromGreen>(fgpu::hook::RealCudaByName("cuCtxFromGreenCtx"));
  CUcontext ctx = nullptr;
  if (from_green == nullptr || green == nullptr || from_green(&ctx, green) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

}  // namespace

extern "C" {

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuCtxCreate);
  if (real == nullptr) return MissingRealCuda();
  return CreateContext(pctx, dev, [&](CUcontext* out) { return real(out, flags, dev); });
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuCtxCreate_v2);
  if (real == nullptr) return MissingRealCuda();
  return CreateContext(pctx, dev, [&](CUcontext* out) { return real(out, flags, dev); });
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                        CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuCtxCreate_v3);
  if (real == nullptr) return MissingRealCuda();
  return CreateContext(pctx, dev,
                       [&](CUcontext* out) { return real(out, paramsArray, numParams, flags, dev); });
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuCtxCreate_v4);
  if (real == nullptr) return MissingRealCuda();
  return CreateContext(pctx, dev, [&](CUcontext* out) { return real(out, ctxCreateParams, flags, dev); });
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  const auto real = FGPU_REAL_CUDA(cuCtxDestroy_v2);
  if (real == nullptr) return MissingRealCuda();
  return DestroyContext(ctx, [&](CUcontext c) { return real(c); });
}

CUresult cuCtxDestroy(CUcontext ctx) {
  const auto real = FGPU_REAL_CUDA(cuCtxDestroy);
  if (real == nullptr) return MissingRealCuda();
  return DestroyContext(ctx, [&](CUcontext c) { return real(c); });
}

CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags) {
  const auto real = FGPU_REAL_CUDA(cuGreenCtxCreate);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(phCtx, desc, dev, flags);
  return hook->contexts().CreateGreen(phCtx, dev, [&](CUgreenCtx* out) { return real(out, desc, dev, flags); });
}

CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  const auto real = FGPU_REAL_CUDA(cuGreenCtxDestroy);
  if (real == nullptr) return MissingRealCuda();
  if (fgpu::hook::ComputeGateArmed()) {
    if (const CUcontext ctx = ContextOfGreenContext(hCtx); ctx != nullptr) fgpu::hook::ComputeContextClosing(ctx, -1);
  }
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(hCtx);
  return hook->contexts().DestroyGreen(hCtx, [&](CUgreenCtx green) { return real(green); });
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDevicePrimaryCtxRetain);
  if (real == nullptr) return MissingRealCuda();
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return real(pctx, dev);
  return hook->contexts().RetainPrimary(pctx, dev, [&](CUcontext* out) { return real(out, dev); });
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDevicePrimaryCtxRelease_v2);
  if (real == nullptr) return MissingRealCuda();
  return ReleasePrimary(dev, [&](CUdevice d) { return real(d); });
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDevicePrimaryCtxRelease);
  if (real == nullptr) return MissingRealCuda();
  return ReleasePrimary(dev, [&](CUdevice d) { return real(d); });
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDevicePrimaryCtxReset_v2);
  if (real == nullptr) return MissingRealCuda();
  return ResetPrimary(dev, [&](CUdevice d) { return real(d); });
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  const auto real = FGPU_REAL_CUDA(cuDevicePrimaryCtxReset);
  if (real == nullptr) return MissingRealCuda();
  return ResetPrimary(dev, [&](CUdevice d) { return real(d); });
}

}  // extern "C"
