// Green contexts and device resources (cuDeviceGetDevResource, cuDevSmResourceSplitByCount,
// cuDevResourceGenerateDesc, cuGreenCtx*, ...; docs/sim-entry-points.md).
//
// Model: a device's SM resource is its SM count, with a minimum partition of 8 SMs and SMs
// co-scheduled in pairs (a TPC); a split makes equal groups of max(minCount, 8) SMs rounded up to
// 8 (to 2 with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING); a green context is a context of
// its own (charged like any context) that reports the SMs its descriptor gave it. Stated
// simplification: its kernels still take the whole device's timeline (the simulator runs one
// kernel at a time per device), so the SM limit changes no timing.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

constexpr unsigned kMinSmPartition = 8;
constexpr unsigned kCoscheduledSms = 2;
constexpr unsigned kIgnoringCoschedulingGranule = 2;
constexpr char kResourceStamp[4] = {'f', 'g', 'p', 'u'};

struct ResourceDesc {
  int device = 0;
  unsigned sm_count = 0;
};

struct GreenContext {
  Context* ctx = nullptr;
  int device = 0;
  unsigned sm_count = 0;
  unsigned long long id = 0;
};

struct GreenTables {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<ResourceDesc>> descs;  // live for the process
  std::unordered_map<const void*, std::unique_ptr<GreenContext>> greens;
  std::unordered_map<const Context*, GreenContext*> by_context;
  unsigned long long next_id = 1;
};
GreenTables& Greens() {
  static auto* tables = new GreenTables;  // never destroyed: entry points may run during exit
  return *tables;
}

// An SM resource of `device`, stamped (in the driver's padding) with the device it came from.
void MakeSmResource(CUdevResource* out, int device, unsigned sm_count) {
  std::memset(out, 0, sizeof *out);
  out->type = CU_DEV_RESOURCE_TYPE_SM;
  std::memcpy(out->_internal_padding, kResourceStamp, sizeof kResourceStamp);
  std::memcpy(out->_internal_padding + sizeof kResourceStamp, &device, sizeof device);
  out->sm.smCount = sm_count;
  out->sm.minSmPartitionSize = kMinSmPartition;
  out->sm.smCoscheduledAlignment = kCoscheduledSms;
}

// The device a resource made here came from; -1 for anything else.
int ResourceDevice(const CUdevResource& resource) {
  if (std::memcmp(resource._internal_padding, kResourceStamp, sizeof kResourceStamp) != 0) return -1;
  int device = -1;
  std::memcpy(&device, resource._internal_padding + sizeof kResourceStamp, sizeof device);
  return device;
}

