// Copies and sets: HtoD, DtoH, DtoD, unified cuMemcpy, 2D copies, copies between contexts
// (cuMemcpyPeer), D8/D16/D32 sets and their 2D forms, synchronous and asynchronous, with their
// legacy, _v2, _ptds and _ptsz variants.
//
// Device memory is host memory (docs/sim-memory.md), so a copy is a memmove, done
// only after both sides are validated: the device side must lie inside a live
// allocation the current device may access (pinned and registered host memory
// count, as under unified addressing); the host side must be mapped host memory.
// Synchronous variants first wait for the legacy stream (_ptds: the calling
// thread's per-thread stream). Asynchronous variants copy at once: simulated kernels
// compute nothing, so no stream order can observe the difference. 2D copies are 3D
// copies of depth 1 (copy_3d.h), from or to CUDA arrays too.
#include <algorithm>
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/api_graph.h"
#include "sim/cuda/copy_3d.h"
#include "sim/cuda/copy_entry.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

namespace fgpu::sim::cuda {

CUresult EnterSyncCopy(bool per_thread, int* device) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (per_thread) {
    Stream* stream = nullptr;
    if (CUresult rc = Runtime::Get().ResolveStream(nullptr, true, &stream); rc != CUDA_SUCCESS) return rc;
    WaitStreamReleased(*stream);
    Runtime::SleepUntil(Runtime::Get().ReadyTime(*stream));
  } else {
    WaitStreamReleased(*ctx->legacy_stream);
    Runtime::Get().WaitLegacyStream(ctx);
  }
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult EnterAsyncCopyOrCapture(CUstream handle, bool per_thread, int* device, CopyCapture* capture) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  *capture = CopyCapture{stream->capture.load(), stream->ctx};
  *device = stream->ctx->device;
  return CUDA_SUCCESS;
}

CUresult EnterAsyncCopy(CUstream handle, bool per_thread, int* device) {
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(handle, per_thread, device, &capture); rc != CUDA_SUCCESS) return rc;
  return capture.graph != nullptr ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

namespace {

using Access = MemoryRegistry::Access;

bool DeviceUsable(uint64_t addr, uint64_t n, Access access, int device) {
  return n == 0 || MemoryRegistry::Get().CanAccess(addr, n, access, device);
}

// A unified address is device memory if the driver knows it, host memory otherwise.
bool UnifiedUsable(uint64_t addr, uint64_t n, Access access, int device) {
  if (n == 0) return true;
  if (MemoryRegistry::Get().Find(addr)) return DeviceUsable(addr, n, access, device);
  return HostRangeUsable(reinterpret_cast<const void*>(addr), n, access);
}

enum class Kind1D : uint8_t { kHtoD, kDtoH, kDtoD, kUnified };

CUresult Copy1D(Kind1D kind, uint64_t dst, uint64_t src, uint64_t n, int device) {
  if (n == 0) return CUDA_SUCCESS;
  const bool dst_device = kind == Kind1D::kHtoD || kind == Kind1D::kDtoD;
  const bool src_device = kind == Kind1D::kDtoH || kind == Kind1D::kDtoD;
  bool ok = false;
  if (kind == Kind1D::kUnified) {
    ok = UnifiedUsable(dst, n, Access::kWrite, device) && UnifiedUsable(src, n, Access::kRead, device);
  } else {
    ok = (dst_device ? DeviceUsable(dst, n, Access::kWrite, device)
                     : HostRangeUsable(reinterpret_cast<const void*>(dst), n, Access::kWrite)) &&
         (src_device ? DeviceUsable(src, n, Access::kRead, device)
                     : HostRangeUsable(reinterpret_cast<const void*>(src), n, Access::kRead));
  }
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

CUresult Sync1D(Kind1D kind, uint64_t dst, uint64_t src, uint64_t n, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Copy1D(kind, dst, src, n, device);
}

// A linear copy as the one-row 3D copy a memcpy node holds.
CUDA_MEMCPY3D Linear3D(Kind1D kind, uint64_t dst, uint64_t src, uint64_t n) {
  CUDA_MEMCPY3D copy{};
  const bool dst_device = kind == Kind1D::kHtoD || kind == Kind1D::kDtoD;
  const bool src_device = kind == Kind1D::kDtoH || kind == Kind1D::kDtoD;
  copy.dstMemoryType = kind == Kind1D::kUnified ? CU_MEMORYTYPE_UNIFIED
                       : dst_device             ? CU_MEMORYTYPE_DEVICE
                                                : CU_MEMORYTYPE_HOST;
  copy.srcMemoryType = kind == Kind1D::kUnified ? CU_MEMORYTYPE_UNIFIED
                       : src_device             ? CU_MEMORYTYPE_DEVICE
                                                : CU_MEMORYTYPE_HOST;
  if (copy.dstMemoryType == CU_MEMORYTYPE_HOST) {
    copy.dstHost = reinterpret_cast<void*>(dst);
  } else {
    copy.dstDevice = dst;
  }
  if (copy.srcMemoryType == CU_MEMORYTYPE_HOST) {
    copy.srcHost = reinterpret_cast<const void*>(src);
  } else {
    copy.srcDevice = src;
  }
  copy.WidthInBytes = n;
  copy.Height = 1;
  copy.Depth = 1;
  return copy;
}

// Under capture a non-empty copy becomes a memcpy node (nothing is copied until the graph runs).
CUresult Async1D(Kind1D kind, uint64_t dst, uint64_t src, uint64_t n, CUstream stream, bool per_thread) {
  int device = 0;
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(stream, per_thread, &device, &capture); rc != CUDA_SUCCESS) return rc;
  if (capture.graph != nullptr) {
    return n == 0 ? CUDA_SUCCESS : CaptureMemcpy(*capture.graph, Linear3D(kind, dst, src, n), *capture.ctx);
  }
  return Copy1D(kind, dst, src, n, device);
}

uint64_t Ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// A 2D copy is a 3D copy of depth 1 (copy_3d.h), which also covers CUDA arrays.
template <typename Params>
CUDA_MEMCPY3D Widen2D(const Params* p) {
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = p->srcXInBytes;
  copy.srcY = p->srcY;
  copy.srcMemoryType = p->srcMemoryType;
  copy.srcHost = p->srcHost;
  copy.srcDevice = p->srcDevice;
  copy.srcArray = p->srcArray;
  copy.srcPitch = p->srcPitch;
  copy.dstXInBytes = p->dstXInBytes;
  copy.dstY = p->dstY;
  copy.dstMemoryType = p->dstMemoryType;
  copy.dstHost = p->dstHost;
  copy.dstDevice = p->dstDevice;
  copy.dstArray = p->dstArray;
  copy.dstPitch = p->dstPitch;
  copy.WidthInBytes = p->WidthInBytes;
  copy.Height = p->Height;
  copy.Depth = 1;
  return copy;
}

template <typename Params>
CUresult Copy2D(const Params* p, int device) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Copy3D(Widen2D(p), device);
}

