#include "probe/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fgpu::probe {

namespace {

constexpr uint64_t kPitchRows = 64;
constexpr unsigned kPitchElementBytes = 4;
constexpr uint64_t kArrayElementBytes = 4;  // one FLOAT channel
constexpr uint64_t kRoundTripWindow = 64 * 1024;

// Returns from the calling Allocate* with the failing call's name.
#define FGPU_PROBE_TRY_(fn, ...)                                                       \
  do {                                                                                 \
    if (const CUresult rc_ = session_.cu().fn(__VA_ARGS__); rc_ != CUDA_SUCCESS) {     \
      return AllocOutcome{rc_, #fn};                                                   \
    }                                                                                  \
  } while (0)

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Smallest s with s^power >= n (power 2 or 3); floating point gets close, integers finish.
uint64_t CeilRoot(uint64_t n, int power) {
  const auto raised = [power](uint64_t s) {
    long double value = 1;
    for (int i = 0; i < power; ++i) value *= static_cast<long double>(s);
    return value;
  };
  auto s = static_cast<uint64_t>(power == 2 ? std::sqrt(static_cast<double>(n)) : std::cbrt(static_cast<double>(n)));
  s = std::max<uint64_t>(s, 1);
  while (s > 1 && raised(s - 1) >= static_cast<long double>(n)) --s;
  while (raised(s) < static_cast<long double>(n)) ++s;
  return s;
}

// splitmix64: a pattern that differs for every 8-byte word and every seed, so a
// block aliased with another, or a stale copy, does not compare equal.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void FillPattern(uint64_t seed, uint64_t offset, std::vector<unsigned char>* bytes) {
  for (size_t i = 0; i < bytes->size(); ++i) {
    const uint64_t at = offset + i;
    (*bytes)[i] = static_cast<unsigned char>(Mix(seed * 0x100000001B3ull + at / 8) >> (8 * (at % 8)));
  }
}

}  // namespace

DeviceMemory::~DeviceMemory() {
  if (pool_ != nullptr) FGPU_PROBE_CALL(session_, cuMemPoolDestroy, pool_);
  if (stream_ != nullptr) FGPU_PROBE_CALL(session_, cuStreamDestroy_v2, stream_);
}

AllocOutcome DeviceMemory::Allocate(uint64_t bytes, DeviceBlock* block) {
  *block = DeviceBlock{};
  block->api = api_;
  block->requested_bytes = bytes;
  block->allocated_bytes = bytes;
  switch (api_) {
    case AllocApi::kMemAlloc:
      FGPU_PROBE_TRY_(cuMemAlloc_v2, &block->ptr, bytes);
      return {};
    case AllocApi::kPitch: {
      size_t pitch = 0;
      FGPU_PROBE_TRY_(cuMemAllocPitch_v2, &block->ptr, &pitch, CeilDiv(bytes, kPitchRows), kPitchRows,
                      kPitchElementBytes);
      block->allocated_bytes = pitch * kPitchRows;
      block->shape = {pitch, kPitchRows};
      return {};
    }
    case AllocApi::kManaged:
      FGPU_PROBE_TRY_(cuMemAllocManaged, &block->ptr, bytes, CU_MEM_ATTACH_GLOBAL);
      return {};
    case AllocApi::kVmm:
      return AllocateVmm(bytes, block);
    case AllocApi::kAsync:
    case AllocApi::kPool:
      return AllocateStreamOrdered(bytes, block);
    case AllocApi::kArray:
    case AllocApi::kArray3D:
    case AllocApi::kMipmapped:
      return AllocateArray(bytes, block);
    case AllocApi::kExternal:
      return AllocateExternal(bytes, block);
  }
  return {CUDA_ERROR_INVALID_VALUE, "unknown api"};
}

