// 3D copies (cuMemcpy3D*, cuMemcpy3DPeer*) and the 1D copies from and to CUDA arrays
// (cuMemcpyAtoD/DtoA/HtoA/AtoH/AtoA and their Async forms), synchronous and asynchronous,
// legacy, _v2, _ptds and _ptsz.
//
// Every one of them is a Copy3D (copy_3d.h). A 1D array copy sees the array as its bytes in the
// simulator's row-major layout (array_store.h), which for a 1D array is the array itself: offsets
// and byte counts must be whole elements, device pointers aligned to the element, and the range
// inside the array.
#include <algorithm>
#include <cstddef>

#include "core/abi/cuda_api.h"
#include "sim/cuda/api_graph.h"
#include "sim/cuda/array_store.h"
#include "sim/cuda/copy_3d.h"
#include "sim/cuda/copy_entry.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

template <typename Params>
CUDA_MEMCPY3D Widen3D(const Params& p) {
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = p.srcXInBytes;
  copy.srcY = p.srcY;
  copy.srcZ = p.srcZ;
  copy.srcLOD = p.srcLOD;
  copy.srcMemoryType = p.srcMemoryType;
  copy.srcHost = p.srcHost;
  copy.srcDevice = p.srcDevice;
  copy.srcArray = p.srcArray;
  copy.srcPitch = p.srcPitch;
  copy.srcHeight = p.srcHeight;
  copy.dstXInBytes = p.dstXInBytes;
  copy.dstY = p.dstY;
  copy.dstZ = p.dstZ;
  copy.dstLOD = p.dstLOD;
  copy.dstMemoryType = p.dstMemoryType;
  copy.dstHost = p.dstHost;
  copy.dstDevice = p.dstDevice;
  copy.dstArray = p.dstArray;
  copy.dstPitch = p.dstPitch;
  copy.dstHeight = p.dstHeight;
  copy.WidthInBytes = p.WidthInBytes;
  copy.Height = p.Height;
  copy.Depth = p.Depth;
  if constexpr (requires { p.reserved0; }) {
    copy.reserved0 = p.reserved0;
    copy.reserved1 = p.reserved1;
  }
  return copy;
}

template <typename Params>
CUresult SyncCopy3D(const Params* p, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Copy3D(Widen3D(*p), device);
}

template <typename Params>
CUresult AsyncCopy3D(const Params* p, CUstream stream, bool per_thread) {
  int device = 0;
  CopyCapture capture;
  if (CUresult rc = EnterAsyncCopyOrCapture(stream, per_thread, &device, &capture); rc != CUDA_SUCCESS) return rc;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (capture.graph != nullptr) return CaptureMemcpy(*capture.graph, Widen3D(*p), *capture.ctx);
  return Copy3D(Widen3D(*p), device);
}