template <typename Params>
CUresult Sync2D(const Params* p, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Copy2D(p, device);
}

template <typename Params>
CUresult Async2D(const Params* p, CUstream stream, bool per_thread) {
  int device = 0;
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(stream, per_thread, &device, &capture); rc != CUDA_SUCCESS) return rc;
  if (capture.graph != nullptr) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CaptureMemcpy(*capture.graph, Widen2D(p), *capture.ctx);
  }
  return Copy2D(p, device);
}

template <typename T>
CUresult Set(uint64_t dst, T value, uint64_t count, int device) {
  if (dst % sizeof(T) != 0) return CUDA_ERROR_INVALID_VALUE;  // D16/D32 need aligned destinations
  if (count == 0) return CUDA_SUCCESS;
  if (count > UINT64_MAX / sizeof(T) || !DeviceUsable(dst, count * sizeof(T), Access::kWrite, device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::fill_n(reinterpret_cast<T*>(dst), count, value);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult SyncSet(uint64_t dst, T value, uint64_t count, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Set(dst, value, count, device);
}

// Under capture a non-empty set becomes a memset node of `height` rows.
template <typename T>
CUresult CaptureSet(const CopyCapture& capture, uint64_t dst, uint64_t pitch, T value, uint64_t width,
                    uint64_t height) {
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  const CUDA_MEMSET_NODE_PARAMS params{dst, height > 1 ? pitch : 0, value, sizeof(T), width, height};
  return CaptureMemset(*capture.graph, params, *capture.ctx);
}

template <typename T>
CUresult AsyncSet(uint64_t dst, T value, uint64_t count, CUstream stream, bool per_thread) {
  int device = 0;
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(stream, per_thread, &device, &capture); rc != CUDA_SUCCESS) return rc;
  if (capture.graph != nullptr) return CaptureSet(capture, dst, 0, value, count, 1);
  return Set(dst, value, count, device);
}

// A 2D set: `height` rows of `width` elements, `pitch` bytes apart (the pitch is unused for one
// row, as documented). D2D16/D2D32 need the pointer and the pitch aligned to the element.
template <typename T>
CUresult Set2D(uint64_t dst, uint64_t pitch, T value, uint64_t width, uint64_t height, int device) {
  if (dst % sizeof(T) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  uint64_t row = 0, extent = 0;
  if (__builtin_mul_overflow(width, sizeof(T), &row)) return CUDA_ERROR_INVALID_VALUE;
  if (height > 1 && (pitch < row || pitch % sizeof(T) != 0)) return CUDA_ERROR_INVALID_VALUE;
  if (__builtin_mul_overflow(height - 1, pitch, &extent) || __builtin_add_overflow(extent, row, &extent) ||
      !DeviceUsable(dst, extent, Access::kWrite, device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (uint64_t r = 0; r < height; ++r) std::fill_n(reinterpret_cast<T*>(dst + r * pitch), width, value);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult SyncSet2D(uint64_t dst, uint64_t pitch, T value, uint64_t width, uint64_t height, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Set2D(dst, pitch, value, width, height, device);
}

template <typename T>
CUresult AsyncSet2D(uint64_t dst, uint64_t pitch, T value, uint64_t width, uint64_t height, CUstream stream,
                    bool per_thread) {
  int device = 0;
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(stream, per_thread, &device, &capture); rc != CUDA_SUCCESS) return rc;
  if (capture.graph != nullptr) return CaptureSet(capture, dst, pitch, value, width, height);
  return Set2D(dst, pitch, value, width, height, device);
}

// Both contexts of a peer copy, each a live context (CUDA_ERROR_INVALID_CONTEXT otherwise).
CUresult PeerContexts(CUcontext dst_handle, CUcontext src_handle, Context** dst, Context** src) {
  *dst = Runtime::Get().LookupContext(dst_handle);
  *src = Runtime::Get().LookupContext(src_handle);
  return *dst != nullptr && *src != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// Each side must be memory its own context's device may touch (VMM mappings carry per-device
// rights; every other allocation is reachable from every device, docs/sim-memory.md).
CUresult CopyPeer(uint64_t dst, const Context& dst_ctx, uint64_t src, const Context& src_ctx, uint64_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (!DeviceUsable(dst, n, Access::kWrite, dst_ctx.device) || !DeviceUsable(src, n, Access::kRead, src_ctx.device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

// Synchronous: waits like any synchronous copy (the calling context's legacy or per-thread
// stream), and for the legacy streams of both contexts, whose work may still use the memory.
CUresult SyncPeer(uint64_t dst, CUcontext dst_handle, uint64_t src, CUcontext src_handle, uint64_t n,
                  bool per_thread) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* dst_ctx = nullptr;
  Context* src_ctx = nullptr;
  if (CUresult rc = PeerContexts(dst_handle, src_handle, &dst_ctx, &src_ctx); rc != CUDA_SUCCESS) return rc;
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  Runtime::Get().WaitLegacyStream(dst_ctx);
  Runtime::Get().WaitLegacyStream(src_ctx);
  return CopyPeer(dst, *dst_ctx, src, *src_ctx, n);
}

CUresult AsyncPeer(uint64_t dst, CUcontext dst_handle, uint64_t src, CUcontext src_handle, uint64_t n,
                   CUstream stream, bool per_thread) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* dst_ctx = nullptr;
  Context* src_ctx = nullptr;
  if (CUresult rc = PeerContexts(dst_handle, src_handle, &dst_ctx, &src_ctx); rc != CUDA_SUCCESS) return rc;
  int device = 0;
  if (CUresult rc = EnterAsyncCopy(stream, per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return CopyPeer(dst, *dst_ctx, src, *src_ctx, n);
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;
using K = sim::Kind1D;

extern "C" {

// --- unified --------------------------------------------------------------------------
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kUnified, dst, src, ByteCount, false); });
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kUnified, dst, src, ByteCount, true); });
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return Guarded([&] { return sim::Async1D(K::kUnified, dst, src, ByteCount, hStream, false); });
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return Guarded([&] { return sim::Async1D(K::kUnified, dst, src, ByteCount, hStream, true); });
}

// --- host to device ---------------------------------------------------------------------
CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, false); });
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, false); });
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, true); });
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount,
                           CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, hStream, false); });
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, hStream, false); });
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kHtoD, dstDevice, sim::Ptr(srcHost), ByteCount, hStream, true); });
}

