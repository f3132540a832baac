// CUDA arrays and mipmapped arrays.
//
// An array is charged width * max(height, 1) * max(depth, 1) * its element size,
// rounded up to the device granularity; a mipmapped array the sum of its levels
// (each halving the non-layer extents, down to 1), rounded once. Each array and
// each level is backed as device memory is (array_store.h), so copies move real
// data. Extents are checked against the H100's texture limits, which also keeps
// every size computation far from overflow.
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/abi/array_format.h"
#include "core/abi/cuda_api.h"
#include "sim/cuda/array_store.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

// The texels of one array: an anonymous mapping that costs host memory only where written.
class ArrayBacking {
 public:
  ArrayBacking() = default;
  ArrayBacking(const ArrayBacking&) = delete;
  ArrayBacking& operator=(const ArrayBacking&) = delete;
  ~ArrayBacking() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  bool Map(uint64_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<std::byte*>(p);
    bytes_ = bytes;
    return true;
  }
  std::byte* data() const { return data_; }

 private:
  std::byte* data_ = nullptr;
  uint64_t bytes_ = 0;
};

struct ArrayObject {
  Context* ctx = nullptr;
  int device = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  uint64_t element = 0;
  ArrayBacking backing;
  uint64_t charged = 0;   // 0 for a mipmap level: its mipmapped array holds the charge
  bool is_level = false;  // owned by a mipmapped array, not destroyable on its own
};

struct MipmappedArrayObject {
  Context* ctx = nullptr;
  int device = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  uint64_t charged = 0;
  std::vector<std::unique_ptr<ArrayObject>> levels;
};

struct ArrayTable {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<ArrayObject>> arrays;
  std::unordered_map<const void*, std::unique_ptr<MipmappedArrayObject>> mipmaps;
};

ArrayTable& Arrays() {
  static auto* table = new ArrayTable;
  return *table;
}

constexpr unsigned kKnownFlags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
                                 CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
                                 CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE |
                                 CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;

// Bytes per element, or 0 with *rc set. The simulator models texel formats only; the real
// formats it does not (block-compressed, video, packed) are CUDA_ERROR_NOT_SUPPORTED.
uint64_t ElementBytes(CUarray_format format, unsigned channels, CUresult* rc) {
  *rc = CUDA_ERROR_INVALID_VALUE;
  if (channels != 1 && channels != 2 && channels != 4) return 0;
  const ArrayFormatLayout layout = LayoutOfArrayFormat(format, channels);
  switch (layout.kind) {
    case ArrayFormatKind::kInvalid:
      return 0;
    case ArrayFormatKind::kBlockCompressed:
    case ArrayFormatKind::kVideoOrPacked:
      *rc = CUDA_ERROR_NOT_SUPPORTED;
      return 0;
    case ArrayFormatKind::kTexel:
      break;
  }
  *rc = CUDA_SUCCESS;
  return layout.bytes;
}

