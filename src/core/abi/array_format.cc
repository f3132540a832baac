#include "core/abi/array_format.h"

namespace fgpu {
namespace {

ArrayFormatLayout Texel(bool channels_fit, uint64_t bytes) {
  return channels_fit ? ArrayFormatLayout{ArrayFormatKind::kTexel, bytes} : ArrayFormatLayout{};
}

}  // namespace

ArrayFormatLayout LayoutOfArrayFormat(CUarray_format format, unsigned channels) {
  const bool classic_channels = channels == 1 || channels == 2 || channels == 4;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return Texel(classic_channels, uint64_t{1} * channels);
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return Texel(classic_channels, uint64_t{2} * channels);
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return Texel(classic_channels, uint64_t{4} * channels);
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
      return Texel(named == channels, component * channels);
    }
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
      return {ArrayFormatKind::kBlockCompressed, 8};
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
      return {ArrayFormatKind::kBlockCompressed, 16};
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return {ArrayFormatKind::kVideoOrPacked, 4};
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
      return {ArrayFormatKind::kVideoOrPacked, 8};  // an upper bound: none of them takes more per texel than Y416
    default:
      return {};
  }
}

}  // namespace fgpu
