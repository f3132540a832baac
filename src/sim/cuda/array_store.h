// What the copies need to know of a CUDA array: where its texels live and how they are laid out.
//
// Arrays are backed like device memory (docs/sim-memory.md): a private anonymous mapping with
// MAP_NORESERVE, so an array costs host memory only where it is written. Texels are stored row
// after row (width * element bytes per row), rows of a slice after one another, slices (depth,
// layers, cubemap faces) after one another. The layout is the simulator's: programs cannot see it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/abi/cuda_types.h"

namespace fgpu::sim::cuda {

struct ArrayView {
  std::byte* data = nullptr;  // width * height * depth * element bytes
  uint64_t width = 0;         // in elements
  uint64_t height = 1;        // rows per slice, at least 1
  uint64_t depth = 1;         // slices, at least 1
  uint64_t element = 0;       // bytes per element
  int device = 0;
  uint64_t RowBytes() const { return width * element; }
  uint64_t Bytes() const { return RowBytes() * height * depth; }
};

// A live array (mipmap levels and planes included) as copies see it: CUDA_ERROR_INVALID_HANDLE
// for anything else, CUDA_ERROR_INVALID_VALUE for a deferred-mapping array with no memory mapped.
// The view stays valid until the array is destroyed; destroying an array while a copy uses it
// is the application's bug, as with cuMemFree.
CUresult FindArray(CUarray handle, ArrayView* out);

// Deferred-mapping arrays (defined in api_vmm.cc): maps `bytes` of the physical memory behind a
// live VMM handle, from `offset`, as shared memory the array's texels then live in, and counts it
// as a mapping of the handle so the memory (and its charge) stays until it is unmapped.
// CUDA_ERROR_INVALID_VALUE for an unknown or released handle, a range outside it, or memory on
// another device than `device`.
CUresult MapPhysicalIntoArray(CUmemGenericAllocationHandle handle, uint64_t offset, uint64_t bytes, int device,
                              std::byte** data);
void UnmapPhysicalFromArray(CUmemGenericAllocationHandle handle, void* data, uint64_t bytes);

// Sparse arrays: whether `bytes` from `offset` lie inside a live VMM handle on `device`
// (CUDA_ERROR_INVALID_VALUE otherwise). Nothing is mapped.
CUresult CheckPhysicalRange(CUmemGenericAllocationHandle handle, uint64_t offset, uint64_t bytes, int device);

}  // namespace fgpu::sim::cuda