// --- device to host ---------------------------------------------------------------------
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, false); });
}
CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, false); });
}
CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, true); });
}
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, hStream, false); });
}
CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, hStream, false); });
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  return Guarded(
      [&] { return sim::Async1D(K::kDtoH, sim::Ptr(dstHost), srcDevice, ByteCount, hStream, true); });
}

// --- device to device -------------------------------------------------------------------
CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoD, dstDevice, srcDevice, ByteCount, false); });
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoD, dstDevice, srcDevice, ByteCount, false); });
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1D(K::kDtoD, dstDevice, srcDevice, ByteCount, true); });
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  return Guarded([&] { return sim::Async1D(K::kDtoD, dstDevice, srcDevice, ByteCount, hStream, false); });
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return Guarded([&] { return sim::Async1D(K::kDtoD, dstDevice, srcDevice, ByteCount, hStream, false); });
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  return Guarded([&] { return sim::Async1D(K::kDtoD, dstDevice, srcDevice, ByteCount, hStream, true); });
}

// --- 2D -----------------------------------------------------------------------------------
CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, false); });
}
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, false); });
}
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, true); });
}
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::Async2D(pCopy, hStream, false); });
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::Async2D(pCopy, hStream, false); });
}
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::Async2D(pCopy, hStream, true); });
}
// The simulator has no pitch alignment to relax: the unaligned forms are the 2D copies.
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, false); });
}
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, false); });
}
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  return Guarded([&] { return sim::Sync2D(pCopy, true); });
}

