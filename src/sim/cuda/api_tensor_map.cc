// Tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col[Wide], cuTensorMapReplaceAddress):
// pure host-side encodings. Every documented requirement is checked; a valid request fills the
// 128-byte map deterministically with fgpu's own layout (below), which nothing but these calls
// reads — simulated kernels compute nothing.
//
// Layout: opaque[0] the global address; [1] a tag (kTensorMapTag << 32) and the enumerated
// parameters; [2..6] the global dimensions; [7..10] the global strides; [11] the box dimensions
// (12 bits each); [12] the element strides (4 bits each), channels per pixel and pixels per
// column; [13] and [14] the lower and upper pixel-box corners (16 bits each); [15] zero.
#include <cstdint>
#include <cstring>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

constexpr uint64_t kTensorMapTag = 0x544D4150;  // "TMAP"
constexpr uint32_t kMaxTensorRank = 5;
constexpr uint64_t kMaxGlobalDim = uint64_t{1} << 32;
constexpr uint64_t kMaxGlobalStride = uint64_t{1} << 40;
constexpr uint32_t kMaxBoxDim = 256;
constexpr uint32_t kMaxElementStride = 8;

enum class MapKind : uint64_t { kTiled = 0, kIm2col = 1, kIm2colWide = 2 };

// Bits of one element; 0 for a type that does not exist.
unsigned ElementBits(int type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 8;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 16;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 32;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 64;
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return 4;    // 16 values in 8 bytes
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: return 8;   // 16 values in 16 bytes (8 of them gaps)
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B: return 8;   // 16 values in 16 bytes (4 of them gaps)
    default: return 0;
  }
}

bool IsFloat(int type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return true;
    default: return false;
  }
}

