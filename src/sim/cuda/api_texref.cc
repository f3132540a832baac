// Texture and surface references (deprecated). A program can still make a texture reference with
// cuTexRefCreate: its binding (an array, a mipmapped array, linear or pitched memory, each checked
// as the texture objects' resources are) and its sampling state are stored, and every getter
// returns what the setters stored. Surface references come only from cuModuleGetSurfRef, which
// the simulator answers without one (api_library.cc), so no live surface reference exists and
// cuSurfRef* answer CUDA_ERROR_INVALID_VALUE, their documented error for a handle.
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/texture_rules.h"

namespace fgpu::sim::cuda {
namespace {

enum class TexRefBinding : uint8_t { kNone, kArray, kMipmappedArray, kLinear, kPitch2D };

struct TexRef {
  TexRefBinding binding = TexRefBinding::kNone;
  CUarray array = nullptr;
  CUmipmappedArray mipmapped_array = nullptr;
  CUdeviceptr address = 0;
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  int channels = 1;
  CUaddress_mode address_mode[3] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_WRAP};
  CUfilter_mode filter_mode = CU_TR_FILTER_MODE_POINT;
  CUfilter_mode mipmap_filter_mode = CU_TR_FILTER_MODE_POINT;
  float mipmap_level_bias = 0;
  float min_mipmap_level_clamp = 0;
  float max_mipmap_level_clamp = 0;
  unsigned max_anisotropy = 0;
  float border_color[4] = {0, 0, 0, 0};
  unsigned flags = 0;
};

struct TexRefTable {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<TexRef>> refs;
};

TexRefTable& TexRefs() {
  static auto* table = new TexRefTable;  // never destroyed: looked up from atexit handlers
  return *table;
}

constexpr unsigned kKnownTexRefFlags =
    CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
constexpr int kTexRefDimensions = 3;

// Runs `body` on a live reference under the table's lock; CUDA_ERROR_INVALID_VALUE (the documented
// error) for any other handle.
template <typename Body>
CUresult WithTexRef(CUtexref handle, Body&& body) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Guarded([&] {
    std::lock_guard lock(TexRefs().mu);
    auto it = TexRefs().refs.find(handle);
    if (it == TexRefs().refs.end()) return CUDA_ERROR_INVALID_VALUE;
    return body(*it->second);
  });
}

