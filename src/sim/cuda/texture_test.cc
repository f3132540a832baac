// Tests of texture and surface objects and references: descriptors checked against the documented
// rules and the device's texture attributes, stored and read back exactly, stale handles refused.
// Each test runs in a forked child.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kTextureConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunTextureSim(const std::function<std::string()>& body) {
  return RunWithConfig(kTextureConfig, "texture-test", body);
}

CUarray MakeTextureArray(size_t width, size_t height, size_t depth, unsigned flags, CUarray_format format = CU_AD_FORMAT_FLOAT,
                  unsigned channels = 1) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = width;
  desc.Height = height;
  desc.Depth = depth;
  desc.Format = format;
  desc.NumChannels = channels;
  desc.Flags = flags;
  CUarray array = nullptr;
  return cuArray3DCreate_v2(&array, &desc) == CUDA_SUCCESS ? array : nullptr;
}

CUDA_RESOURCE_DESC TextureArrayResource(CUarray array) {
  CUDA_RESOURCE_DESC desc{};
  desc.resType = CU_RESOURCE_TYPE_ARRAY;
  desc.res.array.hArray = array;
  return desc;
}

CUDA_RESOURCE_DESC LinearResource(CUdeviceptr ptr, size_t bytes) {
  CUDA_RESOURCE_DESC desc{};
  desc.resType = CU_RESOURCE_TYPE_LINEAR;
  desc.res.linear.devPtr = ptr;
  desc.res.linear.format = CU_AD_FORMAT_FLOAT;
  desc.res.linear.numChannels = 4;
  desc.res.linear.sizeInBytes = bytes;
  return desc;
}

CUDA_RESOURCE_DESC PitchResource(CUdeviceptr ptr, size_t width, size_t height, size_t pitch) {
  CUDA_RESOURCE_DESC desc{};
  desc.resType = CU_RESOURCE_TYPE_PITCH2D;
  desc.res.pitch2D.devPtr = ptr;
  desc.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT8;
  desc.res.pitch2D.numChannels = 4;
  desc.res.pitch2D.width = width;
  desc.res.pitch2D.height = height;
  desc.res.pitch2D.pitchInBytes = pitch;
  return desc;
}

// Stores in an enumeration a value it does not name, as a C caller may.
template <typename Enum>
void StoreOutOfRange(Enum* field, int value) {
  std::memcpy(field, &value, sizeof *field);
}

// The reference setters as a C caller sees them: the mode is any int.
using SetAddressModeAsC = CUresult (*)(CUtexref, int, int);
using SetFilterModeAsC = CUresult (*)(CUtexref, int);

bool SameTextureBytes(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }

TEST(SimTexture, AttributesAreTheH100TextureLimits) {
  EXPECT_EQ(RunTextureSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    auto attribute = [](CUdevice_attribute id) {
      int value = -1;
      return cuDeviceGetAttribute(&value, id, 0) == CUDA_SUCCESS ? value : -1;
    };
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT) == 512);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT) == 32);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH) == (1 << 28));
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH) == 131072);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT) == 65000);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH) == 2097120);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH) == 131072);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH) == 16384);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS) == 2048);
    FGPU_REQUIRE(attribute(CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT) == 512);
    return std::string();
  }), "");
}

