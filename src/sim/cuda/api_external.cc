// External memory and semaphores (cuImportExternalMemory, cuExternalMemoryGetMappedBuffer,
// cuImportExternalSemaphore, cuSignal/WaitExternalSemaphoresAsync, ...): the Linux handle types
// are modelled, the others answer what a driver without them answers (docs/sim-entry-points.md).
//
// Memory: an opaque file descriptor names a shared memory object (a memfd, or a simulated VMM
// allocation's export); a mapped buffer maps it, so what one side writes the other reads. What
// an import charges: nothing for a simulated driver's VMM export (its exporter holds the device
// memory, as for cuMemImportFromShareableHandle); for any other object — memory another API
// (Vulkan, say) holds on the GPU, which the simulated device cannot see — `size` rounded up to
// the granularity, charged to the importing process at import and credited at destroy.
//
// Semaphores: a binary (opaque fd) or timeline semaphore is a 64-bit counter: in the first eight
// bytes of the object the descriptor names when it can be mapped (so processes sharing it share
// the counter), else in this process. Signals and waits are stream work (stream_gate.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/host_calls.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

namespace fgpu::sim::cuda {
namespace {

// What api_vmm.cc names the memfds of cuMemCreate allocations.
constexpr const char* kVmmMemfdLink = "/memfd:fgpu-sim-vmm:";

struct ExternalMemory {
  Context* ctx = nullptr;
  int device = 0;
  int fd = -1;  // owned: the import takes the application's descriptor
  uint64_t size = 0;
  uint64_t charged = 0;
};

struct ExternalSemaphore {
  Context* ctx = nullptr;
  bool timeline = false;
  int fd = -1;           // owned
  void* page = nullptr;  // the shared object's first page, when it maps
  std::atomic<uint64_t> local{0};
  std::atomic<uint64_t>* value = &local;
};

struct ExternalTable {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<ExternalMemory>> memories;
  std::unordered_map<const void*, std::unique_ptr<ExternalSemaphore>> semaphores;
};
ExternalTable& External() {
  static auto* table = new ExternalTable;  // never destroyed: entry points may run during exit
  return *table;
}

void Dispose(std::unique_ptr<ExternalMemory> memory) {
  HandleRegistry::Get().Erase(memory.get());
  if (memory->fd >= 0) close(memory->fd);
  if (memory->charged != 0) Runtime::Get().Credit(memory->device, memory->charged);
}

void Dispose(std::unique_ptr<ExternalSemaphore> semaphore) {
  HandleRegistry::Get().Erase(semaphore.get());
  if (semaphore->page != nullptr) munmap(semaphore->page, PageSize());
  if (semaphore->fd >= 0) close(semaphore->fd);
}

bool FromSimulatedVmm(int fd) {
  char target[256] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  return n > 0 && std::string(target, static_cast<size_t>(n)).rfind(kVmmMemfdLink, 0) == 0;
}

CUresult CurrentForExternal(Context** ctx) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().CurrentContext(ctx);
}

CUresult ImportMemory(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentForExternal(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int type = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&type, &desc->type, sizeof type);
  switch (type) {
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD:
      break;
    // Windows handles, Direct3D objects, NvSciBuf (Tegra and DRIVE), dma-buf (Tegra Thor on):
    // none exists for a Linux x86 H100.
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32_KMT:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_D3D11_RESOURCE_KMT:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  if ((desc->flags & ~static_cast<unsigned>(CUDA_EXTERNAL_MEMORY_DEDICATED)) != 0 || desc->size == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int fd = desc->handle.fd;
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return CUDA_ERROR_INVALID_HANDLE;
  if (desc->size > static_cast<uint64_t>(st.st_size)) return CUDA_ERROR_INVALID_VALUE;
  auto memory = std::make_unique<ExternalMemory>();
  memory->ctx = ctx;
  memory->device = ctx->device;
  memory->size = desc->size;
  if (!FromSimulatedVmm(fd)) {
    memory->charged = Runtime::Get().RoundToGranularity(ctx->device, desc->size);
    if (!Runtime::Get().Charge(ctx->device, memory->charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memory->fd = fd;  // ownership passes to the driver on success, as documented
  ExternalTable& table = External();
  std::lock_guard lock(table.mu);
  HandleRegistry::Get().Insert(memory.get(), Kind::kExternalMemory);
  *out = reinterpret_cast<CUexternalMemory>(memory.get());
  table.memories.emplace(memory.get(), std::move(memory));
  return CUDA_SUCCESS;
}

CUresult MappedBuffer(CUdeviceptr* out, CUexternalMemory handle,
                      const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ExternalTable& table = External();
  std::lock_guard lock(table.mu);
  const auto* memory = HandleRegistry::Get().Lookup<ExternalMemory>(handle, Kind::kExternalMemory);
  if (memory == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (desc->flags != 0 || desc->size == 0 || desc->offset >= memory->size ||
      desc->size > memory->size - desc->offset || desc->offset % PageSize() != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t length = RoundUp(desc->size, PageSize());
  void* base =
      mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, memory->fd, static_cast<off_t>(desc->offset));
  if (base == MAP_FAILED) return CUDA_ERROR_OPERATING_SYSTEM;
  Allocation a;
  a.base = reinterpret_cast<uint64_t>(base);
  a.size = desc->size;
  a.mapped_length = length;
  a.device = memory->device;
  a.ctx = memory->ctx;
  a.kind = AllocKind::kExternalBuffer;
  a.buffer_id = MemoryRegistry::Get().NextBufferId();
  if (!MemoryRegistry::Get().Insert(a)) {
    munmap(base, length);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult MappedMipmappedArray(CUmipmappedArray* out, CUexternalMemory handle,
                              const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* desc) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ExternalTable& table = External();
  std::lock_guard lock(table.mu);
  const auto* memory = HandleRegistry::Get().Lookup<ExternalMemory>(handle, Kind::kExternalMemory);
  if (memory == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (desc->numLevels == 0 || desc->offset >= memory->size) return CUDA_ERROR_INVALID_VALUE;
  // Arrays hold no data in the simulator (docs/sim-memory.md), so none can be placed over memory.
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult DestroyMemory(CUexternalMemory handle) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  ExternalTable& table = External();
  std::unique_ptr<ExternalMemory> memory;
  {
    std::lock_guard lock(table.mu);
    const auto found = table.memories.find(handle);
    if (found == table.memories.end()) return CUDA_ERROR_INVALID_HANDLE;
    memory = std::move(found->second);
    table.memories.erase(found);
  }
  // Buffers mapped from it stay mapped until cuMemFree (the mapping keeps the object alive).
  Dispose(std::move(memory));
  return CUDA_SUCCESS;
}

CUresult ImportSemaphore(CUexternalSemaphore* out, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* desc) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentForExternal(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int type = 0;
  std::memcpy(&type, &desc->type, sizeof type);
  switch (type) {
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD:
      break;
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32_KMT:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D12_FENCE:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_FENCE:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX_KMT:
    case CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (desc->flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const int fd = desc->handle.fd;
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) return CUDA_ERROR_INVALID_HANDLE;
  auto semaphore = std::make_unique<ExternalSemaphore>();
  semaphore->ctx = ctx;
  semaphore->timeline = type == CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  if (S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(sizeof(uint64_t))) {
    void* page = mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (page != MAP_FAILED) {
      semaphore->page = page;
      semaphore->value = static_cast<std::atomic<uint64_t>*>(page);
    }
  }
  semaphore->fd = fd;  // ownership passes to the driver on success
  ExternalTable& table = External();
  std::lock_guard lock(table.mu);
  HandleRegistry::Get().Insert(semaphore.get(), Kind::kExternalSemaphore);
  *out = reinterpret_cast<CUexternalSemaphore>(semaphore.get());
  table.semaphores.emplace(semaphore.get(), std::move(semaphore));
  return CUDA_SUCCESS;
}

CUresult DestroySemaphore(CUexternalSemaphore handle) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  ExternalTable& table = External();
  std::unique_ptr<ExternalSemaphore> semaphore;
  {
    std::lock_guard lock(table.mu);
    const auto found = table.semaphores.find(handle);
    if (found == table.semaphores.end()) return CUDA_ERROR_INVALID_HANDLE;
    semaphore = std::move(found->second);
    table.semaphores.erase(found);
  }
  Dispose(std::move(semaphore));
  return CUDA_SUCCESS;
}

// The semaphores of a signal or wait, each live; then the stream.
CUresult Semaphores(const CUexternalSemaphore* handles, const void* params, unsigned count,
                    CUstream stream_handle, bool per_thread, std::vector<ExternalSemaphore*>* out,
                    Stream** stream) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (count > 0 && (handles == nullptr || params == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    auto* semaphore = HandleRegistry::Get().Lookup<ExternalSemaphore>(handles[i], Kind::kExternalSemaphore);
    if (semaphore == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    out->push_back(semaphore);
  }
  if (CUresult rc = Runtime::Get().ResolveStream(stream_handle, per_thread, stream); rc != CUDA_SUCCESS)
    return rc;
  // Graphs have no external-semaphore nodes here yet.
  if ((*stream)->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

// A signal lands when the stream gets to it: a binary semaphore becomes signalled, a timeline
// semaphore takes the value.
void Land(ExternalSemaphore* semaphore, uint64_t value) {
  if (!HandleRegistry::Get().Is(semaphore, Kind::kExternalSemaphore)) return;  // destroyed meanwhile
  semaphore->value->store(semaphore->timeline ? value : 1);
  NotifyGateWrite();
}

CUresult SignalSemaphores(const CUexternalSemaphore* handles,
                          const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params, unsigned count,
                          CUstream stream_handle, bool per_thread) {
  std::vector<ExternalSemaphore*> semaphores;
  Stream* stream = nullptr;
  if (CUresult rc = Semaphores(handles, params, count, stream_handle, per_thread, &semaphores, &stream);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (params[i].flags != 0) return CUDA_ERROR_INVALID_VALUE;  // the flag is NvSciBuf's only
  }
  for (unsigned i = 0; i < count; ++i) {
    ExternalSemaphore* semaphore = semaphores[i];
    const uint64_t value = params[i].params.fence.value;
    RunOrHold(*stream, [stream, semaphore, value] {
      const uint64_t due = Runtime::Get().ReadyTime(*stream);
      if (SharedDevices::NowNs() >= due) {
        Land(semaphore, value);
      } else {
        ScheduleHostCall(*stream, due, [semaphore, value] { Land(semaphore, value); });
      }
    });
  }
  return CUDA_SUCCESS;
}

// A wait holds the stream until a binary semaphore is signalled (and consumes the signal) or a
// timeline semaphore reaches the value.
CUresult WaitSemaphores(const CUexternalSemaphore* handles, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params,
                        unsigned count, CUstream stream_handle, bool per_thread) {
  std::vector<ExternalSemaphore*> semaphores;
  Stream* stream = nullptr;
  if (CUresult rc = Semaphores(handles, params, count, stream_handle, per_thread, &semaphores, &stream);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (params[i].flags != 0) return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < count; ++i) {
    ExternalSemaphore* semaphore = semaphores[i];
    const uint64_t value = params[i].params.fence.value;
    HoldUntil(*stream, [semaphore, value] {
      if (!HandleRegistry::Get().Is(semaphore, Kind::kExternalSemaphore)) return true;
      if (semaphore->timeline) return semaphore->value->load() >= value;
      uint64_t signalled = 1;
      return semaphore->value->compare_exchange_strong(signalled, 0);
    });
  }
  return CUDA_SUCCESS;
}

}  // namespace

void ReleaseExternalOf(Context* ctx) {
  ExternalTable& table = External();
  std::vector<std::unique_ptr<ExternalMemory>> memories;
  std::vector<std::unique_ptr<ExternalSemaphore>> semaphores;
  {
    std::lock_guard lock(table.mu);
    for (auto it = table.memories.begin(); it != table.memories.end();) {
      if (it->second->ctx == ctx) {
        memories.push_back(std::move(it->second));
        it = table.memories.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = table.semaphores.begin(); it != table.semaphores.end();) {
      if (it->second->ctx == ctx) {
        semaphores.push_back(std::move(it->second));
        it = table.semaphores.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& memory : memories) Dispose(std::move(memory));
  for (auto& semaphore : semaphores) Dispose(std::move(semaphore));
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuImportExternalMemory(CUexternalMemory* extMem_out,
                                const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* memHandleDesc) {
  return sim::Guarded([&] { return sim::ImportMemory(extMem_out, memHandleDesc); });
}
CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr* devPtr, CUexternalMemory extMem,
                                         const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* bufferDesc) {
  return sim::Guarded([&] { return sim::MappedBuffer(devPtr, extMem, bufferDesc); });
}
CUresult cuExternalMemoryGetMappedMipmappedArray(
    CUmipmappedArray* mipmap, CUexternalMemory extMem,
    const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* mipmapDesc) {
  return sim::Guarded([&] { return sim::MappedMipmappedArray(mipmap, extMem, mipmapDesc); });
}
CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  return sim::Guarded([&] { return sim::DestroyMemory(extMem); });
}
CUresult cuImportExternalSemaphore(CUexternalSemaphore* extSem_out,
                                   const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* semHandleDesc) {
  return sim::Guarded([&] { return sim::ImportSemaphore(extSem_out, semHandleDesc); });
}
CUresult cuSignalExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                         const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray,
                                         unsigned int numExtSems, CUstream stream) {
  return sim::Guarded(
      [&] { return sim::SignalSemaphores(extSemArray, paramsArray, numExtSems, stream, false); });
}
CUresult cuSignalExternalSemaphoresAsync_ptsz(const CUexternalSemaphore* extSemArray,
                                              const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray,
                                              unsigned int numExtSems, CUstream stream) {
  return sim::Guarded(
      [&] { return sim::SignalSemaphores(extSemArray, paramsArray, numExtSems, stream, true); });
}
CUresult cuWaitExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                       const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray,
                                       unsigned int numExtSems, CUstream stream) {
  return sim::Guarded(
      [&] { return sim::WaitSemaphores(extSemArray, paramsArray, numExtSems, stream, false); });
}
CUresult cuWaitExternalSemaphoresAsync_ptsz(const CUexternalSemaphore* extSemArray,
                                            const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray,
                                            unsigned int numExtSems, CUstream stream) {
  return sim::Guarded(
      [&] { return sim::WaitSemaphores(extSemArray, paramsArray, numExtSems, stream, true); });
}
CUresult cuDestroyExternalSemaphore(CUexternalSemaphore extSem) {
  return sim::Guarded([&] { return sim::DestroySemaphore(extSem); });
}

}  // extern "C"
