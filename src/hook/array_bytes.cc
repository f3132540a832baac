#include "hook/array_bytes.h"

#include <algorithm>

namespace fgpu::hook {
namespace {

constexpr unsigned kMaxLevels = 64;  // 1 + log2 of any size_t extent

uint64_t SaturatingMultiply(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// How a format lays out texels: bytes per texel, or bytes per 4x4 block (block-compressed).
struct Layout {
  uint64_t bytes = 0;  // 0: not a format, or channels it cannot have
  bool blocks = false;
};

Layout FormatLayout(CUarray_format format, unsigned channels) {
  const bool classic_channels = channels == 1 || channels == 2 || channels == 4;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return {classic_channels ? uint64_t{1} * channels : 0};
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return {classic_channels ? uint64_t{2} * channels : 0};
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return {classic_channels ? uint64_t{4} * channels : 0};
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X4: {
      // Groups of x1, x2, x4 in the order unorm8, unorm16, snorm8, snorm16; the channel count
      // the format names must be NumChannels.
      const int index = static_cast<int>(format) - CU_AD_FORMAT_UNORM_INT8X1;
      const unsigned named = 1u << (index % 3);
      const uint64_t component = (index / 3) % 2 == 0 ? 1 : 2;
      return {named == channels ? component * channels : 0};
    }
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
      return {8, true};
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
      return {16, true};
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return {4};
    case CU_AD_FORMAT_NV12:
    case CU_AD_FORMAT_P010:
    case CU_AD_FORMAT_P016:
    case CU_AD_FORMAT_NV16:
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
    case CU_AD_FORMAT_YUY2:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410:
    case CU_AD_FORMAT_Y416:
    case CU_AD_FORMAT_Y444_PLANAR8:
    case CU_AD_FORMAT_Y444_PLANAR10:
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar:
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar:
      return {8};  // an upper bound: none of them takes more per texel than Y416
    default:
      return {};
  }
}

uint64_t LevelBytes(const Layout& layout, uint64_t width, uint64_t height, uint64_t depth) {
  height = std::max<uint64_t>(height, 1);
  depth = std::max<uint64_t>(depth, 1);
  if (layout.blocks) {
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
  const Layout layout = FormatLayout(desc.Format, desc.NumChannels);
  if (layout.bytes == 0 || desc.Width == 0 || levels == 0 || levels > kMaxLevels) return 0;
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
