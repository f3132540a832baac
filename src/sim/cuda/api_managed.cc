// Unified (managed) memory hints: prefetching, advice, range attributes and stream association.
// Managed memory is resident on its device from allocation on and never migrates
// (docs/sim-memory.md), so no hint moves anything: each is validated as the driver validates it
// and recorded per page, so that cuMemRangeGetAttribute[s] read back what was advised and where
// the range was last prefetched (docs/sim-entry-points.md).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

// The range must lie inside one managed allocation (cuMemAllocManaged).
bool ManagedRange(uint64_t ptr, uint64_t count) {
  const auto found = MemoryRegistry::Get().Find(ptr);
  return found && found->kind == AllocKind::kManaged && count <= found->end() - ptr;
}

int LocationType(const CUmemLocation& location) {
  int type = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&type, &location.type, sizeof type);
  return type;
}

// A location as recorded: type 0 (CU_MEM_LOCATION_TYPE_INVALID) is "none".
struct AdviceLocation {
  int type = 0;
  int id = 0;
  bool operator==(const AdviceLocation&) const = default;
};

// What was advised for one run of pages of a managed allocation.
struct PageAdvice {
  bool read_mostly = false;
  AdviceLocation preferred;
  uint64_t accessed_by = 0;  // AccessorBit(device) per device, AccessorBit(kHostAccessor) for the host
  AdviceLocation last_prefetch;
  bool operator==(const PageAdvice&) const = default;
};

// The advice of one allocation: runs of pages, each from its offset to the next run's.
struct AllocationAdvice {
  uint64_t buffer_id = 0;
  std::map<uint64_t, PageAdvice> runs{{0, PageAdvice{}}};
};

// Advice of every managed allocation that has any, by base address. Entries go with their
// allocation (ForgetManagedAdvice); the buffer id guards against a base reused in between.
struct AdviceStore {
  std::mutex mu;
  std::unordered_map<uint64_t, AllocationAdvice> by_base;
};
AdviceStore& Advice() {
  static auto* store = new AdviceStore;  // never destroyed: entry points may run during exit
  return *store;
}

uint64_t HostPage() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// The managed allocation holding [ptr, ptr + count), count > 0.
std::optional<Allocation> ManagedAllocation(uint64_t ptr, uint64_t count) {
  if (count == 0) return std::nullopt;
  auto found = MemoryRegistry::Get().Find(ptr);
  if (!found || found->kind != AllocKind::kManaged || count > found->end() - ptr) return std::nullopt;
  return found;
}

// Applies `change` to the pages of [ptr, ptr + count) inside `allocation`: the range is widened to
// whole host pages (as the driver rounds it), split off from its neighbours, changed, and runs
// left equal to their predecessor are merged.
template <typename Change>
void ApplyAdvice(const Allocation& allocation, uint64_t ptr, uint64_t count, Change&& change) {
  const uint64_t page = HostPage();
  const uint64_t begin = (ptr - allocation.base) / page * page;
  const uint64_t end = std::min(RoundUp(ptr - allocation.base + count, page), RoundUp(allocation.size, page));
  AdviceStore& store = Advice();
  std::lock_guard lock(store.mu);
  AllocationAdvice& advice = store.by_base[allocation.base];
  if (advice.buffer_id != allocation.buffer_id) advice = AllocationAdvice{allocation.buffer_id};
  auto& runs = advice.runs;
  auto split = [&runs](uint64_t at) {
    auto it = runs.upper_bound(at);
    const PageAdvice value = std::prev(it)->second;
    runs.emplace_hint(it, at, value);  // no-op where a run starts at `at`
  };
  split(begin);
  const bool to_end = end >= RoundUp(allocation.size, HostPage());
  if (!to_end) split(end);
  for (auto it = runs.find(begin); it != runs.end() && it->first < end; ++it) change(it->second);
  for (auto it = std::next(runs.begin()); it != runs.end();) {
    it = std::prev(it)->second == it->second ? runs.erase(it) : std::next(it);
  }
}

// The runs covering [ptr, ptr + count), as copies (a range never advised is one default run).
std::vector<PageAdvice> AdviceOf(const Allocation& allocation, uint64_t ptr, uint64_t count) {
  const uint64_t begin = ptr - allocation.base, end = begin + count;
  AdviceStore& store = Advice();
  std::lock_guard lock(store.mu);
  const auto found = store.by_base.find(allocation.base);
  if (found == store.by_base.end() || found->second.buffer_id != allocation.buffer_id) return {PageAdvice{}};
  const auto& runs = found->second.runs;
  std::vector<PageAdvice> covering;
  for (auto it = std::prev(runs.upper_bound(begin)); it != runs.end() && it->first < end; ++it) {
    covering.push_back(it->second);
  }
  return covering;
}