CUresult SmResourceOf(int device, unsigned sm_count, CUdevResource* resource, CUdevResourceType type) {
  if (resource == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int t = 0;
  std::memcpy(&t, &type, sizeof t);
  if (t != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  MakeSmResource(resource, device, sm_count);
  return CUDA_SUCCESS;
}

unsigned DeviceSms(int device) { return static_cast<unsigned>(Runtime::Get().spec(device).sm_count); }

GreenContext* LookupGreen(CUgreenCtx handle) {
  GreenTables& tables = Greens();
  std::lock_guard lock(tables.mu);
  const auto found = tables.greens.find(handle);
  return found == tables.greens.end() ? nullptr : found->second.get();
}

CUresult Split(CUdevResource* result, unsigned* groups, const CUdevResource* input, CUdevResource* remaining,
               unsigned flags, unsigned min_count) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (groups == nullptr || input == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (input->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  const int device = ResourceDevice(*input);
  if (device < 0 || Runtime::Get().CheckDevice(device) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown =
      CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING | CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE;
  if ((flags & ~kKnown) != 0 || min_count > input->sm.smCount) return CUDA_ERROR_INVALID_VALUE;
  if (result != nullptr && *groups == 0) return CUDA_ERROR_INVALID_VALUE;
  const bool ignore = (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) != 0;
  const unsigned granule = ignore ? kIgnoringCoschedulingGranule : kMinSmPartition;
  const unsigned least = ignore ? kIgnoringCoschedulingGranule : kMinSmPartition;
  const unsigned size = (std::max(min_count, least) + granule - 1) / granule * granule;
  unsigned made = input->sm.smCount / size;
  if (result != nullptr) {
    made = std::min(made, *groups);
    for (unsigned i = 0; i < made; ++i) MakeSmResource(&result[i], device, size);
  }
  *groups = made;
  if (remaining != nullptr) MakeSmResource(remaining, device, input->sm.smCount - made * size);
  return CUDA_SUCCESS;
}

CUresult GenerateDesc(CUdevResourceDesc* out, const CUdevResource* resources, unsigned count) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || resources == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  auto desc = std::make_unique<ResourceDesc>();
  desc->device = ResourceDevice(resources[0]);
  for (unsigned i = 0; i < count; ++i) {
    if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (ResourceDevice(resources[i]) != desc->device || desc->device < 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    desc->sm_count += resources[i].sm.smCount;
  }
  if (Runtime::Get().CheckDevice(desc->device) != CUDA_SUCCESS || desc->sm_count == 0 ||
      desc->sm_count > DeviceSms(desc->device)) {
    return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  }
  GreenTables& tables = Greens();
  std::lock_guard lock(tables.mu);
  *out = reinterpret_cast<CUdevResourceDesc>(desc.get());
  tables.descs.emplace(desc.get(), std::move(desc));
  return CUDA_SUCCESS;
}

CUresult CreateGreen(CUgreenCtx* out, CUdevResourceDesc handle, CUdevice dev, unsigned flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Runtime::Get().CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (flags != CU_GREEN_CTX_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;  // the one flag, required
  GreenTables& tables = Greens();
  ResourceDesc desc;
  {
    std::lock_guard lock(tables.mu);
    const auto found = tables.descs.find(handle);
    if (found == tables.descs.end()) return CUDA_ERROR_INVALID_VALUE;
    desc = *found->second;
  }
  if (desc.device != dev) return CUDA_ERROR_INVALID_VALUE;
  auto green = std::make_unique<GreenContext>();
  // A context of its own, not made current (a green context is made current explicitly).
  if (CUresult rc = Runtime::Get().CreateContext(dev, 0, &green->ctx); rc != CUDA_SUCCESS) return rc;
  Runtime::Get().PopCurrent();
  green->device = dev;
  green->sm_count = desc.sm_count;
  std::lock_guard lock(tables.mu);
  green->id = tables.next_id++;
  tables.by_context[green->ctx] = green.get();
  *out = reinterpret_cast<CUgreenCtx>(green.get());
  tables.greens.emplace(green.get(), std::move(green));
  return CUDA_SUCCESS;
}

CUresult DestroyGreen(CUgreenCtx handle) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  GreenTables& tables = Greens();
  std::unique_ptr<GreenContext> green;
  {
    std::lock_guard lock(tables.mu);
    const auto found = tables.greens.find(handle);
    if (found == tables.greens.end()) return CUDA_ERROR_INVALID_HANDLE;
    green = std::move(found->second);
    tables.greens.erase(found);
    tables.by_context.erase(green->ctx);
  }
  if (Runtime::Get().LookupContext(reinterpret_cast<CUcontext>(green->ctx)) != nullptr) {
    return Runtime::Get().DestroyContext(green->ctx);
  }
  return CUDA_SUCCESS;
}

// The SM count a context reports: its green context's, or the whole device's.
unsigned ContextSms(const Context* ctx) {
  GreenTables& tables = Greens();
  std::lock_guard lock(tables.mu);
  const auto found = tables.by_context.find(ctx);
  return found != tables.by_context.end() ? found->second->sm_count : DeviceSms(ctx->device);
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource, CUdevResourceType type) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = sim::Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  return sim::SmResourceOf(device, sim::DeviceSms(device), resource, type);
}

CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource* resource, CUdevResourceType type) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  sim::Context* ctx = nullptr;
  if (CUresult rc = sim::Runtime::Get().ContextOrCurrent(hCtx, &ctx); rc != CUDA_SUCCESS) return rc;
  return sim::Guarded([&] { return sim::SmResourceOf(ctx->device, sim::ContextSms(ctx), resource, type); });
}

CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource, CUdevResourceType type) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  const sim::GreenContext* green = sim::LookupGreen(hCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return sim::SmResourceOf(green->device, green->sm_count, resource, type);
}

CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups, const CUdevResource* input,
                                     CUdevResource* remaining, unsigned int useFlags, unsigned int minCount) {
  return sim::Guarded([&] { return sim::Split(result, nbGroups, input, remaining, useFlags, minCount); });
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources, unsigned int nbResources) {
  return sim::Guarded([&] { return sim::GenerateDesc(phDesc, resources, nbResources); });
}

CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags) {
  return sim::Guarded([&] { return sim::CreateGreen(phCtx, desc, dev, flags); });
}

CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  return sim::Guarded([&] { return sim::DestroyGreen(hCtx); });
}

CUresult cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (pContext == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const sim::GreenContext* green = sim::LookupGreen(hCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *pContext = reinterpret_cast<CUcontext>(green->ctx);
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long* greenCtxId) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (greenCtxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const sim::GreenContext* green = sim::LookupGreen(greenCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *greenCtxId = green->id;
  return CUDA_SUCCESS;
}

// Events of a green context are its context's (cuCtxRecordEvent / cuCtxWaitEvent).
CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  const sim::GreenContext* green = sim::LookupGreen(hCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return cuCtxRecordEvent(reinterpret_cast<CUcontext>(green->ctx), hEvent);
}

CUresult cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  const sim::GreenContext* green = sim::LookupGreen(hCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return cuCtxWaitEvent(reinterpret_cast<CUcontext>(green->ctx), hEvent);
}

// A stream of the green context's own context; CU_STREAM_NON_BLOCKING is required.
CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags, int priority) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  const sim::GreenContext* green = sim::LookupGreen(greenCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (phStream == nullptr || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  sim::Runtime::Get().PushCurrent(green->ctx);
  const CUresult rc = cuStreamCreateWithPriority(phStream, flags, priority);
  sim::Runtime::Get().PopCurrent();
  return rc;
}

// The green context a stream belongs to; NULL for a stream of an ordinary context.
CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx* phCtx) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (phCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  sim::Stream* stream = nullptr;
  if (CUresult rc = sim::Runtime::Get().ResolveStream(hStream, false, &stream); rc != CUDA_SUCCESS) return rc;
  sim::GreenTables& tables = sim::Greens();
  std::lock_guard lock(tables.mu);
  const auto found = tables.by_context.find(stream->ctx);
  *phCtx = found != tables.by_context.end() ? reinterpret_cast<CUgreenCtx>(found->second) : nullptr;
  return CUDA_SUCCESS;
}

}  // extern "C"
