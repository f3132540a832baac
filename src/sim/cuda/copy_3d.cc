// The 3D copy engine (copy_3d.h). Each side is resolved to the address of its first touched
// byte, the stride between rows and the stride between slices, after its whole touched extent is
// validated; the copy is then a memmove per row.
#include "sim/cuda/copy_3d.h"

#include <cstring>

#include "sim/cuda/array_store.h"
#include "sim/cuda/memory_registry.h"

namespace fgpu::sim::cuda {
namespace {

using MemoryAccess = MemoryRegistry::Access;

constexpr uint64_t kMaxCopyPitch = 2147483647;  // CU_DEVICE_ATTRIBUTE_MAX_PITCH of the H100

struct CopyExtent {
  uint64_t width_bytes;
  uint64_t height;
  uint64_t depth;
};

// One side of a copy as the struct gives it.
struct CopySideParams {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device_ptr;
  CUarray array;
  const void* reserved;
  uint64_t x_bytes;
  uint64_t y;
  uint64_t z;
  uint64_t lod;
  uint64_t pitch;
  uint64_t slice_height;
};

// One side resolved: where the copy begins and how far apart its rows and slices are.
struct ResolvedSide {
  std::byte* start = nullptr;
  uint64_t row_stride = 0;
  uint64_t slice_stride = 0;
};

bool KnownMemoryType(CUmemorytype type) {
  return type == CU_MEMORYTYPE_HOST || type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY ||
         type == CU_MEMORYTYPE_UNIFIED;
}

// The parts of a side that are checked even when nothing is copied.
CUresult CheckSideShape(const CopySideParams& side) {
  if (!KnownMemoryType(side.type) || side.reserved != nullptr || side.lod != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

bool LinearRangeUsable(CUmemorytype type, uint64_t start, uint64_t bytes, MemoryAccess access, int device) {
  const auto* host = reinterpret_cast<const void*>(start);
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      return HostRangeUsable(host, bytes, access);
    case CU_MEMORYTYPE_DEVICE:
      return MemoryRegistry::Get().CanAccess(start, bytes, access, device);
    case CU_MEMORYTYPE_UNIFIED:  // an address the driver knows is device memory, anything else host memory
      return MemoryRegistry::Get().Find(start) ? MemoryRegistry::Get().CanAccess(start, bytes, access, device)
                                               : HostRangeUsable(host, bytes, access);
    default:
      return false;
  }
}

CUresult ResolveLinearSide(const CopySideParams& side, const CopyExtent& extent, MemoryAccess access, int device,
                           ResolvedSide* out) {
  const uint64_t base = side.type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uint64_t>(side.host) : side.device_ptr;
  if (base == 0 || side.pitch > kMaxCopyPitch) return CUDA_ERROR_INVALID_VALUE;
  const bool rows = extent.height > 1 || extent.depth > 1;
  if (rows && (side.x_bytes > UINT64_MAX - extent.width_bytes || side.pitch < side.x_bytes + extent.width_bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (extent.depth > 1 && (side.y > UINT64_MAX - extent.height || side.slice_height < side.y + extent.height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // start = base + (z * slice_height + y) * pitch + x; touched bytes from there:
  // ((depth - 1) * slice_height + height - 1) * pitch + width.
  uint64_t slice_stride = 0, offset = 0, touched = 0, start = 0, end = 0;
  if (__builtin_mul_overflow(side.slice_height, side.pitch, &slice_stride) ||
      __builtin_mul_overflow(side.z, side.slice_height, &offset) || __builtin_add_overflow(offset, side.y, &offset) ||
      __builtin_mul_overflow(offset, side.pitch, &offset) || __builtin_add_overflow(offset, side.x_bytes, &offset) ||
      __builtin_mul_overflow(extent.depth - 1, side.slice_height, &touched) ||
      __builtin_add_overflow(touched, extent.height - 1, &touched) ||
      __builtin_mul_overflow(touched, side.pitch, &touched) ||
      __builtin_add_overflow(touched, extent.width_bytes, &touched) || __builtin_add_overflow(base, offset, &start) ||
      __builtin_add_overflow(start, touched, &end)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!LinearRangeUsable(side.type, start, touched, access, device)) return CUDA_ERROR_INVALID_VALUE;
  *out = ResolvedSide{reinterpret_cast<std::byte*>(start), side.pitch, slice_stride};
  return CUDA_SUCCESS;
}

// Array extents are bounded by the texture limits, so none of these sums can overflow once each
// term is checked against them.
CUresult ResolveArraySide(const CopySideParams& side, const CopyExtent& extent, ResolvedSide* out) {
  ArrayView view;
  if (FindArray(side.array, &view) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;  // copies document no INVALID_HANDLE
  const uint64_t row = view.RowBytes();
  if (side.x_bytes % view.element != 0 || extent.width_bytes % view.element != 0) return CUDA_ERROR_INVALID_VALUE;
  if (side.x_bytes > row || extent.width_bytes > row - side.x_bytes) return CUDA_ERROR_INVALID_VALUE;
  if (side.y > view.height || extent.height > view.height - side.y) return CUDA_ERROR_INVALID_VALUE;
  if (side.z > view.depth || extent.depth > view.depth - side.z) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t slice = row * view.height;
  *out = ResolvedSide{view.data + side.z * slice + side.y * row + side.x_bytes, row, slice};
  return CUDA_SUCCESS;
}

CUresult ResolveSide(const CopySideParams& side, const CopyExtent& extent, MemoryAccess access, int device,
                     ResolvedSide* out) {
  return side.type == CU_MEMORYTYPE_ARRAY ? ResolveArraySide(side, extent, out)
                                          : ResolveLinearSide(side, extent, access, device, out);
}

CopySideParams SourceOf(const CUDA_MEMCPY3D& p) {
  return {p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.reserved0, p.srcXInBytes,
          p.srcY,          p.srcZ,    p.srcLOD,    p.srcPitch, p.srcHeight};
}

CopySideParams DestinationOf(const CUDA_MEMCPY3D& p) {
  return {p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.reserved1, p.dstXInBytes,
          p.dstY,          p.dstZ,    p.dstLOD,    p.dstPitch, p.dstHeight};
}

CUresult Resolve3D(const CUDA_MEMCPY3D& params, int src_device, int dst_device, bool copy) {
  const CopySideParams src = SourceOf(params);
  const CopySideParams dst = DestinationOf(params);
  if (CUresult rc = CheckSideShape(src); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckSideShape(dst); rc != CUDA_SUCCESS) return rc;
  const CopyExtent extent{params.WidthInBytes, params.Height, params.Depth};
  if (extent.width_bytes == 0 || extent.height == 0 || extent.depth == 0) return CUDA_SUCCESS;
  ResolvedSide from, to;
  if (CUresult rc = ResolveSide(src, extent, MemoryAccess::kRead, src_device, &from); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = ResolveSide(dst, extent, MemoryAccess::kWrite, dst_device, &to); rc != CUDA_SUCCESS) return rc;
  if (!copy) return CUDA_SUCCESS;
  for (uint64_t z = 0; z < extent.depth; ++z) {
    for (uint64_t y = 0; y < extent.height; ++y) {
      std::memmove(to.start + z * to.slice_stride + y * to.row_stride,
                   from.start + z * from.slice_stride + y * from.row_stride, extent.width_bytes);
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult Copy3DBetween(const CUDA_MEMCPY3D& params, int src_device, int dst_device) {
  return Resolve3D(params, src_device, dst_device, true);
}

CUresult Copy3D(const CUDA_MEMCPY3D& params, int device) { return Resolve3D(params, device, device, true); }

CUresult Check3D(const CUDA_MEMCPY3D& params, int device) { return Resolve3D(params, device, device, false); }

}  // namespace fgpu::sim::cuda