// A checked location as the range attributes report it: the calling thread's NUMA node is node 0.
AdviceLocation Recorded(const CUmemLocation& location) {
  const int type = LocationType(location);
  if (type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) return {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  if (type == CU_MEM_LOCATION_TYPE_HOST) return {CU_MEM_LOCATION_TYPE_HOST, 0};
  return {type, location.id};
}

// A device of this process, or the host (one NUMA node, 0, as cuMemCreate's host locations).
CUresult CheckLocation(const CUmemLocation& location) {
  switch (LocationType(location)) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return Runtime::Get().CheckDevice(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return CUDA_SUCCESS;  // the id is ignored, as documented
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Prefetch(uint64_t ptr, uint64_t count, const CUmemLocation& location, unsigned flags,
                  CUstream handle, bool per_thread) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // reserved, must be zero
  if (CUresult rc = CheckLocation(location); rc != CUDA_SUCCESS) return rc;
  if (!ManagedRange(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  // Graphs have no node for it yet, as for copies.
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  // The range attributes report the location last asked for, done or not (as documented).
  if (const auto allocation = ManagedAllocation(ptr, count)) {
    const AdviceLocation where = Recorded(location);
    ApplyAdvice(*allocation, ptr, count, [&](PageAdvice& page) { page.last_prefetch = where; });
  }
  return CUDA_SUCCESS;
}

CUresult Advise(uint64_t ptr, uint64_t count, int advice, const CUmemLocation& location) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  const auto allocation = ManagedAllocation(ptr, count);
  if (!allocation) return CUDA_ERROR_INVALID_VALUE;
  const int type = LocationType(location);
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: {  // the location is ignored
      const bool set = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
      ApplyAdvice(*allocation, ptr, count, [&](PageAdvice& page) { page.read_mostly = set; });
      return CUDA_SUCCESS;
    }
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: {
      if (CUresult rc = CheckLocation(location); rc != CUDA_SUCCESS) return rc;
      const AdviceLocation where = Recorded(location);
      ApplyAdvice(*allocation, ptr, count, [&](PageAdvice& page) { page.preferred = where; });
      return CUDA_SUCCESS;
    }
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:  // the location is ignored
      ApplyAdvice(*allocation, ptr, count, [](PageAdvice& page) { page.preferred = {}; });
      return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY: {  // a device or the host, nothing else
      uint64_t bit = AccessorBit(kHostAccessor);
      if (type == CU_MEM_LOCATION_TYPE_DEVICE) {
        if (CUresult rc = Runtime::Get().CheckDevice(location.id); rc != CUDA_SUCCESS) return rc;
        bit = AccessorBit(location.id);
      } else if (type != CU_MEM_LOCATION_TYPE_HOST) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      const bool set = advice == CU_MEM_ADVISE_SET_ACCESSED_BY;
      ApplyAdvice(*allocation, ptr, count, [&](PageAdvice& page) {
        page.accessed_by = set ? page.accessed_by | bit : page.accessed_by & ~bit;
      });
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// One location every run shares, or none (type 0) where they differ or any has none.
AdviceLocation Common(const std::vector<PageAdvice>& runs, AdviceLocation PageAdvice::*field) {
  const AdviceLocation first = runs.front().*field;
  for (const PageAdvice& run : runs) {
    if (!(run.*field == first)) return {};
  }
  return first;
}

// The 8.0 attributes name a device id, CU_DEVICE_CPU for the host, CU_DEVICE_INVALID for none.
int AsDevice(const AdviceLocation& where) {
  switch (where.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return where.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return CU_DEVICE_CPU;
    default:
      return CU_DEVICE_INVALID;
  }
}

CUresult WriteInt(void* data, size_t size, int value) {
  if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(data, &value, sizeof value);
  return CUDA_SUCCESS;
}

CUresult RangeAttribute(void* data, size_t size, int attribute, const std::vector<PageAdvice>& runs) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: {
      bool all = true;
      for (const PageAdvice& run : runs) all = all && run.read_mostly;
      return WriteInt(data, size, all ? 1 : 0);
    }
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return WriteInt(data, size, AsDevice(Common(runs, &PageAdvice::preferred)));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      return WriteInt(data, size, Common(runs, &PageAdvice::preferred).type);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      return WriteInt(data, size, Common(runs, &PageAdvice::preferred).id);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return WriteInt(data, size, AsDevice(Common(runs, &PageAdvice::last_prefetch)));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return WriteInt(data, size, Common(runs, &PageAdvice::last_prefetch).type);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      return WriteInt(data, size, Common(runs, &PageAdvice::last_prefetch).id);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      // Devices (and the host, as CU_DEVICE_CPU) advised over the whole range, then
      // CU_DEVICE_INVALID in the space left.
      if (size == 0 || size % sizeof(int) != 0) return CUDA_ERROR_INVALID_VALUE;
      uint64_t all = ~uint64_t{0};
      for (const PageAdvice& run : runs) all &= run.accessed_by;
      std::vector<int> ids(size / sizeof(int), CU_DEVICE_INVALID);
      size_t n = 0;
      for (int d = 0; d < kHostAccessor && n < ids.size(); ++d) {
        if ((all & AccessorBit(d)) != 0) ids[n++] = d;
      }
      if ((all & AccessorBit(kHostAccessor)) != 0 && n < ids.size()) ids[n++] = CU_DEVICE_CPU;
      std::memcpy(data, ids.data(), size);
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult RangeAttributes(void** data, const size_t* sizes, const CUmem_range_attribute* attributes, size_t n,
                         uint64_t ptr, uint64_t count) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (data == nullptr || sizes == nullptr || attributes == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto allocation = ManagedAllocation(ptr, count);
  if (!allocation) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<PageAdvice> runs = AdviceOf(*allocation, ptr, count);
  for (size_t i = 0; i < n; ++i) {
    int attribute = 0;
    std::memcpy(&attribute, &attributes[i], sizeof attribute);
    if (CUresult rc = RangeAttribute(data[i], sizes[i], attribute, runs); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

// cuStreamAttachMemAsync: every processor may access managed memory at any time here (concurrent
// managed access is 1), so an association changes nothing; it is validated as documented.
CUresult AttachMem(CUstream handle, uint64_t ptr, uint64_t length, unsigned flags, bool per_thread) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The NULL stream is not a specific stream: no single attachment to it.
  if (flags == CU_MEM_ATTACH_SINGLE && stream->is_default) return CUDA_ERROR_INVALID_VALUE;
  // The whole allocation, from its base: length 0 or its size.
  const auto found = MemoryRegistry::Get().FindBase(ptr);
  if (!found || found->kind != AllocKind::kManaged) return CUDA_ERROR_INVALID_VALUE;
  if (length != 0 && length != found->size) return CUDA_ERROR_INVALID_VALUE;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// The 8.0 form names a device, or CU_DEVICE_CPU for the host.
CUmemLocation LocationOf(CUdevice device) {
  CUmemLocation location{};
  location.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device;
  return location;
}

// --- batches (CUDA 13.0) ---------------------------------------------------------------------

// The stream of a batch: any but the legacy NULL stream, not being captured.
CUresult BatchStream(CUstream handle, bool per_thread, Stream** stream) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, stream); rc != CUDA_SUCCESS) return rc;
  if (*stream == (*stream)->ctx->legacy_stream.get()) return CUDA_ERROR_INVALID_VALUE;
  if ((*stream)->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// Every range inside one managed allocation.
CUresult BatchRanges(const CUdeviceptr* dptrs, const size_t* sizes, size_t count) {
  if (count == 0 || dptrs == nullptr || sizes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (!ManagedAllocation(dptrs[i], sizes[i])) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Locations and the index of the first operation each applies to: the first 0, increasing, the
// last below `count`, no more locations than operations.
CUresult BatchLocations(const CUmemLocation* locations, const size_t* firsts, size_t n, size_t count) {
  if (n == 0 || n > count || locations == nullptr || firsts == nullptr || firsts[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t k = 0; k < n; ++k) {
    if ((k > 0 && firsts[k] <= firsts[k - 1]) || firsts[k] >= count) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = CheckLocation(locations[k]); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult PrefetchBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locations, size_t* firsts,
                       size_t n, unsigned long long flags, CUstream handle, bool per_thread, bool discard) {
  Stream* stream = nullptr;
  if (CUresult rc = BatchStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // reserved
  if (CUresult rc = BatchRanges(dptrs, sizes, count); rc != CUDA_SUCCESS) return rc;
  if (!discard || locations != nullptr || n != 0) {
    if (CUresult rc = BatchLocations(locations, firsts, n, count); rc != CUDA_SUCCESS) return rc;
  }
  // Discarded contents are "indeterminate" until written: keeping them is one such value.
  for (size_t i = 0, k = 0; n != 0 && i < count; ++i) {
    while (k + 1 < n && firsts[k + 1] <= i) ++k;
    const AdviceLocation where = Recorded(locations[k]);
    if (sizes[i] == 0) continue;
    if (const auto allocation = ManagedAllocation(dptrs[i], sizes[i])) {
      ApplyAdvice(*allocation, dptrs[i], sizes[i], [&](PageAdvice& page) { page.last_prefetch = where; });
    }
  }
  return CUDA_SUCCESS;
}

// Hopper has no decompression engine (CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK is 0).
CUresult BatchDecompress(const CUmemDecompressParams* params, size_t count, unsigned flags, size_t* error_index,
                         CUstream handle, bool per_thread) {
  if (error_index != nullptr) *error_index = SIZE_MAX;  // a general error, no single operation's
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (params == nullptr || count == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

void ForgetManagedAdvice(const Allocation& allocation) {
  AdviceStore& store = Advice();
  std::lock_guard lock(store.mu);
  const auto found = store.by_base.find(allocation.base);
  if (found != store.by_base.end() && found->second.buffer_id == allocation.buffer_id)
    store.by_base.erase(found);
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return sim::Guarded(
      [&] { return sim::Prefetch(devPtr, count, sim::LocationOf(dstDevice), 0, hStream, false); });
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
  return sim::Guarded(
      [&] { return sim::Prefetch(devPtr, count, sim::LocationOf(dstDevice), 0, hStream, true); });
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                               CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, location, flags, hStream, false); });
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream) {
  return sim::Guarded([&] { return sim::Prefetch(devPtr, count, location, flags, hStream, true); });
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  int value = 0;
  std::memcpy(&value, &advice, sizeof value);
  return sim::Guarded([&] { return sim::Advise(devPtr, count, value, sim::LocationOf(device)); });
}
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  int value = 0;
  std::memcpy(&value, &advice, sizeof value);
  return sim::Guarded([&] { return sim::Advise(devPtr, count, value, location); });
}
CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count) {
  return sim::Guarded([&] {
    void* one[1] = {data};
    return sim::RangeAttributes(one, &dataSize, &attribute, 1, devPtr, count);
  });
}
CUresult cuMemRangeGetAttributes(void** data, size_t* dataSizes, CUmem_range_attribute* attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  return sim::Guarded(
      [&] { return sim::RangeAttributes(data, dataSizes, attributes, numAttributes, devPtr, count); });
}
CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  return sim::Guarded([&] { return sim::AttachMem(hStream, dptr, length, flags, false); });
}
CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) {
  return sim::Guarded([&] { return sim::AttachMem(hStream, dptr, length, flags, true); });
}


CUresult cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                                 size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                 CUstream hStream) {
  return sim::Guarded([&] {
    return sim::PrefetchBatch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream,
                              false, false);
  });
}
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                                      size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                      CUstream hStream) {
  return sim::Guarded([&] {
    return sim::PrefetchBatch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream,
                              true, false);
  });
}
CUresult cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                CUstream hStream) {
  return sim::Guarded(
      [&] { return sim::PrefetchBatch(dptrs, sizes, count, nullptr, nullptr, 0, flags, hStream, false, true); });
}
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                     CUstream hStream) {
  return sim::Guarded(
      [&] { return sim::PrefetchBatch(dptrs, sizes, count, nullptr, nullptr, 0, flags, hStream, true, true); });
}
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                           CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return sim::Guarded([&] {
    return sim::PrefetchBatch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream,
                              false, false);
  });
}
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  return sim::Guarded([&] {
    return sim::PrefetchBatch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream,
                              true, false);
  });
}
CUresult cuMemBatchDecompressAsync(CUmemDecompressParams* paramsArray, size_t count, unsigned int flags,
                                   size_t* errorIndex, CUstream stream) {
  return sim::Guarded([&] { return sim::BatchDecompress(paramsArray, count, flags, errorIndex, stream, false); });
}
CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams* paramsArray, size_t count, unsigned int flags,
                                        size_t* errorIndex, CUstream stream) {
  return sim::Guarded([&] { return sim::BatchDecompress(paramsArray, count, flags, errorIndex, stream, true); });
}

}  // extern "C"
