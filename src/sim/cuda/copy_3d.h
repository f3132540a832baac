// One synchronous, validated 3D copy between any two of host, device, unified and array memory:
// the engine behind cuMemcpy3D*, cuMemcpy2D* (a copy of depth 1), the 1D array copies and the
// batch copies, and what a graph memcpy node runs.
//
// Validation is cuMemcpy3D's (cuda.h): known memory types, NULL reserved pointers, srcLOD and
// dstLOD 0, array offsets and WidthInBytes multiples of the array's element size and inside the
// array, pitch >= x + WidthInBytes when more than one row is copied, slice height >= y + Height
// when more than one slice is, no pitch above CU_DEVICE_ATTRIBUTE_MAX_PITCH, and every byte the
// copy touches inside memory the device may read (source) or write (destination). Anything else is
// CUDA_ERROR_INVALID_VALUE, and nothing is copied unless everything is valid. A zero extent copies
// nothing and succeeds once the memory types are checked.
//
// The caller has already waited as its entry point requires (synchronous or stream order) and
// holds no simulator lock.
#pragma once

#include "core/abi/cuda_types.h"

namespace fgpu::sim::cuda {

// Copies as `device` (the copying context's device) would: both sides are checked for its access.
CUresult Copy3D(const CUDA_MEMCPY3D& params, int device);

// The same, with the source checked for access by `src_device` and the destination by
// `dst_device` (cuMemcpy3DPeer: each side belongs to its own context).
CUresult Copy3DBetween(const CUDA_MEMCPY3D& params, int src_device, int dst_device);

// Copy3D's validation alone, touching nothing (a batch checks every copy before it runs one).
CUresult Check3D(const CUDA_MEMCPY3D& params, int device);

}  // namespace fgpu::sim::cuda