// --- sets ---------------------------------------------------------------------------------
CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N) {
  return Guarded([&] { return sim::SyncSet<uint8_t>(dstDevice, uc, N, false); });
}
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint8_t>(dstDevice, uc, N, false); });
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint8_t>(dstDevice, uc, N, true); });
}
CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N) {
  return Guarded([&] { return sim::SyncSet<uint16_t>(dstDevice, us, N, false); });
}
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint16_t>(dstDevice, us, N, false); });
}
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint16_t>(dstDevice, us, N, true); });
}
CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N) {
  return Guarded([&] { return sim::SyncSet<uint32_t>(dstDevice, ui, N, false); });
}
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint32_t>(dstDevice, ui, N, false); });
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return Guarded([&] { return sim::SyncSet<uint32_t>(dstDevice, ui, N, true); });
}
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint8_t>(dstDevice, uc, N, hStream, false); });
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint8_t>(dstDevice, uc, N, hStream, true); });
}
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint16_t>(dstDevice, us, N, hStream, false); });
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint16_t>(dstDevice, us, N, hStream, true); });
}
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint32_t>(dstDevice, ui, N, hStream, false); });
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet<uint32_t>(dstDevice, ui, N, hStream, true); });
}

// --- 2D sets --------------------------------------------------------------------------------
CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width,
                      unsigned int Height) {
  return Guarded([&] { return sim::SyncSet2D<uint8_t>(dstDevice, dstPitch, uc, Width, Height, false); });
}
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint8_t>(dstDevice, dstPitch, uc, Width, Height, false); });
}
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                              size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint8_t>(dstDevice, dstPitch, uc, Width, Height, true); });
}
CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width,
                       unsigned int Height) {
  return Guarded([&] { return sim::SyncSet2D<uint16_t>(dstDevice, dstPitch, us, Width, Height, false); });
}
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint16_t>(dstDevice, dstPitch, us, Width, Height, false); });
}
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                               size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint16_t>(dstDevice, dstPitch, us, Width, Height, true); });
}
CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width,
                       unsigned int Height) {
  return Guarded([&] { return sim::SyncSet2D<uint32_t>(dstDevice, dstPitch, ui, Width, Height, false); });
}
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint32_t>(dstDevice, dstPitch, ui, Width, Height, false); });
}
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                               size_t Height) {
  return Guarded([&] { return sim::SyncSet2D<uint32_t>(dstDevice, dstPitch, ui, Width, Height, true); });
}
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                           CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint8_t>(dstDevice, dstPitch, uc, Width, Height, hStream, false); });
}
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                size_t Height, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint8_t>(dstDevice, dstPitch, uc, Width, Height, hStream, true); });
}
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint16_t>(dstDevice, dstPitch, us, Width, Height, hStream, false); });
}
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                 size_t Height, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint16_t>(dstDevice, dstPitch, us, Width, Height, hStream, true); });
}
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
                            CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint32_t>(dstDevice, dstPitch, ui, Width, Height, hStream, false); });
}
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                 size_t Height, CUstream hStream) {
  return Guarded([&] { return sim::AsyncSet2D<uint32_t>(dstDevice, dstPitch, ui, Width, Height, hStream, true); });
}

// --- between contexts -----------------------------------------------------------------------
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                      size_t ByteCount) {
  return Guarded([&] { return sim::SyncPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, false); });
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount) {
  return Guarded([&] { return sim::SyncPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, true); });
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return Guarded([&] {
    return sim::AsyncPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false);
  });
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return Guarded([&] {
    return sim::AsyncPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, true);
  });
}

}  // extern "C"
