// Texture and surface objects (cuTexObject*, cuSurfObject*): descriptors validated against the
// documented rules and the device's texture attributes, stored, and read back exactly. A handle
// is a 64-bit value from a process-wide counter (never 0, never reused), so a destroyed object's
// handle stays refused. Simulated kernels sample nothing, so nothing else reads them.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/abi/array_format.h"
#include "core/abi/cuda_api.h"
#include "sim/cuda/device_attributes.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/texture_rules.h"

namespace fgpu::sim::cuda {
namespace {

struct TextureObject {
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};
  std::optional<CUDA_RESOURCE_VIEW_DESC> view;
};

struct SampledObjectTable {
  std::mutex mu;
  unsigned long long next_handle = 1;  // shared by both kinds: a surface handle is never a texture's
  std::unordered_map<unsigned long long, TextureObject> textures;
  std::unordered_map<unsigned long long, CUDA_RESOURCE_DESC> surfaces;
};

SampledObjectTable& SampledObjects() {
  static auto* table = new SampledObjectTable;  // never destroyed: looked up from atexit handlers
  return *table;
}

// Device memory the device can read: the whole range inside tracked memory that grants it.
bool DeviceReadable(CUdeviceptr base, uint64_t bytes, int device) {
  return bytes > 0 && base <= UINT64_MAX - bytes &&
         MemoryRegistry::Get().CanAccess(base, bytes, MemoryRegistry::Access::kRead, device);
}

constexpr unsigned kKnownTextureFlags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
                                        CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;

bool IsBlockCompressedView(int format) {
  return format >= CU_RES_VIEW_FORMAT_UNSIGNED_BC1 && format <= CU_RES_VIEW_FORMAT_UNSIGNED_BC7;
}

// BC1 and BC4 views need an array of 2-channel UNSIGNED_INT32 texels; the other BC formats 4 channels.
unsigned BlockCompressedChannels(int format) {
  return format == CU_RES_VIEW_FORMAT_UNSIGNED_BC1 || format == CU_RES_VIEW_FORMAT_UNSIGNED_BC4 ||
                 format == CU_RES_VIEW_FORMAT_SIGNED_BC4
             ? 2
             : 4;
}

// The resource view rules of cuTexObjectCreate, against the viewed array's level 0 descriptor and
// level count.
CUresult CheckResourceView(const CUDA_RESOURCE_VIEW_DESC& view, const ResolvedResource& resource) {
  int format = 0;
  std::memcpy(&format, &view.format, sizeof format);  // a C caller may pass any int
  if (format < CU_RES_VIEW_FORMAT_NONE || format > CU_RES_VIEW_FORMAT_UNSIGNED_BC7) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR& base = resource.array;
  if (IsBlockCompressedView(format)) {
    if (base.Format != CU_AD_FORMAT_UNSIGNED_INT32 || base.NumChannels != BlockCompressedChannels(format)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (view.width != base.Width * 4 || view.height != std::max<size_t>(base.Height, 1) * 4) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  } else if (view.width != base.Width || view.height != base.Height) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool layered = (base.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  if (view.depth != base.Depth) return CUDA_ERROR_INVALID_VALUE;
  if (view.firstMipmapLevel > view.lastMipmapLevel || view.lastMipmapLevel >= resource.levels) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (view.firstLayer > view.lastLayer) return CUDA_ERROR_INVALID_VALUE;
  if (!layered && view.lastLayer != 0) return CUDA_ERROR_INVALID_VALUE;
  if (layered && view.lastLayer >= base.Depth) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// Enumerations a C caller may have filled with any int.
bool EnumValueIn(const void* value, int lowest, int highest) {
  int v = 0;
  std::memcpy(&v, value, sizeof v);
  return v >= lowest && v <= highest;
}

CUresult CheckTextureDesc(const CUDA_TEXTURE_DESC& texture, const ResolvedResource& resource) {
  if ((texture.flags & ~kKnownTextureFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  // Address and filter modes are ignored for linear memory; elsewhere they must be modes. Without
  // normalized coordinates every address mode is accepted and stored: the hardware clamps.
  if (resource.type != CU_RESOURCE_TYPE_LINEAR) {
    for (const CUaddress_mode& mode : texture.addressMode) {
      if (!EnumValueIn(&mode, CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_BORDER)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (!EnumValueIn(&texture.filterMode, CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (resource.type == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) {
    if ((texture.flags & CU_TRSF_NORMALIZED_COORDINATES) == 0) return CUDA_ERROR_INVALID_VALUE;
    if (!EnumValueIn(&texture.mipmapFilterMode, CU_TR_FILTER_MODE_POINT, CU_TR_FILTER_MODE_LINEAR)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  const bool cubemap = resource.is_array() && (resource.array.Flags & CUDA_ARRAY3D_CUBEMAP) != 0;
  if ((texture.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0 && !cubemap) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CreateTexture(CUtexObject* out, const CUDA_RESOURCE_DESC* resource_desc, const CUDA_TEXTURE_DESC* texture_desc,
                       const CUDA_RESOURCE_VIEW_DESC* view_desc) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || resource_desc == nullptr || texture_desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ResolvedResource resource;
  if (CUresult rc = ResolveResource(*resource_desc, ctx->device, &resource); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckTextureDesc(*texture_desc, resource); rc != CUDA_SUCCESS) return rc;
  if (view_desc != nullptr) {
    if (!resource.is_array()) return CUDA_ERROR_INVALID_VALUE;  // views are of arrays only
    if (CUresult rc = CheckResourceView(*view_desc, resource); rc != CUDA_SUCCESS) return rc;
  }
  TextureObject object;
  object.resource = *resource_desc;
  object.texture = *texture_desc;
  if (view_desc != nullptr) object.view = *view_desc;
  SampledObjectTable& table = SampledObjects();
  std::lock_guard lock(table.mu);
  const unsigned long long handle = table.next_handle++;
  table.textures.emplace(handle, object);
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult CreateSurface(CUsurfObject* out, const CUDA_RESOURCE_DESC* resource_desc) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || resource_desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Surfaces are of arrays made for surface load/store only.
  if (!EnumValueIn(&resource_desc->resType, CU_RESOURCE_TYPE_ARRAY, CU_RESOURCE_TYPE_ARRAY)) return CUDA_ERROR_INVALID_VALUE;
  ResolvedResource resource;
  if (CUresult rc = ResolveResource(*resource_desc, ctx->device, &resource); rc != CUDA_SUCCESS) return rc;
  if ((resource.array.Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) return CUDA_ERROR_INVALID_VALUE;
  SampledObjectTable& table = SampledObjects();
  std::lock_guard lock(table.mu);
  const unsigned long long handle = table.next_handle++;
  table.surfaces.emplace(handle, *resource_desc);
  *out = handle;
  return CUDA_SUCCESS;
}

// Reads a live object under the table's lock; CUDA_ERROR_INVALID_VALUE for any other value.
template <typename Map, typename Read>
CUresult WithSampledObject(Map SampledObjectTable::*map, unsigned long long handle, Read&& read) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  SampledObjectTable& table = SampledObjects();
  std::lock_guard lock(table.mu);
  auto it = (table.*map).find(handle);
  if (it == (table.*map).end()) return CUDA_ERROR_INVALID_VALUE;
  return read(it->second);
}

template <typename Map>
CUresult DestroySampledObject(Map SampledObjectTable::*map, unsigned long long handle) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  SampledObjectTable& table = SampledObjects();
  std::lock_guard lock(table.mu);
  return (table.*map).erase(handle) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

CUresult ResolveResource(const CUDA_RESOURCE_DESC& desc, int device, ResolvedResource* out) {
  if (desc.flags != 0) return CUDA_ERROR_INVALID_VALUE;
  int type = 0;
  std::memcpy(&type, &desc.resType, sizeof type);
  out->type = static_cast<CUresourcetype>(type);
  switch (type) {
    case CU_RESOURCE_TYPE_ARRAY:
      out->levels = 1;
      // A stale or foreign handle is refused by the array code itself.
      return cuArray3DGetDescriptor_v2(&out->array, desc.res.array.hArray) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                                                          : CUDA_ERROR_INVALID_VALUE;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      CUarray level = nullptr;
      if (cuMipmappedArrayGetLevel(&level, desc.res.mipmap.hMipmappedArray, 0) != CUDA_SUCCESS ||
          cuArray3DGetDescriptor_v2(&out->array, level) != CUDA_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      out->levels = 1;
      while (cuMipmappedArrayGetLevel(&level, desc.res.mipmap.hMipmappedArray, out->levels) == CUDA_SUCCESS) {
        ++out->levels;
      }
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_LINEAR: {
      const auto& linear = desc.res.linear;
      return CheckLinearTexture(linear.devPtr, linear.format, linear.numChannels, linear.sizeInBytes, device);
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto& pitched = desc.res.pitch2D;
      return CheckPitch2DTexture(pitched.devPtr, pitched.format, pitched.numChannels, pitched.width, pitched.height,
                                 pitched.pitchInBytes, device);
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

int TextureAttribute(int device, CUdevice_attribute attribute) {
  int value = 0;
  (void)DeviceAttribute(Runtime::Get().spec(device), device, attribute, &value);
  return value;
}

uint64_t TexelBytes(CUarray_format format, unsigned channels) {
  if (channels != 1 && channels != 2 && channels != 4) return 0;
  const ArrayFormatLayout layout = LayoutOfArrayFormat(format, channels);
  return layout.kind == ArrayFormatKind::kTexel ? layout.bytes : 0;
}

CUresult CheckLinearRange(CUdeviceptr base, CUarray_format format, unsigned channels, size_t bytes, int device) {
  const uint64_t texel = TexelBytes(format, channels);
  if (texel == 0 || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto max_texels =
      static_cast<uint64_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH));
  if (bytes / texel > max_texels) return CUDA_ERROR_INVALID_VALUE;
  return DeviceReadable(base, bytes, device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CheckLinearTexture(CUdeviceptr base, CUarray_format format, unsigned channels, size_t bytes, int device) {
  const auto alignment = static_cast<uint64_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  if (base % alignment != 0) return CUDA_ERROR_INVALID_VALUE;
  return CheckLinearRange(base, format, channels, bytes, device);
}

CUresult CheckPitch2DTexture(CUdeviceptr base, CUarray_format format, unsigned channels, size_t width, size_t height,
                             size_t pitch, int device) {
  const uint64_t texel = TexelBytes(format, channels);
  if (texel == 0 || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto alignment = static_cast<uint64_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  const auto pitch_alignment =
      static_cast<uint64_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT));
  if (base % alignment != 0 || pitch % pitch_alignment != 0) return CUDA_ERROR_INVALID_VALUE;
  if (width > static_cast<size_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH)) ||
      height > static_cast<size_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT)) ||
      pitch > static_cast<size_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (width * texel > pitch) return CUDA_ERROR_INVALID_VALUE;  // bounded above: no overflow
  return DeviceReadable(base, uint64_t{pitch} * (height - 1) + width * texel, device) ? CUDA_SUCCESS
                                                                                      : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc, const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  return sim::Guarded([&] { return sim::CreateTexture(pTexObject, pResDesc, pTexDesc, pResViewDesc); });
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  return sim::Guarded([&] { return sim::DestroySampledObject(&sim::SampledObjectTable::textures, texObject); });
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  return sim::Guarded([&] {
    return sim::WithSampledObject(&sim::SampledObjectTable::textures, texObject, [&](const sim::TextureObject& object) {
      if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *pResDesc = object.resource;
      return CUDA_SUCCESS;
    });
  });
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  return sim::Guarded([&] {
    return sim::WithSampledObject(&sim::SampledObjectTable::textures, texObject, [&](const sim::TextureObject& object) {
      if (pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *pTexDesc = object.texture;
      return CUDA_SUCCESS;
    });
  });
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc, CUtexObject texObject) {
  return sim::Guarded([&] {
    return sim::WithSampledObject(&sim::SampledObjectTable::textures, texObject, [&](const sim::TextureObject& object) {
      if (pResViewDesc == nullptr || !object.view) return CUDA_ERROR_INVALID_VALUE;  // none was given
      *pResViewDesc = *object.view;
      return CUDA_SUCCESS;
    });
  });
}

CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  return sim::Guarded([&] { return sim::CreateSurface(pSurfObject, pResDesc); });
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  return sim::Guarded([&] { return sim::DestroySampledObject(&sim::SampledObjectTable::surfaces, surfObject); });
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  return sim::Guarded([&] {
    return sim::WithSampledObject(&sim::SampledObjectTable::surfaces, surfObject, [&](const CUDA_RESOURCE_DESC& resource) {
      if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *pResDesc = resource;
      return CUDA_SUCCESS;
    });
  });
}

}  // extern "C"
