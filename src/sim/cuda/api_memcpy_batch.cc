// Batched copies: cuMemcpyBatchAsync (pointer to pointer) and cuMemcpy3DBatchAsync (pointers and
// arrays, in elements), in their 12.8 form (with failIdx) and 13.0's _v2 (without), each also _ptsz.
//
// Every copy is validated before any runs (the documented attribute rules, then copy_3d.h's rules
// for the copy itself); the first invalid one is reported through failIdx, and SIZE_MAX there
// means the error belongs to no single copy. The stream must not be the legacy NULL stream.
// Copies then run in order, at the call: they are asynchronous, and simulated kernels compute
// nothing, so no stream order can tell (docs/sim-memory.md).
#include <cstdint>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/array_store.h"
#include "sim/cuda/copy_3d.h"
#include "sim/cuda/copy_entry.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

constexpr size_t kNoSingleCopy = SIZE_MAX;

bool ValidAccessOrder(CUmemcpySrcAccessOrder order) {
  return order == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || order == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
         order == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

bool ValidCopyFlags(unsigned flags) { return (flags & ~unsigned{CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE}) == 0; }

// The legacy NULL stream is refused by both batch forms; under _ptsz, 0 names the per-thread stream.
CUresult EnterBatch(CUstream stream, bool per_thread, int* device) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (stream == CU_STREAM_LEGACY || (stream == nullptr && !per_thread)) return CUDA_ERROR_INVALID_VALUE;
  return EnterAsyncCopy(stream, per_thread, device);
}

void Report(size_t* fail_idx, size_t index) {
  if (fail_idx != nullptr) *fail_idx = index;
}

