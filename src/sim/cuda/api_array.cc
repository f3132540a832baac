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
#include "sim/cuda/copy_entry.h"
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

// The VMM memory a deferred-mapping array (or mipmapped array) is mapped onto.
struct DeferredMapping {
  CUmemGenericAllocationHandle handle = 0;  // 0: nothing mapped
  void* data = nullptr;
  uint64_t bytes = 0;
};

struct ArrayObject {
  Context* ctx = nullptr;
  int device = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  ArrayView view;          // data null until a deferred-mapping array is mapped
  ArrayBacking backing;    // none for deferred-mapping arrays, planes and levels of deferred mipmaps
  uint64_t charged = 0;    // 0 for a level or a plane (the owner holds the charge) and deferred mapping
  bool is_level = false;   // owned by a mipmapped array, not destroyable on its own
  bool is_plane = false;   // owned by its multi-planar array, likewise
  std::vector<std::unique_ptr<ArrayObject>> planes;  // NV12: Y, then UV
  DeferredMapping mapping;
};

struct MipmappedArrayObject {
  Context* ctx = nullptr;
  int device = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  uint64_t charged = 0;
  std::vector<std::unique_ptr<ArrayObject>> levels;
  DeferredMapping mapping;
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

// Deferred-mapping arrays are mapped at offsets and in sizes of this many bytes (the simulator's
// choice: a multiple of the page size, so that VMM memory maps straight into the array).
constexpr uint64_t kArrayMapAlignment = 64 * 1024;

constexpr unsigned kKnownFlags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
                                 CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
                                 CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE |
                                 CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;

// Bytes per element, or 0 with *rc set. The simulator models texel formats only; the real
// formats it does not (block-compressed, video, packed) are CUDA_ERROR_NOT_SUPPORTED.
uint64_t ElementBytes(CUarray_format format, unsigned channels, CUresult* rc) {
  *rc = CUDA_ERROR_INVALID_VALUE;
  if (format == CU_AD_FORMAT_NV12) {  // three channels (Y, U, V) in two planes of bytes
    if (channels != 3) return 0;
    *rc = CUDA_SUCCESS;
    return 1;
  }
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
  // Sparse: 2D, 2D layered or 3D arrays only, and either sparse or deferred, not both.
  if ((d.Flags & CUDA_ARRAY3D_SPARSE) != 0 &&
      (d.Height == 0 || (d.Flags & (CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_DEFERRED_MAPPING)) != 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (d.Format == CU_AD_FORMAT_NV12) {  // 2D only, 4:2:0 so even extents; surfaces and video may use it
    constexpr unsigned kPlanarFlags = CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;
    const bool ok = d.Height > 0 && d.Depth == 0 && d.Width % 2 == 0 && d.Height % 2 == 0 &&
                    (d.Flags & ~kPlanarFlags) == 0 && d.Width <= 131072 && d.Height <= 65536;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
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

// How copies see an array of this descriptor (array_store.h). An NV12 array is its Y plane's
// rows followed by its UV plane's: Height * 3 / 2 rows of Width bytes.
ArrayView ViewOf(const CUDA_ARRAY3D_DESCRIPTOR& d, uint64_t element, int device) {
  ArrayView view;
  view.width = d.Width;
  view.height = std::max<size_t>(d.Height, 1);
  view.depth = std::max<size_t>(d.Depth, 1);
  view.element = element;
  view.device = device;
  if (d.Format == CU_AD_FORMAT_NV12) view.height = d.Height / 2 * 3;
  return view;
}

bool Deferred(const CUDA_ARRAY3D_DESCRIPTOR& d) { return (d.Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) != 0; }
bool Sparse(const CUDA_ARRAY3D_DESCRIPTOR& d) { return (d.Flags & CUDA_ARRAY3D_SPARSE) != 0; }
// Sparse and deferred-mapping arrays take their device memory from VMM handles, charged there.
bool ChargedAtCreation(const CUDA_ARRAY3D_DESCRIPTOR& d) { return !Deferred(d) && !Sparse(d); }

// The two planes of an NV12 array, over its storage: Y (Width x Height, one byte) and UV
// (Width/2 x Height/2, two bytes).
void AddPlanes(ArrayObject* array) {
  const CUDA_ARRAY3D_DESCRIPTOR& d = array->desc;
  for (int index = 0; index < 2; ++index) {
    auto plane = std::make_unique<ArrayObject>();
    plane->ctx = array->ctx;
    plane->device = array->device;
    plane->is_plane = true;
    plane->desc = CUDA_ARRAY3D_DESCRIPTOR{index == 0 ? d.Width : d.Width / 2, index == 0 ? d.Height : d.Height / 2, 0,
                                          CU_AD_FORMAT_UNSIGNED_INT8, index == 0 ? 1u : 2u,
                                          d.Flags & ~CUDA_ARRAY3D_DEFERRED_MAPPING};
    plane->view = ViewOf(plane->desc, index == 0 ? 1 : 2, array->device);
    array->planes.push_back(std::move(plane));
  }
}

// Points the array (and its planes) at `data`, or at nothing.
void PlaceArrayData(ArrayObject* array, std::byte* data) {
  array->view.data = data;
  if (array->planes.size() == 2) {
    array->planes[0]->view.data = data;
    array->planes[1]->view.data = data == nullptr ? nullptr : data + array->desc.Width * array->desc.Height;
  }
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
  array->view = ViewOf(*desc, element, ctx->device);
  if (desc->Format == CU_AD_FORMAT_NV12) AddPlanes(array.get());
  if (!Deferred(*desc)) {  // a deferred-mapping array takes its memory from VMM handles, charged there
    if (!array->backing.Map(array->view.Bytes())) return CUDA_ERROR_OUT_OF_MEMORY;
    PlaceArrayData(array.get(), array->backing.data());
  }
  std::lock_guard lock(Arrays().mu);
  if (ChargedAtCreation(*desc)) {
    if (CUresult rc = Charge(ctx, array->view.Bytes(), &array->charged); rc != CUDA_SUCCESS) return rc;
  }
  ArrayObject* raw = array.get();
  const uint64_t charged = raw->charged;
  try {
    Arrays().arrays.emplace(raw, std::move(array));
    HandleRegistry::Get().Insert(raw, Kind::kArray);
    for (const auto& plane : raw->planes) HandleRegistry::Get().Insert(plane.get(), Kind::kArray);
  } catch (...) {  // out of host memory: leave nothing behind
    for (const auto& plane : raw->planes) HandleRegistry::Get().Erase(plane.get());
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
  if (desc->Format == CU_AD_FORMAT_NV12) return CUDA_ERROR_INVALID_VALUE;  // planar formats have no mip levels
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
    array->view = ViewOf(array->desc, element, ctx->device);
    array->is_level = true;
    total += array->view.Bytes();
    if (!Deferred(*desc)) {  // a deferred-mapping mipmap's levels lie in the memory mapped onto it
      if (!array->backing.Map(array->view.Bytes())) return CUDA_ERROR_OUT_OF_MEMORY;
      PlaceArrayData(array.get(), array->backing.data());
    }
    mipmap->levels.push_back(std::move(array));
  }
  std::lock_guard lock(Arrays().mu);
  if (ChargedAtCreation(*desc)) {
    if (CUresult rc = Charge(ctx, total, &mipmap->charged); rc != CUDA_SUCCESS) return rc;
  }
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

// Caller holds Arrays().mu. Gives the VMM memory mapped onto a deferred-mapping array back.
void UnmapDeferred(DeferredMapping* mapping) {
  if (mapping->handle == 0) return;
  UnmapPhysicalFromArray(mapping->handle, mapping->data, mapping->bytes);
  *mapping = DeferredMapping{};
}

// Caller holds Arrays().mu.
void DestroyMipmappedLocked(MipmappedArrayObject* mipmap) {
  UnmapDeferred(&mipmap->mapping);
  for (const auto& level : mipmap->levels) HandleRegistry::Get().Erase(level.get());
  HandleRegistry::Get().Erase(mipmap);
  Runtime::Get().Credit(mipmap->device, mipmap->charged);
  Arrays().mipmaps.erase(mipmap);
}

// Caller holds Arrays().mu.
void DestroyArrayLocked(ArrayObject* array) {
  UnmapDeferred(&array->mapping);
  for (const auto& plane : array->planes) HandleRegistry::Get().Erase(plane.get());
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
  if (array->view.data == nullptr) return CUDA_ERROR_INVALID_VALUE;  // deferred mapping, nothing mapped yet
  *out = array->view;
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
    if (array == nullptr || array->is_level || array->is_plane) {
      return CUDA_ERROR_INVALID_HANDLE;  // levels and planes go with their owner
    }
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

// --- planes, sparse properties, memory requirements, deferred mapping -------------------------
namespace fgpu::sim::cuda {
namespace {

uint64_t RoundUpToMapAlignment(uint64_t bytes) {
  return (bytes + kArrayMapAlignment - 1) / kArrayMapAlignment * kArrayMapAlignment;
}

uint64_t MipmapBytes(const MipmappedArrayObject& mipmap) {
  uint64_t total = 0;
  for (const auto& level : mipmap.levels) total += level->view.Bytes();
  return total;
}

CUresult GetPlane(CUarray* plane, CUarray handle, unsigned index) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (plane == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const ArrayObject* array = LookupArray(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= array->planes.size()) return CUDA_ERROR_INVALID_VALUE;  // not multi-planar, or no such plane
  *plane = reinterpret_cast<CUarray>(array->planes[index].get());
  return CUDA_SUCCESS;
}

// Sparse tiles are 64 KiB; their shape follows the element size (the standard tile shapes).
constexpr uint64_t kSparseTileBytes = 64 * 1024;

struct TileExtent {
  uint64_t width, height, depth;
};

TileExtent TileOf(const CUDA_ARRAY3D_DESCRIPTOR& d, uint64_t element) {
  const bool volume = d.Depth > 0 && (d.Flags & CUDA_ARRAY3D_LAYERED) == 0;
  if (volume) {
    switch (element) {
      case 1: return {64, 32, 32};
      case 2: return {32, 32, 32};
      case 4: return {32, 32, 16};
      case 8: return {32, 16, 16};
      default: return {16, 16, 16};
    }
  }
  switch (element) {
    case 1: return {256, 256, 1};
    case 2: return {256, 128, 1};
    case 4: return {128, 128, 1};
    case 8: return {128, 64, 1};
    default: return {64, 64, 1};
  }
}

bool Layered(const CUDA_ARRAY3D_DESCRIPTOR& d) { return (d.Flags & CUDA_ARRAY3D_LAYERED) != 0; }

// A level is in the mip tail when it is smaller than a tile in any dimension.
bool InMipTail(const ArrayObject& level, const TileExtent& tile) {
  const bool volume = level.desc.Depth > 0 && !Layered(level.desc);
  return level.desc.Width < tile.width || level.desc.Height < tile.height || (volume && level.desc.Depth < tile.depth);
}

// Bytes of one layer of a level (all of it for a non-layered level).
uint64_t LayerBytes(const ArrayObject& level) {
  return Layered(level.desc) ? level.view.RowBytes() * level.view.height : level.view.Bytes();
}

void FillTile(CUDA_ARRAY_SPARSE_PROPERTIES* out, const TileExtent& tile) {
  *out = CUDA_ARRAY_SPARSE_PROPERTIES{};
  out->tileExtent.width = static_cast<unsigned>(tile.width);
  out->tileExtent.height = static_cast<unsigned>(tile.height);
  out->tileExtent.depth = static_cast<unsigned>(tile.depth);
}

uint64_t RoundUpToTile(uint64_t bytes) { return (bytes + kSparseTileBytes - 1) / kSparseTileBytes * kSparseTileBytes; }

// A sparse array is all mip tail when it is smaller than one tile; then the tail is the whole array.
CUresult GetArraySparse(CUDA_ARRAY_SPARSE_PROPERTIES* out, CUarray handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const ArrayObject* array = LookupArray(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!Sparse(array->desc) || array->is_level || array->is_plane) return CUDA_ERROR_INVALID_VALUE;
  const TileExtent tile = TileOf(array->desc, array->view.element);
  FillTile(out, tile);
  if (InMipTail(*array, tile)) {
    out->flags = CU_ARRAY_SPARSE_PROPERTIES_SINGLE_MIPTAIL;
    out->miptailSize = RoundUpToTile(array->view.Bytes());
  }
  return CUDA_SUCCESS;
}

// Index of the first level in the mip tail; levels.size() when there is none.
size_t FirstTailLevel(const MipmappedArrayObject& mipmap, const TileExtent& tile) {
  for (size_t level = 0; level < mipmap.levels.size(); ++level) {
    if (InMipTail(*mipmap.levels[level], tile)) return level;
  }
  return mipmap.levels.size();
}

// The mip tail's size: per layer for layered mipmaps (no single mip tail), the whole tail otherwise.
uint64_t MipTailBytes(const MipmappedArrayObject& mipmap, const TileExtent& tile) {
  uint64_t bytes = 0;
  for (size_t level = FirstTailLevel(mipmap, tile); level < mipmap.levels.size(); ++level) {
    bytes += LayerBytes(*mipmap.levels[level]);
  }
  return bytes == 0 ? 0 : RoundUpToTile(bytes);
}

CUresult GetMipmapSparse(CUDA_ARRAY_SPARSE_PROPERTIES* out, CUmipmappedArray handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const auto* mipmap = HandleRegistry::Get().Lookup<MipmappedArrayObject>(handle, Kind::kMipmappedArray);
  if (mipmap == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!Sparse(mipmap->desc)) return CUDA_ERROR_INVALID_VALUE;
  const TileExtent tile = TileOf(mipmap->desc, mipmap->levels[0]->view.element);
  FillTile(out, tile);
  out->miptailSize = MipTailBytes(*mipmap, tile);
  if (out->miptailSize != 0) out->miptailFirstLevel = static_cast<unsigned>(FirstTailLevel(*mipmap, tile));
  return CUDA_SUCCESS;
}

void FillRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, uint64_t bytes) {
  *out = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  out->size = RoundUpToMapAlignment(bytes);
  out->alignment = kArrayMapAlignment;
}

CUresult GetArrayRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUarray handle, CUdevice device) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || Runtime::Get().CheckDevice(device) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const ArrayObject* array = LookupArray(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!Deferred(array->desc) || array->is_level || array->is_plane) return CUDA_ERROR_INVALID_VALUE;
  FillRequirements(out, array->view.Bytes());
  return CUDA_SUCCESS;
}

CUresult GetMipmapRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUmipmappedArray handle, CUdevice device) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || Runtime::Get().CheckDevice(device) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  const auto* mipmap = HandleRegistry::Get().Lookup<MipmappedArrayObject>(handle, Kind::kMipmappedArray);
  if (mipmap == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!Deferred(mipmap->desc)) return CUDA_ERROR_INVALID_VALUE;
  FillRequirements(out, MipmapBytes(*mipmap));
  return CUDA_SUCCESS;
}

// Points each level of a deferred-mapping mipmap at its part of the mapped memory, or at nothing.
void PlaceLevels(MipmappedArrayObject* mipmap, std::byte* data) {
  uint64_t offset = 0;
  for (const auto& level : mipmap->levels) {
    PlaceArrayData(level.get(), data == nullptr ? nullptr : data + offset);
    offset += level->view.Bytes();
  }
}

// Whether [offset, offset + extent) of a level `size` long is whole tiles (the last one may end
// at the level's edge).
bool TileAligned(uint64_t offset, uint64_t extent, uint64_t size, uint64_t tile) {
  return extent != 0 && offset % tile == 0 && offset <= size && extent <= size - offset &&
         (extent % tile == 0 || offset + extent == size);
}

uint64_t TilesAcross(uint64_t extent, uint64_t tile) { return (extent + tile - 1) / tile; }

// The bytes of tile-pool memory one sparse entry covers, or 0 when the entry is invalid.
uint64_t SparseEntryBytes(const CUarrayMapInfo& info, const ArrayObject* array, const MipmappedArrayObject* mipmap) {
  const CUDA_ARRAY3D_DESCRIPTOR& d = array != nullptr ? array->desc : mipmap->desc;
  const uint64_t element = array != nullptr ? array->view.element : mipmap->levels[0]->view.element;
  const TileExtent tile = TileOf(d, element);
  const uint64_t layers = Layered(d) ? d.Depth : 1;
  if (info.subresourceType == CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL) {
    const auto& tail = info.subresource.miptail;
    const uint64_t tail_bytes = array != nullptr ? (InMipTail(*array, tile) ? RoundUpToTile(array->view.Bytes()) : 0)
                                                 : MipTailBytes(*mipmap, tile);
    const bool per_layer = mipmap != nullptr && Layered(d);
    if (tail.layer >= (per_layer ? layers : 1) || tail.size == 0 || tail.offset % kSparseTileBytes != 0 ||
        tail.size % kSparseTileBytes != 0 || tail.offset > tail_bytes || tail.size > tail_bytes - tail.offset) {
      return 0;
    }
    return tail.size;
  }
  if (info.subresourceType != CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL) return 0;
  const auto& part = info.subresource.sparseLevel;
  const ArrayObject* level = array;
  if (mipmap != nullptr) {
    if (part.level >= FirstTailLevel(*mipmap, tile)) return 0;  // a valid level, not in the mip tail
    level = mipmap->levels[part.level].get();
  } else if (part.level != 0 || InMipTail(*array, tile)) {
    return 0;
  }
  const bool volume = d.Depth > 0 && !Layered(d);
  if (part.layer >= layers) return 0;
  if (!volume && (part.offsetZ != 0 || part.extentDepth != 1)) return 0;
  const uint64_t depth = volume ? level->desc.Depth : 1;
  if (!TileAligned(part.offsetX, part.extentWidth, level->desc.Width, tile.width) ||
      !TileAligned(part.offsetY, part.extentHeight, level->desc.Height, tile.height) ||
      !TileAligned(part.offsetZ, part.extentDepth, depth, tile.depth)) {
    return 0;
  }
  return TilesAcross(part.extentWidth, tile.width) * TilesAcross(part.extentHeight, tile.height) *
         TilesAcross(part.extentDepth, tile.depth) * kSparseTileBytes;
}

// A sparse entry is validated in full (subresource, tile alignment, the tile pool range on the
// stream's device); the texels themselves stay in the array's own storage (docs).
CUresult MapSparse(const CUarrayMapInfo& info, const ArrayObject* array, const MipmappedArrayObject* mipmap,
                   int stream_device) {
  const uint64_t bytes = SparseEntryBytes(info, array, mipmap);
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (info.memOperationType == CU_MEM_OPERATION_TYPE_UNMAP) {
    return info.memHandle.memHandle == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  if (info.memOperationType != CU_MEM_OPERATION_TYPE_MAP || info.memHandleType != CU_MEM_HANDLE_TYPE_GENERIC ||
      info.offset % kSparseTileBytes != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CheckPhysicalRange(info.memHandle.memHandle, info.offset, bytes, stream_device);
}

// One entry of cuMemMapArrayAsync on a deferred-mapping or sparse array or mipmapped array. For
// deferred mapping the subresource fields are ignored, as documented. Caller holds Arrays().mu.
CUresult MapOne(const CUarrayMapInfo& info, int stream_device) {
  if (info.flags != 0 || info.reserved[0] != 0 || info.reserved[1] != 0) return CUDA_ERROR_INVALID_VALUE;
  if (info.deviceBitMask != (1u << stream_device)) return CUDA_ERROR_INVALID_VALUE;  // exactly the stream's device
  DeferredMapping* mapping = nullptr;
  uint64_t bytes = 0;
  ArrayObject* array = nullptr;
  MipmappedArrayObject* mipmap = nullptr;
  if (info.resourceType == CU_RESOURCE_TYPE_ARRAY) {
    array = LookupArray(info.resource.array);
    if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!(Deferred(array->desc) || Sparse(array->desc)) || array->is_level || array->is_plane) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    mapping = &array->mapping;
    bytes = RoundUpToMapAlignment(array->view.Bytes());
  } else if (info.resourceType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) {
    mipmap = HandleRegistry::Get().Lookup<MipmappedArrayObject>(info.resource.mipmap, Kind::kMipmappedArray);
    if (mipmap == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!(Deferred(mipmap->desc) || Sparse(mipmap->desc))) return CUDA_ERROR_INVALID_VALUE;
    mapping = &mipmap->mapping;
    bytes = RoundUpToMapAlignment(MipmapBytes(*mipmap));
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int array_device = array != nullptr ? array->device : mipmap->device;
  if (array_device != stream_device) return CUDA_ERROR_INVALID_VALUE;
  if (Sparse(array != nullptr ? array->desc : mipmap->desc)) return MapSparse(info, array, mipmap, stream_device);
  auto place = [&](std::byte* data) {
    if (array != nullptr) PlaceArrayData(array, data);
    if (mipmap != nullptr) PlaceLevels(mipmap, data);
  };
  if (info.memOperationType == CU_MEM_OPERATION_TYPE_UNMAP) {
    if (info.memHandle.memHandle != 0 || mapping->handle == 0) return CUDA_ERROR_INVALID_VALUE;
    place(nullptr);
    UnmapDeferred(mapping);
    return CUDA_SUCCESS;
  }
  if (info.memOperationType != CU_MEM_OPERATION_TYPE_MAP || info.memHandleType != CU_MEM_HANDLE_TYPE_GENERIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (mapping->handle != 0 || info.offset % kArrayMapAlignment != 0) return CUDA_ERROR_INVALID_VALUE;
  std::byte* data = nullptr;
  if (CUresult rc = MapPhysicalIntoArray(info.memHandle.memHandle, info.offset, bytes, stream_device, &data);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  *mapping = DeferredMapping{info.memHandle.memHandle, data, bytes};
  place(data);
  return CUDA_SUCCESS;
}

// Entries are applied in order, at the call (stream order is not observable: docs/sim-memory.md);
// the first invalid one stops the list, the ones before it stay applied.
CUresult MapArrays(CUarrayMapInfo* list, unsigned count, CUstream stream, bool per_thread) {
  int device = 0;
  if (CUresult rc = EnterAsyncCopy(stream, per_thread, &device); rc != CUDA_SUCCESS) return rc;
  if (list == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Arrays().mu);
  for (unsigned i = 0; i < count; ++i) {
    if (CUresult rc = MapOne(list[i], device); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fgpu::sim::cuda

extern "C" {

CUresult cuArrayGetPlane(CUarray* pPlaneArray, CUarray hArray, unsigned int planeIdx) {
  return Guarded([&] { return sim::GetPlane(pPlaneArray, hArray, planeIdx); });
}
CUresult cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties, CUarray array) {
  return Guarded([&] { return sim::GetArraySparse(sparseProperties, array); });
}
CUresult cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties,
                                             CUmipmappedArray mipmap) {
  return Guarded([&] { return sim::GetMipmapSparse(sparseProperties, mipmap); });
}
CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array,
                                      CUdevice device) {
  return Guarded([&] { return sim::GetArrayRequirements(memoryRequirements, array, device); });
}
CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                               CUmipmappedArray mipmap, CUdevice device) {
  return Guarded([&] { return sim::GetMipmapRequirements(memoryRequirements, mipmap, device); });
}
CUresult cuMemMapArrayAsync(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream) {
  return Guarded([&] { return sim::MapArrays(mapInfoList, count, hStream, false); });
}
CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream) {
  return Guarded([&] { return sim::MapArrays(mapInfoList, count, hStream, true); });
}

}  // extern "C"
