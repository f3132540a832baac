// The documented rules textures are checked against, shared by texture objects (api_texture.cc)
// and texture references (api_texref.cc): resources, formats, alignment and extents read from the
// device's texture attributes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/abi/cuda_types.h"

namespace fgpu::sim::cuda {

// A resource descriptor that passed ResolveResource: for an array or mipmapped array, the
// descriptor of (level 0 of) the array and its level count.
struct ResolvedResource {
  CUresourcetype type = CU_RESOURCE_TYPE_ARRAY;
  CUDA_ARRAY3D_DESCRIPTOR array{};
  unsigned levels = 0;
  bool is_array() const { return type == CU_RESOURCE_TYPE_ARRAY || type == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY; }
};

// CUDA_ERROR_INVALID_VALUE unless `desc` names a live array or mipmapped array, or device memory
// of `device` laid out as the documented linear / pitch2D rules require, and its flags are 0.
CUresult ResolveResource(const CUDA_RESOURCE_DESC& desc, int device, ResolvedResource* out);

// A device attribute of the texture family (alignments, extents).
int TextureAttribute(int device, CUdevice_attribute attribute);
// Bytes of one texel of a per-channel format with 1, 2 or 4 channels; 0 for anything else.
uint64_t TexelBytes(CUarray_format format, unsigned channels);
// Linear memory: at most MAXIMUM_TEXTURE1D_LINEAR_WIDTH texels inside device memory `device` can read.
CUresult CheckLinearRange(CUdeviceptr base, CUarray_format format, unsigned channels, size_t bytes, int device);
// CheckLinearRange, and the base aligned to TEXTURE_ALIGNMENT (texture objects).
CUresult CheckLinearTexture(CUdeviceptr base, CUarray_format format, unsigned channels, size_t bytes, int device);
// Pitched memory: base aligned to TEXTURE_ALIGNMENT, pitch to TEXTURE_PITCH_ALIGNMENT, extents and
// pitch within the MAXIMUM_TEXTURE2D_LINEAR_* attributes, rows inside readable device memory.
CUresult CheckPitch2DTexture(CUdeviceptr base, CUarray_format format, unsigned channels, size_t width, size_t height,
                             size_t pitch, int device);

}  // namespace fgpu::sim::cuda