// The device of the calling thread's context, which binding checks memory against.
CUresult TexRefDevice(int* device) {
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

bool IsTexRefMode(const void* value, int highest) {
  int v = 0;
  std::memcpy(&v, value, sizeof v);  // a C caller may pass any int
  return v >= 0 && v <= highest;
}

CUresult BindLinear(size_t* byte_offset, CUtexref handle, CUdeviceptr dptr, size_t bytes) {
  int device = 0;
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = TexRefDevice(&device); rc != CUDA_SUCCESS) return rc;
  const auto alignment = static_cast<uint64_t>(TextureAttribute(device, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  return WithTexRef(handle, [&](TexRef& ref) {
    // The hardware fetches from an aligned base: the offset of dptr past it goes back to the caller.
    const CUresult rc = CheckLinearRange(dptr, ref.format, static_cast<unsigned>(ref.channels), bytes, device);
    if (rc != CUDA_SUCCESS) return rc;
    ref.binding = TexRefBinding::kLinear;
    ref.address = dptr;
    ref.array = nullptr;
    ref.mipmapped_array = nullptr;
    if (byte_offset != nullptr) *byte_offset = dptr % alignment;
    return CUDA_SUCCESS;
  });
}

CUresult BindPitch2D(CUtexref handle, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr, size_t pitch) {
  int device = 0;
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = TexRefDevice(&device); rc != CUDA_SUCCESS) return rc;
  if (desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return WithTexRef(handle, [&](TexRef& ref) {
    const CUresult rc =
        CheckPitch2DTexture(dptr, desc->Format, desc->NumChannels, desc->Width, desc->Height, pitch, device);
    if (rc != CUDA_SUCCESS) return rc;
    ref.binding = TexRefBinding::kPitch2D;
    ref.address = dptr;
    ref.array = nullptr;
    ref.mipmapped_array = nullptr;
    ref.format = desc->Format;
    ref.channels = static_cast<int>(desc->NumChannels);
    return CUDA_SUCCESS;
  });
}

// Binds an array or a mipmapped array; its format overrides the reference's (CU_TRSA_OVERRIDE_FORMAT,
// the one flag the call takes).
CUresult BindArray(CUtexref handle, CUresourcetype type, CUarray array, CUmipmappedArray mipmapped, unsigned flags) {
  int device = 0;
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = TexRefDevice(&device); rc != CUDA_SUCCESS) return rc;
  if (flags != CU_TRSA_OVERRIDE_FORMAT) return CUDA_ERROR_INVALID_VALUE;
  CUDA_RESOURCE_DESC resource{};
  resource.resType = type;
  if (type == CU_RESOURCE_TYPE_ARRAY) resource.res.array.hArray = array;
  if (type == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) resource.res.mipmap.hMipmappedArray = mipmapped;
  ResolvedResource resolved;
  if (CUresult rc = Guarded([&] { return ResolveResource(resource, device, &resolved); }); rc != CUDA_SUCCESS) {
    return rc;
  }
  return WithTexRef(handle, [&](TexRef& ref) {
    ref.binding = type == CU_RESOURCE_TYPE_ARRAY ? TexRefBinding::kArray : TexRefBinding::kMipmappedArray;
    ref.array = array;
    ref.mipmapped_array = mipmapped;
    ref.address = 0;
    ref.format = resolved.array.Format;
    ref.channels = static_cast<int>(resolved.array.NumChannels);
    return CUDA_SUCCESS;
  });
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::TexRef;

extern "C" {

CUresult cuTexRefCreate(CUtexref* pTexRef) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  sim::Context* ctx = nullptr;
  if (CUresult rc = sim::Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pTexRef == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return sim::Guarded([&] {
    auto ref = std::make_unique<TexRef>();
    TexRef* raw = ref.get();
    std::lock_guard lock(sim::TexRefs().mu);
    sim::TexRefs().refs.emplace(raw, std::move(ref));
    *pTexRef = reinterpret_cast<CUtexref>(raw);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefDestroy(CUtexref hTexRef) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  return sim::Guarded([&] {
    std::lock_guard lock(sim::TexRefs().mu);
    return sim::TexRefs().refs.erase(hTexRef) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult cuTexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
  return sim::BindArray(hTexRef, CU_RESOURCE_TYPE_ARRAY, hArray, nullptr, Flags);
}

CUresult cuTexRefSetMipmappedArray(CUtexref hTexRef, CUmipmappedArray hMipmappedArray, unsigned int Flags) {
  return sim::BindArray(hTexRef, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY, nullptr, hMipmappedArray, Flags);
}

CUresult cuTexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr, size_t bytes) {
  return sim::BindLinear(ByteOffset, hTexRef, dptr, bytes);
}

CUresult cuTexRefSetAddress(unsigned int* ByteOffset, CUtexref hTexRef, CUdeviceptr_v1 dptr, unsigned int bytes) {
  size_t offset = 0;
  const CUresult rc = sim::BindLinear(&offset, hTexRef, dptr, bytes);
  if (rc == CUDA_SUCCESS && ByteOffset != nullptr) *ByteOffset = static_cast<unsigned>(offset);  // < alignment
  return rc;
}

CUresult cuTexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr, size_t Pitch) {
  return sim::BindPitch2D(hTexRef, desc, dptr, Pitch);
}

CUresult cuTexRefSetAddress2D_v2(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr, size_t Pitch) {
  return sim::BindPitch2D(hTexRef, desc, dptr, Pitch);
}

CUresult cuTexRefSetAddress2D(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR_v1* desc, CUdeviceptr_v1 dptr,
                              unsigned int Pitch) {
  if (desc == nullptr) return sim::Ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : sim::Ready();
  CUDA_ARRAY_DESCRIPTOR wide{};
  wide.Width = desc->Width;
  wide.Height = desc->Height;
  wide.Format = desc->Format;
  wide.NumChannels = desc->NumChannels;
  return sim::BindPitch2D(hTexRef, &wide, dptr, Pitch);
}

CUresult cuTexRefSetFormat(CUtexref hTexRef, CUarray_format fmt, int NumPackedComponents) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if (NumPackedComponents <= 0 || sim::TexelBytes(fmt, static_cast<unsigned>(NumPackedComponents)) == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // Documented: cuTexRefSetFormat cannot follow cuTexRefSetAddress2D (the descriptor set the format).
    if (ref.binding == sim::TexRefBinding::kPitch2D) return CUDA_ERROR_INVALID_VALUE;
    ref.format = fmt;
    ref.channels = NumPackedComponents;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetAddressMode(CUtexref hTexRef, int dim, CUaddress_mode am) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if (dim < 0 || dim >= sim::kTexRefDimensions || !sim::IsTexRefMode(&am, CU_TR_ADDRESS_MODE_BORDER)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    ref.address_mode[dim] = am;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if (!sim::IsTexRefMode(&fm, CU_TR_FILTER_MODE_LINEAR)) return CUDA_ERROR_INVALID_VALUE;
    ref.filter_mode = fm;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if (!sim::IsTexRefMode(&fm, CU_TR_FILTER_MODE_LINEAR)) return CUDA_ERROR_INVALID_VALUE;
    ref.mipmap_filter_mode = fm;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapLevelBias(CUtexref hTexRef, float bias) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    ref.mipmap_level_bias = bias;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMipmapLevelClamp(CUtexref hTexRef, float minMipmapLevelClamp, float maxMipmapLevelClamp) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    ref.min_mipmap_level_clamp = minMipmapLevelClamp;
    ref.max_mipmap_level_clamp = maxMipmapLevelClamp;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    ref.max_anisotropy = maxAniso;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if (pBorderColor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(ref.border_color, pBorderColor, sizeof ref.border_color);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
  return sim::WithTexRef(hTexRef, [&](TexRef& ref) {
    if ((Flags & ~sim::kKnownTexRefFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    ref.flags = Flags;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    const bool memory = ref.binding == sim::TexRefBinding::kLinear || ref.binding == sim::TexRefBinding::kPitch2D;
    if (pdptr == nullptr || !memory) return CUDA_ERROR_INVALID_VALUE;  // documented: not bound to memory
    *pdptr = ref.address;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddress(CUdeviceptr_v1* pdptr, CUtexref hTexRef) {
  if (pdptr == nullptr) return sim::Ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : sim::Ready();
  CUdeviceptr address = 0;
  const CUresult rc = cuTexRefGetAddress_v2(&address, hTexRef);
  if (rc != CUDA_SUCCESS) return rc;
  if (address > UINT32_MAX) return CUDA_ERROR_INVALID_VALUE;  // not representable in the 32-bit form
  *pdptr = static_cast<CUdeviceptr_v1>(address);
  return CUDA_SUCCESS;
}

CUresult cuTexRefGetArray(CUarray* phArray, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (phArray == nullptr || ref.binding != sim::TexRefBinding::kArray) return CUDA_ERROR_INVALID_VALUE;
    *phArray = ref.array;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (phMipmappedArray == nullptr || ref.binding != sim::TexRefBinding::kMipmappedArray) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    *phMipmappedArray = ref.mipmapped_array;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef, int dim) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pam == nullptr || dim < 0 || dim >= sim::kTexRefDimensions) return CUDA_ERROR_INVALID_VALUE;
    *pam = ref.address_mode[dim];
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pfm == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pfm = ref.filter_mode;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFormat(CUarray_format* pFormat, int* pNumChannels, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    // Either output may be NULL: it is ignored, as documented.
    if (pFormat != nullptr) *pFormat = ref.format;
    if (pNumChannels != nullptr) *pNumChannels = ref.channels;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pfm == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pfm = ref.mipmap_filter_mode;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pbias == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pbias = ref.mipmap_level_bias;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp, float* pmaxMipmapLevelClamp, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pminMipmapLevelClamp == nullptr || pmaxMipmapLevelClamp == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pminMipmapLevelClamp = ref.min_mipmap_level_clamp;
    *pmaxMipmapLevelClamp = ref.max_mipmap_level_clamp;
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pmaxAniso == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pmaxAniso = static_cast<int>(ref.max_anisotropy);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pBorderColor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(pBorderColor, ref.border_color, sizeof ref.border_color);
    return CUDA_SUCCESS;
  });
}

CUresult cuTexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef) {
  return sim::WithTexRef(hTexRef, [&](const TexRef& ref) {
    if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pFlags = ref.flags;
    return CUDA_SUCCESS;
  });
}

// No surface reference can be live (see the top of this file): every handle is refused.
CUresult cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
  (void)hSurfRef;
  (void)hArray;
  (void)Flags;
  return sim::Ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : sim::Ready();
}

CUresult cuSurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef) {
  (void)phArray;
  (void)hSurfRef;
  return sim::Ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : sim::Ready();
}

}  // extern "C"
