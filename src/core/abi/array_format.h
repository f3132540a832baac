// How a CUDA array format lays out texels: the one table both the simulated driver and the
// interposer size arrays from. Each layer decides what it accepts: the simulator models only
// texel formats; the interposer charges every format a real GPU accepts.
#pragma once

#include <cstdint>

#include "core/abi/cuda_types.h"

namespace fgpu {

enum class ArrayFormatKind : uint8_t {
  kInvalid,          // not a format, or a channel count the format cannot have
  kTexel,            // per-channel integer/float formats and the normalised x1/x2/x4 families
  kBlockCompressed,  // BC1..BC7: `bytes` per 4x4 block
  kVideoOrPacked,    // video (NV12, P010, ...) and packed (101010_2): `bytes` per texel, an upper bound
};

struct ArrayFormatLayout {
  ArrayFormatKind kind = ArrayFormatKind::kInvalid;
  uint64_t bytes = 0;  // per texel, or per 4x4 block when kind is kBlockCompressed
};

// Texel formats need NumChannels 1, 2 or 4 (the normalised ones exactly the count they name);
// block-compressed, video and packed formats do not look at it.
ArrayFormatLayout LayoutOfArrayFormat(CUarray_format format, unsigned channels);

}  // namespace fgpu
