// How many bytes of device memory a CUDA array or mipmapped array takes, from its descriptor,
// computed as the simulated driver charges it (docs/sim-memory.md "Arrays"): width · max(h,1) ·
// max(d,1) · channels · component bytes; a mipmapped array the sum of its levels, each halving
// width, height and (unless layered or cubemap) depth, down to 1. The caller rounds the result
// to the device granularity once.
//
// Formats the simulator refuses but real GPUs accept are sized too, so they are never
// undercharged: block-compressed formats by 4x4 blocks (8 bytes for BC1/BC4, 16 for the
// others), video and packed formats at 8 bytes per texel (the largest of them, Y416).
// Returns 0 when the descriptor cannot be sized (zero width, no such format, channel count the
// format cannot have, no levels): the driver refuses those, so the wrapper forwards them
// untouched. Sparse and deferred-mapping arrays are 0 too, and so forwarded uncharged: they hold
// no memory of their own; the physical memory mapped under them with cuMemMapArrayAsync comes
// from cuMemCreate, which is charged. Saturates at UINT64_MAX instead of overflowing.
#pragma once

#include <cstdint>

#include "core/abi/cuda_types.h"

namespace fgpu::hook {

uint64_t ArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc);
uint64_t MipmappedArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc, unsigned int levels);

CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR& desc);
CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR_v1& desc);
CUDA_ARRAY3D_DESCRIPTOR From3D(const CUDA_ARRAY3D_DESCRIPTOR_v1& desc);

}  // namespace fgpu::hook