// attrsIdxs: starts at 0, strictly increasing, last < count; numAttrs in 1..count.
CUresult CheckAttributes(size_t count, const CUmemcpyAttributes* attrs, const size_t* attrs_idxs, size_t num_attrs) {
  if (attrs == nullptr || attrs_idxs == nullptr || num_attrs == 0 || num_attrs > count || attrs_idxs[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t k = 0; k < num_attrs; ++k) {
    if (k > 0 && attrs_idxs[k] <= attrs_idxs[k - 1]) return CUDA_ERROR_INVALID_VALUE;
    if (attrs_idxs[k] >= count) return CUDA_ERROR_INVALID_VALUE;
    if (!ValidAccessOrder(attrs[k].srcAccessOrder) || !ValidCopyFlags(attrs[k].flags)) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUDA_MEMCPY3D UnifiedCopy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = src;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dst;
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  return copy;
}

CUresult Batch1D(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                 size_t* attrs_idxs, size_t num_attrs, size_t* fail_idx, CUstream stream, bool per_thread) {
  Report(fail_idx, kNoSingleCopy);
  int device = 0;
  if (CUresult rc = EnterBatch(stream, per_thread, &device); rc != CUDA_SUCCESS) return rc;
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckAttributes(count, attrs, attrs_idxs, num_attrs); rc != CUDA_SUCCESS) return rc;
  for (size_t i = 0; i < count; ++i) {
    if (CUresult rc = Check3D(UnifiedCopy(dsts[i], srcs[i], sizes[i]), device); rc != CUDA_SUCCESS) {
      Report(fail_idx, i);
      return rc;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    if (CUresult rc = Copy3D(UnifiedCopy(dsts[i], srcs[i], sizes[i]), device); rc != CUDA_SUCCESS) {
      Report(fail_idx, i);  // only if the memory changed under the batch: it was valid a moment ago
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

// One operand placed on one side of a CUDA_MEMCPY3D, in bytes.
struct PlacedOperand {
  CUmemorytype type = CU_MEMORYTYPE_UNIFIED;
  CUdeviceptr ptr = 0;
  CUarray array = nullptr;
  size_t x = 0, y = 0, z = 0, pitch = 0, slice_height = 0;
};

CUresult ElementOf(const CUmemcpy3DOperand& operand, uint64_t* element) {
  if (operand.type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
    *element = 0;  // decided by the other operand
    return CUDA_SUCCESS;
  }
  if (operand.type != CU_MEMCPY_OPERAND_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  ArrayView view;
  if (FindArray(operand.op.array.array, &view) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *element = view.element;
  return CUDA_SUCCESS;
}

CUresult PlaceOperand(const CUmemcpy3DOperand& operand, const CUextent3D& extent, uint64_t element,
                      PlacedOperand* out) {
  if (operand.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    const CUoffset3D& at = operand.op.array.offset;
    if (at.x > UINT64_MAX / element) return CUDA_ERROR_INVALID_VALUE;
    *out = PlacedOperand{CU_MEMORYTYPE_ARRAY, 0, operand.op.array.array, at.x * element, at.y, at.z, 0, 0};
    return CUDA_SUCCESS;
  }
  const auto& p = operand.op.ptr;
  if ((p.rowLength != 0 && p.rowLength < extent.width) || (p.layerHeight != 0 && p.layerHeight < extent.height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t row = p.rowLength != 0 ? p.rowLength : extent.width;
  uint64_t pitch = 0;
  if (__builtin_mul_overflow(row, element, &pitch)) return CUDA_ERROR_INVALID_VALUE;
  *out = PlacedOperand{CU_MEMORYTYPE_UNIFIED, p.ptr, nullptr, 0, 0, 0, pitch,
                       p.layerHeight != 0 ? p.layerHeight : extent.height};
  return CUDA_SUCCESS;
}

// The copy an operation describes, or CUDA_ERROR_INVALID_VALUE for one the documentation refuses.
CUresult CopyOf(const CUDA_MEMCPY3D_BATCH_OP& op, CUDA_MEMCPY3D* copy) {
  if (!ValidAccessOrder(op.srcAccessOrder) || !ValidCopyFlags(op.flags)) return CUDA_ERROR_INVALID_VALUE;
  if (op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t src_element = 0, dst_element = 0;
  if (CUresult rc = ElementOf(op.src, &src_element); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = ElementOf(op.dst, &dst_element); rc != CUDA_SUCCESS) return rc;
  if (src_element != 0 && dst_element != 0 && src_element != dst_element) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t element = src_element != 0 ? src_element : (dst_element != 0 ? dst_element : 1);
  PlacedOperand src, dst;
  if (CUresult rc = PlaceOperand(op.src, op.extent, element, &src); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = PlaceOperand(op.dst, op.extent, element, &dst); rc != CUDA_SUCCESS) return rc;
  *copy = CUDA_MEMCPY3D{};
  copy->srcMemoryType = src.type;
  copy->srcDevice = src.ptr;
  copy->srcArray = src.array;
  copy->srcXInBytes = src.x;
  copy->srcY = src.y;
  copy->srcZ = src.z;
  copy->srcPitch = src.pitch;
  copy->srcHeight = src.slice_height;
  copy->dstMemoryType = dst.type;
  copy->dstDevice = dst.ptr;
  copy->dstArray = dst.array;
  copy->dstXInBytes = dst.x;
  copy->dstY = dst.y;
  copy->dstZ = dst.z;
  copy->dstPitch = dst.pitch;
  copy->dstHeight = dst.slice_height;
  if (__builtin_mul_overflow(op.extent.width, element, &copy->WidthInBytes)) return CUDA_ERROR_INVALID_VALUE;
  copy->Height = op.extent.height;
  copy->Depth = op.extent.depth;
  return CUDA_SUCCESS;
}

CUresult Batch3D(size_t num_ops, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail_idx, unsigned long long flags,
                 CUstream stream, bool per_thread) {
  Report(fail_idx, kNoSingleCopy);
  int device = 0;
  if (CUresult rc = EnterBatch(stream, per_thread, &device); rc != CUDA_SUCCESS) return rc;
  if (num_ops == 0 || ops == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUDA_MEMCPY3D> copies(num_ops);
  for (size_t i = 0; i < num_ops; ++i) {
    CUresult rc = CopyOf(ops[i], &copies[i]);
    if (rc == CUDA_SUCCESS) rc = Check3D(copies[i], device);
    if (rc != CUDA_SUCCESS) {
      Report(fail_idx, i);
      return rc;
    }
  }
  for (size_t i = 0; i < num_ops; ++i) {
    if (CUresult rc = Copy3D(copies[i], device); rc != CUDA_SUCCESS) {
      Report(fail_idx, i);
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;

extern "C" {

CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                            CUstream hStream) {
  return Guarded([&] {
    return sim::Batch1D(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, false);
  });
}
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                 CUstream hStream) {
  return Guarded([&] {
    return sim::Batch1D(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, true);
  });
}
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, CUstream hStream) {
  return Guarded([&] {
    return sim::Batch1D(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, false);
  });
}
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                    CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                    CUstream hStream) {
  return Guarded([&] {
    return sim::Batch1D(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, true);
  });
}
CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                              unsigned long long flags, CUstream hStream) {
  return Guarded([&] { return sim::Batch3D(numOps, opList, failIdx, flags, hStream, false); });
}
CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                   unsigned long long flags, CUstream hStream) {
  return Guarded([&] { return sim::Batch3D(numOps, opList, failIdx, flags, hStream, true); });
}
CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                 CUstream hStream) {
  return Guarded([&] { return sim::Batch3D(numOps, opList, nullptr, flags, hStream, false); });
}
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                      CUstream hStream) {
  return Guarded([&] { return sim::Batch3D(numOps, opList, nullptr, flags, hStream, true); });
}

}  // extern "C"