TEST(SimTexture, ObjectsOfEveryResourceReadBackExactly) {
  EXPECT_EQ(RunTextureSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 1 << 20), CUDA_SUCCESS);
    CUarray array = MakeTextureArray(64, 32, 0, 0);
    FGPU_REQUIRE(array != nullptr);
    CUDA_ARRAY3D_DESCRIPTOR mip_desc{};
    mip_desc.Width = 64;
    mip_desc.Height = 64;
    mip_desc.Format = CU_AD_FORMAT_HALF;
    mip_desc.NumChannels = 2;
    CUmipmappedArray mipmapped = nullptr;
    FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmapped, &mip_desc, 4), CUDA_SUCCESS);

    CUDA_TEXTURE_DESC texture{};
    texture.addressMode[0] = CU_TR_ADDRESS_MODE_MIRROR;
    texture.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
    texture.filterMode = CU_TR_FILTER_MODE_LINEAR;
    texture.flags = CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER;
    texture.maxAnisotropy = 8;
    texture.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
    texture.mipmapLevelBias = 0.5f;
    texture.minMipmapLevelClamp = 1.25f;
    texture.maxMipmapLevelClamp = 3.0f;
    texture.borderColor[0] = 0.25f;
    texture.borderColor[3] = 1.0f;

    CUDA_RESOURCE_DESC mip_resource{};
    mip_resource.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    mip_resource.res.mipmap.hMipmappedArray = mipmapped;
    const CUDA_RESOURCE_DESC resources[] = {TextureArrayResource(array), mip_resource, LinearResource(memory, 4096),
                                            PitchResource(memory, 100, 20, 512)};
    std::set<CUtexObject> handles;
    for (const CUDA_RESOURCE_DESC& resource : resources) {
      CUtexObject object = 0;
      FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &resource, &texture, nullptr), CUDA_SUCCESS);
      FGPU_REQUIRE(object != 0 && handles.insert(object).second);
      CUDA_RESOURCE_DESC resource_back{};
      CUDA_TEXTURE_DESC texture_back{};
      FGPU_REQUIRE_CU(cuTexObjectGetResourceDesc(&resource_back, object), CUDA_SUCCESS);
      FGPU_REQUIRE(SameTextureBytes(&resource_back, &resource, sizeof resource));
      FGPU_REQUIRE_CU(cuTexObjectGetTextureDesc(&texture_back, object), CUDA_SUCCESS);
      FGPU_REQUIRE(SameTextureBytes(&texture_back, &texture, sizeof texture));
      CUDA_RESOURCE_VIEW_DESC view{};
      FGPU_REQUIRE_CU(cuTexObjectGetResourceViewDesc(&view, object), CUDA_ERROR_INVALID_VALUE);  // none given
      FGPU_REQUIRE_CU(cuTexObjectGetResourceDesc(nullptr, object), CUDA_ERROR_INVALID_VALUE);
    }
    // A view of the mipmapped array: levels 1..3, the base format.
    CUDA_RESOURCE_VIEW_DESC view{};
    view.format = CU_RES_VIEW_FORMAT_FLOAT_2X16;
    view.width = 64;
    view.height = 64;
    view.firstMipmapLevel = 1;
    view.lastMipmapLevel = 3;
    CUtexObject viewed = 0;
    FGPU_REQUIRE_CU(cuTexObjectCreate(&viewed, &resources[1], &texture, &view), CUDA_SUCCESS);
    CUDA_RESOURCE_VIEW_DESC view_back{};
    FGPU_REQUIRE_CU(cuTexObjectGetResourceViewDesc(&view_back, viewed), CUDA_SUCCESS);
    FGPU_REQUIRE(SameTextureBytes(&view_back, &view, sizeof view));
    view.lastMipmapLevel = 4;  // the array has levels 0..3
    CUtexObject refused = 0;
    FGPU_REQUIRE_CU(cuTexObjectCreate(&refused, &resources[1], &texture, &view), CUDA_ERROR_INVALID_VALUE);

    // Destroyed handles, and values never handed out, are refused everywhere.
    for (CUtexObject object : handles) FGPU_REQUIRE_CU(cuTexObjectDestroy(object), CUDA_SUCCESS);
    for (CUtexObject object : handles) {
      CUDA_RESOURCE_DESC resource_back{};
      FGPU_REQUIRE_CU(cuTexObjectDestroy(object), CUDA_ERROR_INVALID_VALUE);
      FGPU_REQUIRE_CU(cuTexObjectGetResourceDesc(&resource_back, object), CUDA_ERROR_INVALID_VALUE);
    }
    FGPU_REQUIRE_CU(cuTexObjectDestroy(viewed), CUDA_SUCCESS);
    CUDA_TEXTURE_DESC texture_back{};
    FGPU_REQUIRE_CU(cuTexObjectGetTextureDesc(&texture_back, 0xDEADBEEFCAFEull), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexObjectDestroy(0), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimTexture, ObjectsFollowTheDocumentedRules) {
  EXPECT_EQ(RunTextureSim([] {
    CUtexObject object = 0;
    CUDA_TEXTURE_DESC texture{};
    const CUDA_RESOURCE_DESC nothing{};
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &nothing, &texture, nullptr), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuTexObjectDestroy(1), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &nothing, &texture, nullptr), CUDA_ERROR_INVALID_CONTEXT);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 1 << 20), CUDA_SUCCESS);
    CUDA_RESOURCE_DESC linear = LinearResource(memory, 4096);
    FGPU_REQUIRE_CU(cuTexObjectCreate(nullptr, &linear, &texture, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, nullptr, &texture, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &linear, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);

    auto refused = [&](const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& sampling,
                       const CUDA_RESOURCE_VIEW_DESC* view = nullptr) {
      CUtexObject out = 0;
      return cuTexObjectCreate(&out, &resource, &sampling, view) == CUDA_ERROR_INVALID_VALUE && out == 0;
    };
    // Linear memory: aligned to TEXTURE_ALIGNMENT, inside device memory, at most 2^28 texels.
    FGPU_REQUIRE(refused(LinearResource(memory + 256, 4096), texture));
    FGPU_REQUIRE(refused(LinearResource(memory, (1 << 20) + 16), texture));
    FGPU_REQUIRE(refused(LinearResource(0x1000, 4096), texture));
    FGPU_REQUIRE(refused(LinearResource(memory, 0), texture));
    CUDA_RESOURCE_DESC bad_format = linear;
    bad_format.res.linear.numChannels = 3;
    FGPU_REQUIRE(refused(bad_format, texture));
    bad_format = linear;
    bad_format.res.linear.format = static_cast<CUarray_format>(0x77);
    FGPU_REQUIRE(refused(bad_format, texture));
    CUDA_RESOURCE_DESC flagged = linear;
    flagged.flags = 1;
    FGPU_REQUIRE(refused(flagged, texture));
    CUDA_RESOURCE_DESC unknown_type = linear;
    StoreOutOfRange(&unknown_type.resType, 9);
    FGPU_REQUIRE(refused(unknown_type, texture));
    // Pitched memory: pitch aligned to TEXTURE_PITCH_ALIGNMENT, rows within it, extents within the limits.
    FGPU_REQUIRE(refused(PitchResource(memory, 100, 20, 500), texture));   // pitch not a multiple of 32
    FGPU_REQUIRE(refused(PitchResource(memory, 200, 20, 512), texture));   // 800-byte rows in 512
    FGPU_REQUIRE(refused(PitchResource(memory, 100, 65001, 512), texture));  // taller than the limit
    FGPU_REQUIRE(refused(PitchResource(memory, 100, 4096, 512), texture));   // past the allocation
    FGPU_REQUIRE(refused(PitchResource(memory + 32, 100, 20, 512), texture));

    // Sampling state: known flags and modes; a view of arrays only; mipmaps need normalized coordinates.
    CUDA_TEXTURE_DESC bad = texture;
    bad.flags = 0x100;
    FGPU_REQUIRE(refused(linear, bad));
    CUarray array = MakeTextureArray(64, 64, 0, 0);
    FGPU_REQUIRE(array != nullptr);
    bad = texture;
    StoreOutOfRange(&bad.addressMode[2], 4);
    FGPU_REQUIRE(refused(TextureArrayResource(array), bad));
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &linear, &bad, nullptr), CUDA_SUCCESS);  // ignored for linear
    FGPU_REQUIRE_CU(cuTexObjectDestroy(object), CUDA_SUCCESS);
    bad = texture;
    StoreOutOfRange(&bad.filterMode, 2);
    FGPU_REQUIRE(refused(TextureArrayResource(array), bad));
    bad = texture;
    bad.flags = CU_TRSF_SEAMLESS_CUBEMAP;
    FGPU_REQUIRE(refused(TextureArrayResource(array), bad));
    CUarray cubemap = MakeTextureArray(32, 32, 6, CUDA_ARRAY3D_CUBEMAP);
    FGPU_REQUIRE(cubemap != nullptr);
    const CUDA_RESOURCE_DESC cube_resource = TextureArrayResource(cubemap);
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &cube_resource, &bad, nullptr), CUDA_SUCCESS);
    CUDA_RESOURCE_VIEW_DESC view{};
    view.width = 64;
    view.height = 64;
    FGPU_REQUIRE(refused(linear, texture, &view));
    StoreOutOfRange(&view.format, 0x40);
    FGPU_REQUIRE(refused(TextureArrayResource(array), texture, &view));
    view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
    view.width = 32;
    FGPU_REQUIRE(refused(TextureArrayResource(array), texture, &view));  // not the array's width
    view.width = 64;
    view.lastLayer = 1;
    FGPU_REQUIRE(refused(TextureArrayResource(array), texture, &view));  // not a layered array
    view.lastLayer = 0;
    view.lastMipmapLevel = 1;
    FGPU_REQUIRE(refused(TextureArrayResource(array), texture, &view));  // not a mipmapped array
    // A block-compressed view: 4x the extents of a 2-channel UNSIGNED_INT32 array (BC1).
    CUarray blocks = MakeTextureArray(16, 16, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 2);
    FGPU_REQUIRE(blocks != nullptr);
    CUDA_RESOURCE_VIEW_DESC bc{};
    bc.format = CU_RES_VIEW_FORMAT_UNSIGNED_BC1;
    bc.width = 64;
    bc.height = 64;
    const CUDA_RESOURCE_DESC blocks_resource = TextureArrayResource(blocks);
    FGPU_REQUIRE_CU(cuTexObjectCreate(&object, &blocks_resource, &texture, &bc), CUDA_SUCCESS);
    bc.format = CU_RES_VIEW_FORMAT_UNSIGNED_BC2;  // needs 4 channels
    FGPU_REQUIRE(refused(blocks_resource, texture, &bc));

    CUDA_ARRAY3D_DESCRIPTOR mip_desc{};
    mip_desc.Width = 16;
    mip_desc.Format = CU_AD_FORMAT_FLOAT;
    mip_desc.NumChannels = 1;
    CUmipmappedArray mipmapped = nullptr;
    FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmapped, &mip_desc, 2), CUDA_SUCCESS);
    CUDA_RESOURCE_DESC mip_resource{};
    mip_resource.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    mip_resource.res.mipmap.hMipmappedArray = mipmapped;
    FGPU_REQUIRE(refused(mip_resource, texture));  // without CU_TRSF_NORMALIZED_COORDINATES

    // Stale and foreign array handles.
    FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
    FGPU_REQUIRE(refused(TextureArrayResource(array), texture));
    FGPU_REQUIRE(refused(TextureArrayResource(reinterpret_cast<CUarray>(&texture)), texture));
    mip_resource.res.mipmap.hMipmappedArray = reinterpret_cast<CUmipmappedArray>(blocks);
    CUDA_TEXTURE_DESC normalized = texture;
    normalized.flags = CU_TRSF_NORMALIZED_COORDINATES;
    FGPU_REQUIRE(refused(mip_resource, normalized));
    return std::string();
  }), "");
}