// The device each side of a peer copy is accessed from: its context's, or the array's own
// (an array side ignores its context, as documented).
CUresult PeerSideDevice(CUmemorytype type, CUarray array, CUcontext handle, int* device, Context** ctx) {
  *ctx = nullptr;
  if (type == CU_MEMORYTYPE_ARRAY) {
    ArrayView view;
    if (FindArray(array, &view) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    *device = view.device;
    return CUDA_SUCCESS;
  }
  *ctx = Runtime::Get().LookupContext(handle);
  if (*ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = (*ctx)->device;
  return CUDA_SUCCESS;
}

CUresult Peer3D(const CUDA_MEMCPY3D_PEER* p, bool synchronous, CUstream stream, bool per_thread) {
  int device = 0;
  if (CUresult rc = synchronous ? EnterSyncCopy(per_thread, &device) : EnterAsyncCopy(stream, per_thread, &device);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int src_device = 0, dst_device = 0;
  Context* src_ctx = nullptr;
  Context* dst_ctx = nullptr;
  if (CUresult rc = PeerSideDevice(p->srcMemoryType, p->srcArray, p->srcContext, &src_device, &src_ctx);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  if (CUresult rc = PeerSideDevice(p->dstMemoryType, p->dstArray, p->dstContext, &dst_device, &dst_ctx);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  if (synchronous) {  // the work already queued in either context may still use the memory
    if (src_ctx != nullptr) Runtime::Get().WaitLegacyStream(src_ctx);
    if (dst_ctx != nullptr) Runtime::Get().WaitLegacyStream(dst_ctx);
  }
  return Copy3DBetween(Widen3D(*p), src_device, dst_device);
}

// One side of a 1D copy: an array at a byte offset, or a linear address of the given type.
struct LinearSide {
  CUmemorytype type;
  uint64_t address;  // host or device address; unused for arrays
  CUarray array;
  uint64_t offset;   // into the array, in bytes
};

// The element size a 1D array copy works in: the array's (both arrays' when they agree).
CUresult ElementOf1DCopy(const LinearSide& src, const LinearSide& dst, uint64_t* element) {
  *element = 0;
  for (const LinearSide* side : {&src, &dst}) {
    if (side->type != CU_MEMORYTYPE_ARRAY) continue;
    ArrayView view;
    if (FindArray(side->array, &view) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    if (*element != 0 && *element != view.element) return CUDA_ERROR_INVALID_VALUE;  // AtoA: same size
    *element = view.element;
  }
  return CUDA_SUCCESS;
}

// Fills one side of the CUDA_MEMCPY3D for a 1D copy of `bytes` (one row; an array's offset is
// split into its row and column so that Copy3D's bounds check is the array's).
CUresult Place1DSide(const LinearSide& side, uint64_t element, uint64_t bytes, CUmemorytype* type,
                     const void** host, CUdeviceptr* device_ptr, CUarray* array, size_t* x, size_t* y, size_t* z) {
  *type = side.type;
  if (side.type != CU_MEMORYTYPE_ARRAY) {
    if (side.type == CU_MEMORYTYPE_DEVICE && side.address % element != 0) return CUDA_ERROR_INVALID_VALUE;
    *host = reinterpret_cast<const void*>(side.address);
    *device_ptr = side.address;
    return CUDA_SUCCESS;
  }
  ArrayView view;
  if (FindArray(side.array, &view) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  if (side.offset % element != 0 || side.offset > view.Bytes() || bytes > view.Bytes() - side.offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t row = view.RowBytes();
  *array = side.array;
  *x = side.offset % row;
  *y = (side.offset / row) % view.height;
  *z = side.offset / (row * view.height);
  return CUDA_SUCCESS;
}

// Arrays are stored row after row without padding, so a 1D range that crosses rows is contiguous:
// it is copied (or, with copy false, checked) in pieces that each stay inside one row, each piece
// a Copy3D of one row.
CUresult CopyInRowPieces(CUDA_MEMCPY3D copy, uint64_t bytes, int device, bool copy_data) {
  auto row_left = [](bool is_array, CUarray handle, size_t x, uint64_t* piece) {
    if (!is_array) return true;
    ArrayView view;
    if (FindArray(handle, &view) != CUDA_SUCCESS) return false;
    *piece = std::min<uint64_t>(*piece, view.RowBytes() - x);
    return true;
  };
  auto advance = [](bool is_array, CUarray handle, uint64_t piece, size_t* x, size_t* y, size_t* z,
                    CUdeviceptr* ptr) {
    if (!is_array) {
      *ptr += piece;
      return;
    }
    ArrayView view;
    if (FindArray(handle, &view) != CUDA_SUCCESS) return;
    *x += piece;
    if (*x < view.RowBytes()) return;
    *x = 0;
    if (++*y < view.height) return;
    *y = 0;
    ++*z;
  };
  const bool src_array = copy.srcMemoryType == CU_MEMORYTYPE_ARRAY;
  const bool dst_array = copy.dstMemoryType == CU_MEMORYTYPE_ARRAY;
  for (uint64_t done = 0; done < bytes;) {
    uint64_t piece = bytes - done;
    if (!row_left(src_array, copy.srcArray, copy.srcXInBytes, &piece) ||
        !row_left(dst_array, copy.dstArray, copy.dstXInBytes, &piece)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    copy.WidthInBytes = piece;
    copy.Height = 1;
    copy.Depth = 1;
    if (CUresult rc = copy_data ? Copy3D(copy, device) : Check3D(copy, device); rc != CUDA_SUCCESS) return rc;
    done += piece;
    CUdeviceptr src_ptr = reinterpret_cast<CUdeviceptr>(copy.srcHost);
    CUdeviceptr dst_ptr = reinterpret_cast<CUdeviceptr>(copy.dstHost);
    advance(src_array, copy.srcArray, piece, &copy.srcXInBytes, &copy.srcY, &copy.srcZ, &copy.srcDevice);
    advance(dst_array, copy.dstArray, piece, &copy.dstXInBytes, &copy.dstY, &copy.dstZ, &copy.dstDevice);
    if (!src_array) copy.srcHost = reinterpret_cast<const void*>(src_ptr + piece);
    if (!dst_array) copy.dstHost = reinterpret_cast<void*>(dst_ptr + piece);
  }
  return CUDA_SUCCESS;
}

CUresult Copy1DArray(const LinearSide& src, const LinearSide& dst, uint64_t bytes, int device) {
  uint64_t element = 0;
  if (CUresult rc = ElementOf1DCopy(src, dst, &element); rc != CUDA_SUCCESS) return rc;
  if (bytes % element != 0) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D copy{};
  if (CUresult rc = Place1DSide(src, element, bytes, &copy.srcMemoryType, &copy.srcHost, &copy.srcDevice,
                                &copy.srcArray, &copy.srcXInBytes, &copy.srcY, &copy.srcZ);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  const void* dst_host = nullptr;
  if (CUresult rc = Place1DSide(dst, element, bytes, &copy.dstMemoryType, &dst_host, &copy.dstDevice,
                                &copy.dstArray, &copy.dstXInBytes, &copy.dstY, &copy.dstZ);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  copy.dstHost = const_cast<void*>(dst_host);
  if (bytes == 0) return CUDA_SUCCESS;
  // Validate every piece before copying any, so that nothing is copied unless all is valid.
  if (CUresult rc = CopyInRowPieces(copy, bytes, device, false); rc != CUDA_SUCCESS) return rc;
  return CopyInRowPieces(copy, bytes, device, true);
}

CUresult Sync1DArray(const LinearSide& src, const LinearSide& dst, uint64_t bytes, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterSyncCopy(per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Copy1DArray(src, dst, bytes, device);
}

CUresult Async1DArray(const LinearSide& src, const LinearSide& dst, uint64_t bytes, CUstream stream,
                      bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterAsyncCopy(stream, per_thread, &device); rc != CUDA_SUCCESS) return rc;
  return Copy1DArray(src, dst, bytes, device);
}

LinearSide ArraySide(CUarray array, uint64_t offset) { return {CU_MEMORYTYPE_ARRAY, 0, array, offset}; }
LinearSide DeviceSide(CUdeviceptr ptr) { return {CU_MEMORYTYPE_DEVICE, ptr, nullptr, 0}; }
LinearSide HostSide(const void* ptr) { return {CU_MEMORYTYPE_HOST, reinterpret_cast<uint64_t>(ptr), nullptr, 0}; }

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;

extern "C" {

// --- 3D ------------------------------------------------------------------------------------
CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1* pCopy) {
  return Guarded([&] { return sim::SyncCopy3D(pCopy, false); });
}
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) {
  return Guarded([&] { return sim::SyncCopy3D(pCopy, false); });
}
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  return Guarded([&] { return sim::SyncCopy3D(pCopy, true); });
}
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::AsyncCopy3D(pCopy, hStream, false); });
}
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::AsyncCopy3D(pCopy, hStream, false); });
}
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::AsyncCopy3D(pCopy, hStream, true); });
}
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  return Guarded([&] { return sim::Peer3D(pCopy, true, nullptr, false); });
}
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy) {
  return Guarded([&] { return sim::Peer3D(pCopy, true, nullptr, true); });
}
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::Peer3D(pCopy, false, hStream, false); });
}
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) {
  return Guarded([&] { return sim::Peer3D(pCopy, false, hStream, true); });
}

