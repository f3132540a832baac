#include "hook/memory/array_bytes.h"

#include <algorithm>

#include "core/abi/array_format.h"
#include "hook/memory/saturating.h"

namespace fgpu::hook {
namespace {

constexpr unsigned kMaxLevels = 64;  // 1 + log2 of any size_t extent

uint64_t LevelBytes(const ArrayFormatLayout& layout, uint64_t width, uint64_t height, uint64_t depth) {
  height = std::max<uint64_t>(height, 1);
  depth = std::max<uint64_t>(depth, 1);
  if (layout.kind == ArrayFormatKind::kBlockCompressed) {
    width = width / 4 + (width % 4 != 0 ? 1 : 0);
    height = height / 4 + (height % 4 != 0 ? 1 : 0);
  }
  return SaturatingMultiply(SaturatingMultiply(SaturatingMultiply(width, height), depth), layout.bytes);
}

uint64_t Shrink(uint64_t extent, unsigned level) {
  return extent == 0 ? 0 : std::max<uint64_t>(extent >> level, 1);
}

}  // namespace

uint64_t ArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc) { return MipmappedArrayBytes(desc, 1); }

uint64_t MipmappedArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc, unsigned int levels) {
  const ArrayFormatLayout layout = LayoutOfArrayFormat(desc.Format, desc.NumChannels);
  if (layout.bytes == 0 || desc.Width == 0 || levels == 0 || levels > kMaxLevels) return 0;
  // Such an array has no memory of its own: what is mapped under it (cuMemMapArrayAsync) is
  // cuMemCreate's, charged there.
  if ((desc.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) != 0) return 0;
  const bool layers = (desc.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  uint64_t total = 0;
  for (unsigned level = 0; level < levels; ++level) {
    const uint64_t depth = layers ? desc.Depth : Shrink(desc.Depth, level);
    total = SaturatingAdd(total,
                          LevelBytes(layout, Shrink(desc.Width, level), Shrink(desc.Height, level), depth));
  }
  return total;
}

CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR& desc) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = desc.Width;
  out.Height = desc.Height;
  out.Format = desc.Format;
  out.NumChannels = desc.NumChannels;
  return out;
}

CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR_v1& desc) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = desc.Width;
  out.Height = desc.Height;
  out.Format = desc.Format;
  out.NumChannels = desc.NumChannels;
  return out;
}

CUDA_ARRAY3D_DESCRIPTOR From3D(const CUDA_ARRAY3D_DESCRIPTOR_v1& desc) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = desc.Width;
  out.Height = desc.Height;
  out.Depth = desc.Depth;
  out.Format = desc.Format;
  out.NumChannels = desc.NumChannels;
  out.Flags = desc.Flags;
  return out;
}

}  // namespace fgpu::hook