TEST(SimTexture, SurfaceObjectsNeedASurfaceArray) {
  EXPECT_EQ(RunTextureSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUarray plain = MakeTextureArray(64, 64, 0, 0);
    CUarray surface = MakeTextureArray(64, 64, 0, CUDA_ARRAY3D_SURFACE_LDST);
    FGPU_REQUIRE(plain != nullptr && surface != nullptr);
    CUsurfObject object = 0;
    const CUDA_RESOURCE_DESC plain_resource = TextureArrayResource(plain);
    FGPU_REQUIRE_CU(cuSurfObjectCreate(&object, &plain_resource), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 1 << 20), CUDA_SUCCESS);
    const CUDA_RESOURCE_DESC linear = LinearResource(memory, 4096);
    FGPU_REQUIRE_CU(cuSurfObjectCreate(&object, &linear), CUDA_ERROR_INVALID_VALUE);
    CUDA_RESOURCE_DESC resource = TextureArrayResource(surface);
    FGPU_REQUIRE_CU(cuSurfObjectCreate(nullptr, &resource), CUDA_ERROR_INVALID_VALUE);
    resource.flags = 2;
    FGPU_REQUIRE_CU(cuSurfObjectCreate(&object, &resource), CUDA_ERROR_INVALID_VALUE);
    resource.flags = 0;
    FGPU_REQUIRE_CU(cuSurfObjectCreate(&object, &resource), CUDA_SUCCESS);
    FGPU_REQUIRE(object != 0);
    CUDA_RESOURCE_DESC back{};
    FGPU_REQUIRE_CU(cuSurfObjectGetResourceDesc(&back, object), CUDA_SUCCESS);
    FGPU_REQUIRE(SameTextureBytes(&back, &resource, sizeof back));
    FGPU_REQUIRE_CU(cuSurfObjectGetResourceDesc(nullptr, object), CUDA_ERROR_INVALID_VALUE);
    // A surface handle is not a texture handle, nor the other way round.
    FGPU_REQUIRE_CU(cuTexObjectDestroy(object), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuSurfObjectDestroy(object), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuSurfObjectDestroy(object), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuSurfObjectGetResourceDesc(&back, object), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimTexture, ReferencesReturnWhatTheirSettersStored) {
  EXPECT_EQ(RunTextureSim([] {
    CUtexref ref = nullptr;
    FGPU_REQUIRE_CU(cuTexRefCreate(&ref), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefCreate(&ref), CUDA_ERROR_INVALID_CONTEXT);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    FGPU_REQUIRE_CU(cuTexRefCreate(nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefCreate(&ref), CUDA_SUCCESS);

    FGPU_REQUIRE_CU(cuTexRefSetFormat(ref, CU_AD_FORMAT_SIGNED_INT16, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetFormat(ref, CU_AD_FORMAT_SIGNED_INT16, 3), CUDA_ERROR_INVALID_VALUE);
    CUarray_format format{};
    int channels = 0;
    FGPU_REQUIRE_CU(cuTexRefGetFormat(&format, &channels, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(format == CU_AD_FORMAT_SIGNED_INT16 && channels == 2);
    FGPU_REQUIRE_CU(cuTexRefGetFormat(nullptr, nullptr, ref), CUDA_SUCCESS);  // NULL outputs are ignored
    for (int dim = 0; dim < 3; ++dim) {
      FGPU_REQUIRE_CU(cuTexRefSetAddressMode(ref, dim, static_cast<CUaddress_mode>(3 - dim)), CUDA_SUCCESS);
    }
    FGPU_REQUIRE_CU(cuTexRefSetAddressMode(ref, 3, CU_TR_ADDRESS_MODE_WRAP), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(reinterpret_cast<SetAddressModeAsC>(&cuTexRefSetAddressMode)(ref, 0, 7), CUDA_ERROR_INVALID_VALUE);
    for (int dim = 0; dim < 3; ++dim) {
      CUaddress_mode mode{};
      FGPU_REQUIRE_CU(cuTexRefGetAddressMode(&mode, ref, dim), CUDA_SUCCESS);
      FGPU_REQUIRE(mode == static_cast<CUaddress_mode>(3 - dim));
    }
    FGPU_REQUIRE_CU(cuTexRefSetFilterMode(ref, CU_TR_FILTER_MODE_LINEAR), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(reinterpret_cast<SetFilterModeAsC>(&cuTexRefSetFilterMode)(ref, 2), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefSetMipmapFilterMode(ref, CU_TR_FILTER_MODE_LINEAR), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetMipmapLevelBias(ref, -1.5f), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetMipmapLevelClamp(ref, 0.5f, 7.0f), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetMaxAnisotropy(ref, 12), CUDA_SUCCESS);
    float border[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    FGPU_REQUIRE_CU(cuTexRefSetBorderColor(ref, border), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetBorderColor(ref, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefSetFlags(ref, CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetFlags(ref, CU_TRSF_SEAMLESS_CUBEMAP), CUDA_ERROR_INVALID_VALUE);  // objects only
    CUfilter_mode filter{}, mipmap_filter{};
    float bias = 0, min_clamp = 0, max_clamp = 0, border_back[4] = {};
    int anisotropy = 0;
    unsigned flags = 0;
    FGPU_REQUIRE_CU(cuTexRefGetFilterMode(&filter, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetMipmapFilterMode(&mipmap_filter, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetMipmapLevelBias(&bias, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetMipmapLevelClamp(&min_clamp, &max_clamp, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetMaxAnisotropy(&anisotropy, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetBorderColor(border_back, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetFlags(&flags, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(filter == CU_TR_FILTER_MODE_LINEAR && mipmap_filter == CU_TR_FILTER_MODE_LINEAR);
    FGPU_REQUIRE(bias == -1.5f && min_clamp == 0.5f && max_clamp == 7.0f && anisotropy == 12);
    FGPU_REQUIRE(SameTextureBytes(border_back, border, sizeof border));
    FGPU_REQUIRE(flags == (CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB));
    FGPU_REQUIRE_CU(cuTexRefGetFlags(nullptr, ref), CUDA_ERROR_INVALID_VALUE);

    // Bound to nothing yet: the binding getters answer the documented error.
    CUdeviceptr address = 0;
    CUarray bound = nullptr;
    CUmipmappedArray bound_mipmap = nullptr;
    FGPU_REQUIRE_CU(cuTexRefGetAddress_v2(&address, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetArray(&bound, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetMipmappedArray(&bound_mipmap, ref), CUDA_ERROR_INVALID_VALUE);

    // Linear memory: an unaligned address binds, with its offset past the alignment passed back.
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 1 << 20), CUDA_SUCCESS);
    size_t offset = 1;
    FGPU_REQUIRE_CU(cuTexRefSetAddress_v2(&offset, ref, memory, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE(offset == 0);
    FGPU_REQUIRE_CU(cuTexRefSetAddress_v2(&offset, ref, memory + 64, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE(offset == 64);
    FGPU_REQUIRE_CU(cuTexRefGetAddress_v2(&address, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(address == memory + 64);
    FGPU_REQUIRE_CU(cuTexRefSetAddress_v2(nullptr, ref, memory, (1 << 20) + 4), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefSetAddress_v2(nullptr, ref, 0x2000, 64), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetArray(&bound, ref), CUDA_ERROR_INVALID_VALUE);

    // Pitched memory: the descriptor's format replaces the reference's, which cannot change after.
    CUDA_ARRAY_DESCRIPTOR desc{};
    desc.Width = 64;
    desc.Height = 16;
    desc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    desc.NumChannels = 4;
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D_v3(ref, &desc, memory + 512, 256), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetFormat(&format, &channels, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(format == CU_AD_FORMAT_UNSIGNED_INT8 && channels == 4);
    FGPU_REQUIRE_CU(cuTexRefSetFormat(ref, CU_AD_FORMAT_FLOAT, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetAddress_v2(&address, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(address == memory + 512);
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D_v2(ref, &desc, memory + 64, 256), CUDA_ERROR_INVALID_VALUE);  // unaligned
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D_v3(ref, &desc, memory, 250), CUDA_ERROR_INVALID_VALUE);  // pitch
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D_v3(ref, &desc, memory, 128), CUDA_ERROR_INVALID_VALUE);  // rows > pitch
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D_v3(ref, nullptr, memory, 256), CUDA_ERROR_INVALID_VALUE);

    // Arrays: the one flag is CU_TRSA_OVERRIDE_FORMAT, and the array's format wins.
    CUarray array = MakeTextureArray(32, 32, 0, 0, CU_AD_FORMAT_HALF, 4);
    FGPU_REQUIRE(array != nullptr);
    FGPU_REQUIRE_CU(cuTexRefSetArray(ref, array, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefSetArray(ref, array, CU_TRSA_OVERRIDE_FORMAT), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetArray(&bound, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(bound == array);
    FGPU_REQUIRE_CU(cuTexRefGetFormat(&format, &channels, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(format == CU_AD_FORMAT_HALF && channels == 4);
    FGPU_REQUIRE_CU(cuTexRefGetAddress_v2(&address, ref), CUDA_ERROR_INVALID_VALUE);  // superseded
    CUDA_ARRAY3D_DESCRIPTOR mip_desc{};
    mip_desc.Width = 32;
    mip_desc.Format = CU_AD_FORMAT_FLOAT;
    mip_desc.NumChannels = 1;
    CUmipmappedArray mipmapped = nullptr;
    FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmapped, &mip_desc, 3), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetMipmappedArray(ref, mipmapped, CU_TRSA_OVERRIDE_FORMAT), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefGetMipmappedArray(&bound_mipmap, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(bound_mipmap == mipmapped);
    FGPU_REQUIRE_CU(cuTexRefGetArray(&bound, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetArray(ref, array, CU_TRSA_OVERRIDE_FORMAT), CUDA_ERROR_INVALID_VALUE);

    // Destroyed: every call refuses the handle, as it refuses one never made.
    FGPU_REQUIRE_CU(cuTexRefDestroy(ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefDestroy(ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetFlags(&flags, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefSetFilterMode(ref, CU_TR_FILTER_MODE_POINT), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefGetFlags(&flags, reinterpret_cast<CUtexref>(&flags)), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimTexture, LegacyThirtyTwoBitReferenceCallsAndSurfaceReferences) {
  EXPECT_EQ(RunTextureSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUtexref ref = nullptr;
    FGPU_REQUIRE_CU(cuTexRefCreate(&ref), CUDA_SUCCESS);
    CUdeviceptr_v1 memory = 0;  // the 32-bit cuMemAlloc places memory below 4 GiB
    FGPU_REQUIRE_CU(cuMemAlloc(&memory, 1 << 16), CUDA_SUCCESS);
    unsigned offset = 7;
    FGPU_REQUIRE_CU(cuTexRefSetAddress(&offset, ref, memory + 16, 1024), CUDA_SUCCESS);
    FGPU_REQUIRE(offset == 16);
    CUdeviceptr_v1 address = 0;
    FGPU_REQUIRE_CU(cuTexRefGetAddress(&address, ref), CUDA_SUCCESS);
    FGPU_REQUIRE(address == memory + 16);
    FGPU_REQUIRE_CU(cuTexRefGetAddress(nullptr, ref), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY_DESCRIPTOR_v1 desc{};
    desc.Width = 16;
    desc.Height = 16;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D(ref, &desc, memory, 64), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuTexRefSetAddress2D(ref, nullptr, memory, 64), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuTexRefDestroy(ref), CUDA_SUCCESS);

    // Surface references come only from cuModuleGetSurfRef, which hands none out.
    CUarray array = MakeTextureArray(16, 16, 0, CUDA_ARRAY3D_SURFACE_LDST);
    FGPU_REQUIRE(array != nullptr);
    CUarray bound = nullptr;
    FGPU_REQUIRE_CU(cuSurfRefSetArray(reinterpret_cast<CUsurfref>(&bound), array, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuSurfRefGetArray(&bound, reinterpret_cast<CUsurfref>(&bound)), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