// --- 1D copies from and to arrays ------------------------------------------------------------
CUresult cuMemcpyDtoA(CUarray dstArray, unsigned int dstOffset, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::DeviceSide(srcDevice), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::DeviceSide(srcDevice), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::DeviceSide(srcDevice), sim::ArraySide(dstArray, dstOffset), ByteCount, true); });
}
CUresult cuMemcpyAtoD(CUdeviceptr_v1 dstDevice, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::DeviceSide(dstDevice), ByteCount, false); });
}
CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::DeviceSide(dstDevice), ByteCount, false); });
}
CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::DeviceSide(dstDevice), ByteCount, true); });
}
CUresult cuMemcpyHtoA(CUarray dstArray, unsigned int dstOffset, const void* srcHost, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, true); });
}
CUresult cuMemcpyAtoH(void* dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, false); });
}
CUresult cuMemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, false); });
}
CUresult cuMemcpyAtoH_v2_ptds(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, true); });
}
CUresult cuMemcpyAtoA(CUarray dstArray, unsigned int dstOffset, CUarray srcArray, unsigned int srcOffset,
                      unsigned int ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::ArraySide(dstArray, dstOffset), ByteCount, false); });
}
CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                              size_t ByteCount) {
  return Guarded([&] { return sim::Sync1DArray(sim::ArraySide(srcArray, srcOffset), sim::ArraySide(dstArray, dstOffset), ByteCount, true); });
}
CUresult cuMemcpyHtoAAsync(CUarray dstArray, unsigned int dstOffset, const void* srcHost, unsigned int ByteCount,
                           CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, hStream, false); });
}
CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, hStream, false); });
}
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::HostSide(srcHost), sim::ArraySide(dstArray, dstOffset), ByteCount, hStream, true); });
}
CUresult cuMemcpyAtoHAsync(void* dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount,
                           CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, hStream, false); });
}
CUresult cuMemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, hStream, false); });
}
CUresult cuMemcpyAtoHAsync_v2_ptsz(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                   CUstream hStream) {
  return Guarded([&] { return sim::Async1DArray(sim::ArraySide(srcArray, srcOffset), sim::HostSide(dstHost), ByteCount, hStream, true); });
}

}  // extern "C"