bool Packed16B(int type) {
  return type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

template <typename Enum>
int AsInt(Enum value) {  // a C caller may pass any int: read it as one, not as the enum
  int out = 0;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

// What every encoding shares.
struct MapRequest {
  CUtensorMap* map = nullptr;
  int type = 0;
  uint32_t rank = 0;
  uint64_t address = 0;
  const cuuint64_t* dims = nullptr;
  const cuuint64_t* strides = nullptr;
  const cuuint32_t* element_strides = nullptr;
  int interleave = 0;
  int swizzle = 0;
  int l2 = 0;
  int oob = 0;
};

// The global address's alignment: 16 bytes, 32 with 32-byte interleave or a packed 16-byte type.
uint64_t AddressAlignment(int type, int interleave) {
  return interleave == CU_TENSOR_MAP_INTERLEAVE_32B || Packed16B(type) ? 32 : 16;
}

// Bytes the swizzle pattern spans (the most the box's inner dimension may take); 0 for none.
uint64_t SwizzleBytes(int swizzle) {
  switch (swizzle) {
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
    default: return 128;  // the 128-byte patterns
  }
}

// The device must have tensor maps (compute capability `major` or above), with a current context.
CUresult MapDevice(int major) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().spec(ctx->device).cc_major >= major ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

// The requirements of cuda.h shared by the three encoders; `inner_bytes` is the box's inner
// dimension in bytes (boxDim[0] or channelsPerPixel times the element size).
CUresult CheckCommon(const MapRequest& r, uint32_t min_rank, uint64_t inner_bits) {
  if (r.map == nullptr || reinterpret_cast<uintptr_t>(r.map) % 64 != 0) return CUDA_ERROR_INVALID_VALUE;
  const unsigned bits = ElementBits(r.type);
  if (bits == 0) return CUDA_ERROR_INVALID_VALUE;
  if (r.interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || r.interleave > CU_TENSOR_MAP_INTERLEAVE_32B ||
      r.swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || r.swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
      r.l2 < CU_TENSOR_MAP_L2_PROMOTION_NONE || r.l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
      r.oob < CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE || r.oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (r.oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !IsFloat(r.type)) return CUDA_ERROR_INVALID_VALUE;
  const uint32_t least = r.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ? 3 : min_rank;
  if (r.rank < least || r.rank > kMaxTensorRank) return CUDA_ERROR_INVALID_VALUE;
  if (r.address % AddressAlignment(r.type, r.interleave) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (r.dims == nullptr || r.element_strides == nullptr || (r.rank > 1 && r.strides == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (uint32_t i = 0; i < r.rank; ++i) {
    if (r.dims[i] == 0 || r.dims[i] > kMaxGlobalDim) return CUDA_ERROR_INVALID_VALUE;
    if (r.element_strides[i] == 0 || r.element_strides[i] > kMaxElementStride) return CUDA_ERROR_INVALID_VALUE;
  }
  if (Packed16B(r.type) && r.dims[0] % 128 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (r.type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && r.dims[0] % 2 != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t stride_unit = r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B || Packed16B(r.type) ? 32 : 16;
  for (uint32_t i = 0; i + 1 < r.rank; ++i) {
    if (r.strides[i] % stride_unit != 0 || r.strides[i] >= kMaxGlobalStride) return CUDA_ERROR_INVALID_VALUE;
  }
  // Swizzles: 32-byte interleave needs the 32-byte pattern; without interleave the box's inner
  // dimension must fit in the pattern.
  if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_32B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && r.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
      inner_bits > SwizzleBytes(r.swizzle) * 8) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (r.type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (r.type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
      r.swizzle != CU_TENSOR_MAP_SWIZZLE_128B && r.swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

void Fill(const MapRequest& r, MapKind kind, uint64_t box, uint64_t pixel_fields, uint64_t lower, uint64_t upper,
          uint64_t wide_mode) {
  uint64_t q[CU_TENSOR_MAP_NUM_QWORDS] = {};
  q[0] = r.address;
  q[1] = kTensorMapTag << 32 | static_cast<uint64_t>(r.type) | uint64_t{r.rank} << 4 |
         static_cast<uint64_t>(r.interleave) << 8 | static_cast<uint64_t>(r.swizzle) << 10 |
         static_cast<uint64_t>(r.l2) << 13 | static_cast<uint64_t>(r.oob) << 15 | static_cast<uint64_t>(kind) << 16 |
         wide_mode << 18;
  for (uint32_t i = 0; i < r.rank; ++i) q[2 + i] = r.dims[i];
  for (uint32_t i = 0; i + 1 < r.rank; ++i) q[7 + i] = r.strides[i];
  q[11] = box;
  uint64_t element = 0;
  for (uint32_t i = 0; i < r.rank; ++i) element |= uint64_t{r.element_strides[i] - 1} << (4 * i);
  q[12] = element | pixel_fields << 20;
  q[13] = lower;
  q[14] = upper;
  std::memcpy(r.map->opaque, q, sizeof q);
}

uint64_t PackCorners(const int* corners, uint32_t count) {
  uint64_t packed = 0;
  for (uint32_t i = 0; i < count; ++i) packed |= uint64_t{static_cast<uint16_t>(corners[i])} << (16 * i);
  return packed;
}

CUresult EncodeTiled(const MapRequest& r, const cuuint32_t* box) {
  if (CUresult rc = MapDevice(9); rc != CUDA_SUCCESS) return rc;
  if (box == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t inner_bits = uint64_t{box[0]} * ElementBits(r.type);
  if (CUresult rc = CheckCommon(r, 1, inner_bits); rc != CUDA_SUCCESS) return rc;
  uint64_t packed = 0;
  for (uint32_t i = 0; i < r.rank; ++i) {
    if (box[i] == 0 || box[i] > kMaxBoxDim) return CUDA_ERROR_INVALID_VALUE;
    packed |= uint64_t{box[i]} << (12 * i);
  }
  if (r.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && inner_bits % 128 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Packed16B(r.type) && box[0] != 128) return CUDA_ERROR_INVALID_VALUE;
  Fill(r, MapKind::kTiled, packed, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}

CUresult EncodeIm2col(const MapRequest& r, const int* lower, const int* upper, uint32_t channels,
                      uint32_t pixels) {
  if (CUresult rc = MapDevice(9); rc != CUDA_SUCCESS) return rc;
  const uint64_t inner_bits = uint64_t{channels} * ElementBits(r.type);
  if (CUresult rc = CheckCommon(r, 3, inner_bits); rc != CUDA_SUCCESS) return rc;
  if (lower == nullptr || upper == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (channels == 0 || channels > 256 || pixels == 0 || pixels > 1024) return CUDA_ERROR_INVALID_VALUE;
  // One corner offset per spatial dimension (D, H, W: rank - 2), in a range that narrows with rank.
  const int bound = r.rank == 3 ? 32768 : r.rank == 4 ? 128 : 16;
  for (uint32_t i = 0; i + 2 < r.rank; ++i) {
    if (lower[i] < -bound || lower[i] >= bound || upper[i] < -bound || upper[i] >= bound) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  Fill(r, MapKind::kIm2col, 0, uint64_t{channels} | uint64_t{pixels} << 9, PackCorners(lower, r.rank - 2),
       PackCorners(upper, r.rank - 2), 0);
  return CUDA_SUCCESS;
}

CUresult ReplaceAddress(CUtensorMap* map, uint64_t address) {
  if (CUresult rc = MapDevice(9); rc != CUDA_SUCCESS) return rc;
  if (map == nullptr || reinterpret_cast<uintptr_t>(map) % 64 != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t fields = 0;
  std::memcpy(&fields, &map->opaque[1], sizeof fields);
  if (fields >> 32 != kTensorMapTag) return CUDA_ERROR_INVALID_VALUE;  // not a map these calls encoded
  const int type = static_cast<int>(fields & 0xF);
  const int interleave = static_cast<int>(fields >> 8 & 0x3);
  if (address % AddressAlignment(type, interleave) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(&map->opaque[0], &address, sizeof address);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  return sim::Guarded([&] {
    const sim::MapRequest request{tensorMap,      sim::AsInt(tensorDataType), tensorRank,
                                  reinterpret_cast<uint64_t>(globalAddress), globalDim, globalStrides,
                                  elementStrides, sim::AsInt(interleave),     sim::AsInt(swizzle),
                                  sim::AsInt(l2Promotion), sim::AsInt(oobFill)};
    return sim::EncodeTiled(request, boxDim);
  });
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                 void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                 const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill) {
  return sim::Guarded([&] {
    const sim::MapRequest request{tensorMap,      sim::AsInt(tensorDataType), tensorRank,
                                  reinterpret_cast<uint64_t>(globalAddress), globalDim, globalStrides,
                                  elementStrides, sim::AsInt(interleave),     sim::AsInt(swizzle),
                                  sim::AsInt(l2Promotion), sim::AsInt(oobFill)};
    return sim::EncodeIm2col(request, pixelBoxLowerCorner, pixelBoxUpperCorner, channelsPerPixel, pixelsPerColumn);
  });
}

// Compute capability 10.0 and above only: the simulated Hopper devices do not have it.
CUresult cuTensorMapEncodeIm2colWide(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
                                     const cuuint64_t* globalStrides, int pixelBoxLowerCornerWidth,
                                     int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
                                     cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill) {
  (void)tensorDataType, (void)tensorRank, (void)globalAddress, (void)globalDim, (void)globalStrides;
  (void)pixelBoxLowerCornerWidth, (void)pixelBoxUpperCornerWidth, (void)channelsPerPixel, (void)pixelsPerColumn;
  (void)elementStrides, (void)interleave, (void)mode, (void)swizzle, (void)l2Promotion, (void)oobFill;
  return sim::Guarded([&] {
    if (CUresult rc = sim::MapDevice(10); rc != CUDA_SUCCESS) return rc;
    return tensorMap == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;  // no such device yet
  });
}

CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  return sim::Guarded([&] { return sim::ReplaceAddress(tensorMap, reinterpret_cast<uint64_t>(globalAddress)); });
}

}  // extern "C"