// Validates a descriptor as cuArray3DCreate does; on success *element is its element size.
CUresult CheckDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& d, uint64_t* element) {
  CUresult rc = CUDA_SUCCESS;
  *element = ElementBytes(d.Format, d.NumChannels, &rc);
  if (rc != CUDA_SUCCESS) return rc;
  if (d.Width == 0 || (d.Flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((d.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  const bool layered = (d.Flags & CUDA_ARRAY3D_LAYERED) != 0;
  const bool cubemap = (d.Flags & CUDA_ARRAY3D_CUBEMAP) != 0;
  const bool gather = (d.Flags & CUDA_ARRAY3D_TEXTURE_GATHER) != 0;
  auto within = [](size_t value, size_t limit) { return value <= limit; };
  bool ok = false;
  if (cubemap) {
    ok = d.Height == d.Width && d.Depth > 0 && d.Depth % 6 == 0 && (layered || d.Depth == 6) &&
         within(d.Width, 32768) && within(d.Depth, size_t{2046} * 6);
  } else if (layered) {  // 1D layered (Height 0) or 2D layered; Depth counts layers
    ok = d.Depth > 0 && within(d.Width, 32768) && within(d.Height, 32768) && within(d.Depth, 2048);
  } else if (d.Depth > 0) {  // 3D
    ok = d.Height > 0 && within(d.Width, 16384) && within(d.Height, 16384) && within(d.Depth, 16384);
  } else {  // 1D or 2D
    ok = within(d.Width, 131072) && within(d.Height, 65536);
  }
  if (gather && (layered || cubemap || d.Depth > 0 || d.Height == 0)) ok = false;  // 2D only
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

uint64_t Bytes(size_t width, size_t height, size_t depth, uint64_t element) {
  return width * std::max<size_t>(height, 1) * std::max<size_t>(depth, 1) * element;
}

uint64_t BytesOf(const ArrayObject& array) {
  return Bytes(array.desc.Width, array.desc.Height, array.desc.Depth, array.element);
}

// The extents of mip level `level`: layers (layered, cubemap) do not shrink.
CUDA_ARRAY3D_DESCRIPTOR LevelDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned level) {
  CUDA_ARRAY3D_DESCRIPTOR out = d;
  auto shrink = [level](size_t extent) { return extent == 0 ? 0 : std::max<size_t>(extent >> level, 1); };
  out.Width = shrink(d.Width);
  out.Height = shrink(d.Height);
  const bool layers = (d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  if (!layers) out.Depth = shrink(d.Depth);
  return out;
}

CUresult Charge(Context* ctx, uint64_t bytes, uint64_t* charged) {
  *charged = Runtime::Get().RoundToGranularity(ctx->device, bytes);
  return Runtime::Get().Charge(ctx->device, *charged) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CreateArray(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t element = 0;
  if (CUresult rc = CheckDescriptor(*desc, &element); rc != CUDA_SUCCESS) return rc;
  auto array = std::make_unique<ArrayObject>();
  array->ctx = ctx;
  array->device = ctx->device;
  array->desc = *desc;
  array->element = element;
  if (!array->backing.Map(BytesOf(*array))) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(Arrays().mu);
  if (CUresult rc = Charge(ctx, BytesOf(*array), &array->charged); rc != CUDA_SUCCESS) return rc;
  ArrayObject* raw = array.get();
  const uint64_t charged = raw->charged;
  try {
    Arrays().arrays.emplace(raw, std::move(array));
    HandleRegistry::Get().Insert(raw, Kind::kArray);
  } catch (...) {  // out of host memory: leave nothing behind
    HandleRegistry::Get().Erase(raw);
    Arrays().arrays.erase(raw);
    Runtime::Get().Credit(ctx->device, charged);
    throw;
  }
  *handle = reinterpret_cast<CUarray>(raw);
  return CUDA_SUCCESS;
}

CUresult CreateMipmapped(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned levels) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr || desc == nullptr || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t element = 0;
  if (CUresult rc = CheckDescriptor(*desc, &element); rc != CUDA_SUCCESS) return rc;
  const bool layers = (desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  const size_t largest = std::max({desc->Width, desc->Height, layers ? size_t{0} : desc->Depth});
  unsigned max_levels = 1;
  while ((largest >> max_levels) != 0) ++max_levels;  // 1 + floor(log2(largest))
  if (levels > max_levels) return CUDA_ERROR_INVALID_VALUE;
  auto mipmap = std::make_unique<MipmappedArrayObject>();
  mipmap->ctx = ctx;
  mipmap->device = ctx->device;
  mipmap->desc = *desc;
  uint64_t total = 0;
  for (unsigned level = 0; level < levels; ++level) {
    auto array = std::make_unique<ArrayObject>();
    array->ctx = ctx;
    array->device = ctx->device;
    array->desc = LevelDescriptor(*desc, level);
    array->element = element;
    array->is_level = true;
    total += BytesOf(*array);
    if (!array->backing.Map(BytesOf(*array))) return CUDA_ERROR_OUT_OF_MEMORY;
    mipmap->levels.push_back(std::move(array));
  }
  std::lock_guard lock(Arrays().mu);
  if (CUresult rc = Charge(ctx, total, &mipmap->charged); rc != CUDA_SUCCESS) return rc;
  MipmappedArrayObject* raw = mipmap.get();
  const uint64_t charged = raw->charged;
  try {
    Arrays().mipmaps.emplace(raw, std::move(mipmap));
    for (const auto& level : raw->levels) HandleRegistry::Get().Insert(level.get(), Kind::kArray);
    HandleRegistry::Get().Insert(raw, Kind::kMipmappedArray);
  } catch (...) {  // out of host memory: leave nothing behind
    for (const auto& level : raw->levels) HandleRegistry::Get().Erase(level.get());
    HandleRegistry::Get().Erase(raw);
    Arrays().mipmaps.erase(raw);
    Runtime::Get().Credit(ctx->device, charged);
    throw;
  }
  *handle = reinterpret_cast<CUmipmappedArray>(raw);
  return CUDA_SUCCESS;
}

// Caller holds Arrays().mu.
void DestroyMipmappedLocked(MipmappedArrayObject* mipmap) {
  for (const auto& level : mipmap->levels) HandleRegistry::Get().Erase(level.get());
  HandleRegistry::Get().Erase(mipmap);
  Runtime::Get().Credit(mipmap->device, mipmap->charged);
  Arrays().mipmaps.erase(mipmap);
}

// Caller holds Arrays().mu.
void DestroyArrayLocked(ArrayObject* array) {
  HandleRegistry::Get().Erase(array);
  Runtime::Get().Credit(array->device, array->charged);
  Arrays().arrays.erase(array);
}

// Looks up a live array; a mipmap level is one too (for descriptors).
ArrayObject* LookupArray(CUarray handle) {
  return HandleRegistry::Get().Lookup<ArrayObject>(handle, Kind::kArray);
}

template <typename Descriptor>
CUresult GetDescriptor(Descriptor* out, CUarray handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const ArrayObject* array = LookupArray(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const CUDA_ARRAY3D_DESCRIPTOR& d = array->desc;
  // Extents fit the 32-bit legacy descriptors: CheckDescriptor bounds them.
  using Extent = decltype(out->Width);
  out->Width = static_cast<Extent>(d.Width);
  out->Height = static_cast<Extent>(d.Height);
  out->Format = d.Format;
  out->NumChannels = d.NumChannels;
  if constexpr (requires { out->Depth; }) {
    out->Depth = static_cast<Extent>(d.Depth);
    out->Flags = d.Flags;
  }
  return CUDA_SUCCESS;
}

CUDA_ARRAY3D_DESCRIPTOR From2D(size_t width, size_t height, CUarray_format format, unsigned channels) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = width;
  d.Height = height;
  d.Format = format;
  d.NumChannels = channels;
  return d;
}

}  // namespace

CUresult FindArray(CUarray handle, ArrayView* out) {
  std::lock_guard lock(Arrays().mu);
  const ArrayObject* array = LookupArray(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  out->data = array->backing.data();
  out->width = array->desc.Width;
  out->height = std::max<size_t>(array->desc.Height, 1);
  out->depth = std::max<size_t>(array->desc.Depth, 1);
  out->element = array->element;
  out->device = array->device;
  return CUDA_SUCCESS;
}

void ReleaseArraysOf(Context* ctx) {
  std::lock_guard lock(Arrays().mu);
  std::vector<ArrayObject*> arrays;
  for (const auto& [handle, array] : Arrays().arrays) {
    if (array->ctx == ctx) arrays.push_back(array.get());
  }
  for (ArrayObject* array : arrays) DestroyArrayLocked(array);
  std::vector<MipmappedArrayObject*> mipmaps;
  for (const auto& [handle, mipmap] : Arrays().mipmaps) {
    if (mipmap->ctx == ctx) mipmaps.push_back(mipmap.get());
  }
  for (MipmappedArrayObject* mipmap : mipmaps) DestroyMipmappedLocked(mipmap);
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;
using sim::Guarded;

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  return Guarded([&] {
    if (pAllocateArray == nullptr) return sim::CreateArray(pHandle, nullptr);
    const CUDA_ARRAY3D_DESCRIPTOR d = sim::From2D(pAllocateArray->Width, pAllocateArray->Height,
                                                  pAllocateArray->Format, pAllocateArray->NumChannels);
    return sim::CreateArray(pHandle, &d);
  });
}

CUresult cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray) {
  return Guarded([&] {
    if (pAllocateArray == nullptr) return sim::CreateArray(pHandle, nullptr);
    const CUDA_ARRAY3D_DESCRIPTOR d = sim::From2D(pAllocateArray->Width, pAllocateArray->Height,
                                                  pAllocateArray->Format, pAllocateArray->NumChannels);
    return sim::CreateArray(pHandle, &d);
  });
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  return Guarded([&] { return sim::CreateArray(pHandle, pAllocateArray); });
}

CUresult cuArray3DCreate(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray) {
  return Guarded([&] {
    if (pAllocateArray == nullptr) return sim::CreateArray(pHandle, nullptr);
    CUDA_ARRAY3D_DESCRIPTOR d = sim::From2D(pAllocateArray->Width, pAllocateArray->Height,
                                            pAllocateArray->Format, pAllocateArray->NumChannels);
    d.Depth = pAllocateArray->Depth;
    d.Flags = pAllocateArray->Flags;
    return sim::CreateArray(pHandle, &d);
  });
}

CUresult cuArrayDestroy(CUarray hArray) {
  return Guarded([&] {
    if (CUresult rc = sim::Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Arrays().mu);
    sim::ArrayObject* array = sim::LookupArray(hArray);
    if (array == nullptr || array->is_level) return CUDA_ERROR_INVALID_HANDLE;  // levels go with their mipmap
    sim::DestroyArrayLocked(array);
    return CUDA_SUCCESS;
  });
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  return Guarded([&] { return sim::GetDescriptor(pArrayDescriptor, hArray); });
}
CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1* pArrayDescriptor, CUarray hArray) {
  return Guarded([&] { return sim::GetDescriptor(pArrayDescriptor, hArray); });
}
CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  return Guarded([&] { return sim::GetDescriptor(pArrayDescriptor, hArray); });
}
CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1* pArrayDescriptor, CUarray hArray) {
  return Guarded([&] { return sim::GetDescriptor(pArrayDescriptor, hArray); });
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  return Guarded([&] { return sim::CreateMipmapped(pHandle, pMipmappedArrayDesc, numMipmapLevels); });
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return Guarded([&] {
    if (CUresult rc = sim::Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard lock(sim::Arrays().mu);
    auto* mipmap = sim::HandleRegistry::Get().Lookup<sim::MipmappedArrayObject>(hMipmappedArray,
                                                                                sim::Kind::kMipmappedArray);
    if (mipmap == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    sim::DestroyMipmappedLocked(mipmap);
    return CUDA_SUCCESS;
  });
}

CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                  unsigned int level) {
  return Guarded([&] {
    if (CUresult rc = sim::Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
    if (pLevelArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(sim::Arrays().mu);
    auto* mipmap = sim::HandleRegistry::Get().Lookup<sim::MipmappedArrayObject>(hMipmappedArray,
                                                                                sim::Kind::kMipmappedArray);
    if (mipmap == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (level >= mipmap->levels.size()) return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = reinterpret_cast<CUarray>(mipmap->levels[level].get());
    return CUDA_SUCCESS;
  });
}

}  // extern "C"