AllocOutcome DeviceMemory::AllocateVmm(uint64_t bytes, DeviceBlock* block) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = session_.device();
  size_t granularity = 0;
  FGPU_PROBE_TRY_(cuMemGetAllocationGranularity, &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (granularity == 0) return {CUDA_ERROR_INVALID_VALUE, "cuMemGetAllocationGranularity"};
  const uint64_t size = CeilDiv(std::max<uint64_t>(bytes, 1), granularity) * granularity;
  block->allocated_bytes = size;
  FGPU_PROBE_TRY_(cuMemCreate, &block->handle, size, &prop, 0);
  const DriverTable& cu = session_.cu();
  if (CUresult rc = cu.cuMemAddressReserve(&block->ptr, size, 0, 0, 0); rc != CUDA_SUCCESS) {
    cu.cuMemRelease(block->handle);
    return {rc, "cuMemAddressReserve"};
  }
  if (CUresult rc = cu.cuMemMap(block->ptr, size, 0, block->handle, 0); rc != CUDA_SUCCESS) {
    cu.cuMemAddressFree(block->ptr, size);
    cu.cuMemRelease(block->handle);
    return {rc, "cuMemMap"};
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult rc = cu.cuMemSetAccess(block->ptr, size, &access, 1); rc != CUDA_SUCCESS) {
    cu.cuMemUnmap(block->ptr, size);
    cu.cuMemAddressFree(block->ptr, size);
    cu.cuMemRelease(block->handle);
    return {rc, "cuMemSetAccess"};
  }
  return {};
}

AllocOutcome DeviceMemory::EnsureStream() {
  if (stream_ == nullptr) FGPU_PROBE_TRY_(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
  return {};
}

AllocOutcome DeviceMemory::EnsurePool() {
  if (pool_ != nullptr) return {};
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = session_.device();
  FGPU_PROBE_TRY_(cuMemPoolCreate, &pool_, &props);
  return {};
}

AllocOutcome DeviceMemory::AllocateStreamOrdered(uint64_t bytes, DeviceBlock* block) {
  if (AllocOutcome made = EnsureStream(); made.code != CUDA_SUCCESS) return made;
  if (api_ == AllocApi::kPool) {
    if (AllocOutcome made = EnsurePool(); made.code != CUDA_SUCCESS) return made;
    FGPU_PROBE_TRY_(cuMemAllocFromPoolAsync, &block->ptr, bytes, pool_, stream_);
  } else {
    FGPU_PROBE_TRY_(cuMemAllocAsync, &block->ptr, bytes, stream_);
  }
  // Stream-ordered allocation errors may surface only when the stream runs.
  if (CUresult rc = session_.cu().cuStreamSynchronize(stream_); rc != CUDA_SUCCESS) {
    session_.cu().cuMemFreeAsync(block->ptr, stream_);
    return {rc, "cuStreamSynchronize"};
  }
  return {};
}

AllocOutcome DeviceMemory::AllocateArray(uint64_t bytes, DeviceBlock* block) {
  const uint64_t elements = std::max<uint64_t>(CeilDiv(bytes, kArrayElementBytes), 1);
  if (api_ == AllocApi::kArray3D) {
    const uint64_t side = CeilRoot(elements, 3);
    const uint64_t depth = CeilDiv(elements, side * side);
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = side;
    desc.Height = side;
    desc.Depth = depth;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    block->shape = {side, side, depth};
    block->allocated_bytes = side * side * depth * kArrayElementBytes;
    FGPU_PROBE_TRY_(cuArray3DCreate_v2, &block->array, &desc);
    return {};
  }
  const uint64_t width = CeilRoot(elements, 2);
  const uint64_t height = CeilDiv(elements, width);
  block->shape = {width, height};
  block->allocated_bytes = width * height * kArrayElementBytes;
  if (api_ == AllocApi::kArray) {
    CUDA_ARRAY_DESCRIPTOR desc{};
    desc.Width = width;
    desc.Height = height;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    FGPU_PROBE_TRY_(cuArrayCreate_v2, &block->array, &desc);
    return {};
  }
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = width;
  desc.Height = height;
  desc.Depth = 0;  // a 2D mipmapped array
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  FGPU_PROBE_TRY_(cuMipmappedArrayCreate, &block->mipmapped, &desc, 1);
  return {};
}

// Memory "another API" holds, as a graphics interop program imports it: a memfd of `bytes`
// imported as an opaque file descriptor and mapped whole. A real driver accepts only descriptors
// its own or Vulkan's exports made, so on a GPU this API reports the driver's refusal.
AllocOutcome DeviceMemory::AllocateExternal(uint64_t bytes, DeviceBlock* block) {
  const int fd = memfd_create("fgpu-probe-external", MFD_CLOEXEC);
  if (fd < 0) return {CUDA_ERROR_OPERATING_SYSTEM, "memfd_create"};
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return {CUDA_ERROR_OPERATING_SYSTEM, "ftruncate"};
  }
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = bytes;
  const DriverTable& cu = session_.cu();
  // On success the driver owns the descriptor (it closes it); on failure it is still ours.
  if (CUresult rc = cu.cuImportExternalMemory(&block->external, &desc); rc != CUDA_SUCCESS) {
    close(fd);
    return {rc, "cuImportExternalMemory"};
  }
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer{};
  buffer.size = bytes;
  if (CUresult rc = cu.cuExternalMemoryGetMappedBuffer(&block->ptr, block->external, &buffer);
      rc != CUDA_SUCCESS) {
    cu.cuDestroyExternalMemory(block->external);
    return {rc, "cuExternalMemoryGetMappedBuffer"};
  }
  return {};
}

bool DeviceMemory::Free(const DeviceBlock& block) {
  switch (block.api) {
    case AllocApi::kMemAlloc:
    case AllocApi::kPitch:
    case AllocApi::kManaged:
      return FGPU_PROBE_CALL(session_, cuMemFree_v2, block.ptr);
    case AllocApi::kVmm: {
      // All three run even if one fails: each releases a different resource.
      const bool unmapped = FGPU_PROBE_CALL(session_, cuMemUnmap, block.ptr, block.allocated_bytes);
      const bool released = FGPU_PROBE_CALL(session_, cuMemRelease, block.handle);
      const bool freed = FGPU_PROBE_CALL(session_, cuMemAddressFree, block.ptr, block.allocated_bytes);
      return unmapped && released && freed;
    }
    case AllocApi::kAsync:
    case AllocApi::kPool:
      return FGPU_PROBE_CALL(session_, cuMemFreeAsync, block.ptr, stream_) &&
             FGPU_PROBE_CALL(session_, cuStreamSynchronize, stream_);
    case AllocApi::kArray:
    case AllocApi::kArray3D:
      return FGPU_PROBE_CALL(session_, cuArrayDestroy, block.array);
    case AllocApi::kMipmapped:
      return FGPU_PROBE_CALL(session_, cuMipmappedArrayDestroy, block.mipmapped);
    case AllocApi::kExternal: {
      const bool unmapped = FGPU_PROBE_CALL(session_, cuMemFree_v2, block.ptr);
      return FGPU_PROBE_CALL(session_, cuDestroyExternalMemory, block.external) && unmapped;
    }
  }
  return false;
}

bool DeviceMemory::RoundTrip(const DeviceBlock& block, uint64_t seed) const {
  const uint64_t size = block.requested_bytes;
  if (!IsLinear(block.api) || size == 0) return false;
  // Two windows when they do not overlap; one covering the block otherwise.
  std::vector<uint64_t> offsets = {0};
  uint64_t window = size;
  if (size > 2 * kRoundTripWindow) {
    window = kRoundTripWindow;
    offsets.push_back(size - window);
  }
  std::vector<unsigned char> written(window);
  std::vector<unsigned char> read(window);
  for (uint64_t offset : offsets) {
    FillPattern(seed, offset, &written);
    if (!FGPU_PROBE_CALL(session_, cuMemcpyHtoD_v2, block.ptr + offset, written.data(), window)) return false;
  }
  for (uint64_t offset : offsets) {
    FillPattern(seed, offset, &written);
    std::fill(read.begin(), read.end(), 0);
    if (!FGPU_PROBE_CALL(session_, cuMemcpyDtoH_v2, read.data(), block.ptr + offset, window)) return false;
    if (read != written) return false;
  }
  return true;
}

}  // namespace fgpu::probe
