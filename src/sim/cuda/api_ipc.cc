// Inter-process memory and events (docs/sim-memory.md "IPC"). Device memory is host memory, so
// sharing it is sharing pages: cuIpcGetMemHandle moves the allocation onto a memfd (its resident
// pages copied, its address kept) and the handle names the exporter's pid and descriptor; the
// importer opens /proc/<pid>/fd/<fd> and maps the same pages. Nothing is charged twice: the
// exporter's allocation holds the device memory, an import holds none. An interprocess event
// keeps its completion time on a shared page, so a record in one process is seen in the other.
// Who may open a handle is the kernel's rule for /proc/<pid>/fd (the exporter's own user, or
// root), as a real driver's is whether the processes may reach each other; the memfds are 0600 on
// top, so a descriptor that escapes is no key for other users (docs/security.md "CUDA IPC").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::AllocKind;
using fgpu::sim::cuda::Allocation;
using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Event;
using fgpu::sim::cuda::Guarded;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::MemoryRegistry;
using fgpu::sim::cuda::Runtime;

namespace fgpu::sim::cuda {
namespace {

constexpr uint32_t kMemMagic = 0x50494746;    // "FGIP"
constexpr uint32_t kEventMagic = 0x45494746;  // "FGIE"
constexpr uint32_t kHandleVersion = 1;

// What our 64 bytes of a CUipcMemHandle / CUipcEventHandle hold.
struct HandleBody {
  uint32_t magic = 0;
  uint32_t version = 0;
  int32_t pid = 0;
  int32_t fd = -1;
  uint64_t size = 0;
  uint64_t buffer_id = 0;  // the exporter's allocation (imports of one handle are shared)
  int32_t physical_device = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(HandleBody) <= CU_IPC_HANDLE_SIZE);

struct IpcImport {
  uint64_t base = 0;
  int references = 0;
};

// Process-local: the descriptors of exported allocations, and the imports by their origin.
struct IpcTables {
  std::mutex mu;
  std::map<uint64_t, int> exported;  // allocation base -> memfd
  std::map<std::pair<int32_t, uint64_t>, IpcImport> imports;  // (pid, buffer id) -> mapping
};
std::atomic<int> g_ipc_entries{0};  // exported + imported: Release skips the lock at 0

IpcTables& Tables() {
  static IpcTables* tables = new IpcTables;  // never destroyed: frees may run at exit
  return *tables;
}

template <typename Handle>
HandleBody BodyOf(const Handle& handle) {
  HandleBody body;
  std::memcpy(&body, handle.reserved, sizeof(body));
  return body;
}

template <typename Handle>
Handle HandleOf(const HandleBody& body) {
  Handle handle{};
  std::memcpy(handle.reserved, &body, sizeof(body));
  return handle;
}

int OrdinalOfPhysical(int physical) {
  Runtime& runtime = Runtime::Get();
  for (int device = 0; device < runtime.device_count(); ++device) {
    if (runtime.physical(device) == physical) return device;
  }
  return -1;
}

// A memfd only its creator's user may open again (memfd_create makes it 0777): opening through
// /proc checks the inode's mode after the process's, so one that escapes is no key to another user.
int OwnerOnlyMemfd(const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd >= 0 && ::fchmod(fd, S_IRUSR | S_IWUSR) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The exporter's descriptor, opened through /proc: -1 when it (or the process) is gone and when
// the caller may not reach it (another user's process): one answer, so a handle tells another
// user nothing, not even whether its exporter lives.
int OpenExported(const HandleBody& body) {
  const std::string path = "/proc/" + std::to_string(body.pid) + "/fd/" + std::to_string(body.fd);
  return ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

// Moves [base, base + length) onto a new memfd at the same address: the resident pages are
// copied (untouched ones are zero in both), so data written before the export is kept.
int MoveOntoMemfd(uint64_t base, uint64_t length) {
  const int fd = OwnerOnlyMemfd("fgpu-sim-ipc");
  if (fd < 0) return -1;
  void* staging = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(length)) == 0) {
    staging = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (staging == MAP_FAILED) {
    ::close(fd);
    return -1;
  }
  const uint64_t page = PageSize();
  std::vector<unsigned char> resident((length + page - 1) / page);
  if (::mincore(reinterpret_cast<void*>(base), length, resident.data()) != 0) {
    std::fill(resident.begin(), resident.end(), 1);
  }
  for (size_t i = 0; i < resident.size(); ++i) {
    if ((resident[i] & 1U) == 0) continue;
    const uint64_t offset = i * page;
    std::memcpy(static_cast<char*>(staging) + offset, reinterpret_cast<const char*>(base + offset),
                std::min(page, length - offset));
  }
  ::munmap(staging, length);
  void* moved = ::mmap(reinterpret_cast<void*>(base), length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (moved == MAP_FAILED) {
    ::close(fd);
    return -1;
  }
  return fd;
}

CUresult GetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Only cuMemAlloc's memory, from its base (managed, pooled and VMM memory have their own ways).
  const std::optional<Allocation> found = MemoryRegistry::Get().FindBase(dptr);
  if (!found || (found->kind != AllocKind::kDevice && found->kind != AllocKind::kPitched)) return CUDA_ERROR_INVALID_VALUE;
  IpcTables& tables = Tables();
  std::lock_guard lock(tables.mu);
  auto exported = tables.exported.find(found->base);
  if (exported == tables.exported.end()) {
    const int fd = MoveOntoMemfd(found->base, found->mapped_length);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    exported = tables.exported.emplace(found->base, fd).first;
    g_ipc_entries.fetch_add(1);
  }
  HandleBody body;
  body.magic = kMemMagic;
  body.version = kHandleVersion;
  body.pid = static_cast<int32_t>(::getpid());
  body.fd = exported->second;
  body.size = found->mapped_length;
  body.buffer_id = found->buffer_id;
  body.physical_device = Runtime::Get().physical(found->device);
  *handle = HandleOf<CUipcMemHandle>(body);
  return CUDA_SUCCESS;
}

CUresult OpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned flags) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pdptr == nullptr || (flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const HandleBody body = BodyOf(handle);
  if (body.magic != kMemMagic || body.version != kHandleVersion || body.size == 0) return CUDA_ERROR_INVALID_VALUE;
  // The exporting process maps its own memory already: the driver refuses to map it twice.
  if (body.pid == ::getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  const int device = OrdinalOfPhysical(body.physical_device);
  if (device < 0) return CUDA_ERROR_INVALID_DEVICE;
  IpcTables& tables = Tables();
  std::lock_guard lock(tables.mu);
  const auto key = std::make_pair(body.pid, body.buffer_id);
  if (auto open = tables.imports.find(key); open != tables.imports.end()) {
    ++open->second.references;
    *pdptr = open->second.base;
    return CUDA_SUCCESS;
  }
  const int fd = OpenExported(body);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;  // gone, or another user's
  struct stat st{};
  void* mapped = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == body.size) {
    mapped = ::mmap(nullptr, body.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (mapped == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  Allocation a;
  a.base = reinterpret_cast<uint64_t>(mapped);
  a.size = body.size;
  a.mapped_length = body.size;
  a.device = device;
  a.ctx = ctx;
  a.kind = AllocKind::kIpcImport;
  a.buffer_id = MemoryRegistry::Get().NextBufferId();
  if (!MemoryRegistry::Get().Insert(a)) {
    ::munmap(mapped, body.size);
    return CUDA_ERROR_MAP_FAILED;
  }
  tables.imports[key] = IpcImport{a.base, 1};
  g_ipc_entries.fetch_add(1);
  *pdptr = a.base;
  return CUDA_SUCCESS;
}

CUresult CloseMemHandle(CUdeviceptr dptr) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  IpcTables& tables = Tables();
  std::unique_lock lock(tables.mu);
  const auto open = std::find_if(tables.imports.begin(), tables.imports.end(),
                                 [&](const auto& entry) { return entry.second.base == dptr; });
  if (open == tables.imports.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--open->second.references > 0) return CUDA_SUCCESS;
  tables.imports.erase(open);
  g_ipc_entries.fetch_sub(1);
  lock.unlock();
  const auto removed = MemoryRegistry::Get().Erase(dptr, [](const Allocation& a) { return a.kind == AllocKind::kIpcImport; });
  if (removed) UnmapBacking(removed->base, removed->mapped_length);
  return CUDA_SUCCESS;
}

// --- events -----------------------------------------------------------------------

struct SharedEventPage {
  std::atomic<uint64_t> time_ns{0};  // 0: never recorded; else when its work completes
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "a shared page's atomics must not take locks");

CUresult GetEventHandle(CUipcEventHandle* handle, CUevent event_handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Event* event = HandleRegistry::Get().Lookup<Event>(event_handle, Kind::kEvent);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((event->flags & CU_EVENT_INTERPROCESS) == 0) return CUDA_ERROR_INVALID_VALUE;
  IpcTables& tables = Tables();
  std::lock_guard lock(tables.mu);
  if (event->shared == nullptr) {
    const int fd = OwnerOnlyMemfd("fgpu-sim-ipc-event");
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    void* page = MAP_FAILED;
    if (::ftruncate(fd, static_cast<off_t>(PageSize())) == 0) {
      page = ::mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (page == MAP_FAILED) {
      ::close(fd);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    auto* shared = new (page) SharedEventPage;
    shared->time_ns.store(event->recorded.load() ? event->time_ns.load() : 0);
    event->shared_fd = fd;
    event->shared = &shared->time_ns;
  }
  HandleBody body;
  body.magic = kEventMagic;
  body.version = kHandleVersion;
  body.pid = static_cast<int32_t>(::getpid());
  body.fd = event->shared_fd;
  body.size = PageSize();
  body.physical_device = Runtime::Get().physical(event->ctx->device);
  *handle = HandleOf<CUipcEventHandle>(body);
  return CUDA_SUCCESS;
}

CUresult OpenEventHandle(CUevent* event_out, CUipcEventHandle handle) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const HandleBody body = BodyOf(handle);
  if (body.magic != kEventMagic || body.version != kHandleVersion || body.size != PageSize()) return CUDA_ERROR_INVALID_VALUE;
  if (body.pid == ::getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  const int fd = OpenExported(body);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;  // gone, or another user's
  void* page = ::mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (page == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  auto event = std::make_unique<Event>();
  event->ctx = ctx;
  event->flags = CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  event->shared = &static_cast<SharedEventPage*>(page)->time_ns;
  HandleRegistry::Get().Insert(event.get(), Kind::kEvent);
  *event_out = reinterpret_cast<CUevent>(event.release());
  return CUDA_SUCCESS;
}

}  // namespace

void ForgetIpc(const Allocation& allocation) {
  if (g_ipc_entries.load() == 0) return;
  IpcTables& tables = Tables();
  std::lock_guard lock(tables.mu);
  if (auto exported = tables.exported.find(allocation.base); exported != tables.exported.end()) {
    ::close(exported->second);
    tables.exported.erase(exported);
    g_ipc_entries.fetch_sub(1);
  }
  for (auto open = tables.imports.begin(); open != tables.imports.end(); ++open) {
    if (open->second.base != allocation.base) continue;
    tables.imports.erase(open);
    g_ipc_entries.fetch_sub(1);
    break;
  }
}

void ReleaseSharedEventPage(Event& event) {
  if (event.shared == nullptr) return;
  ::munmap(reinterpret_cast<char*>(event.shared) - offsetof(SharedEventPage, time_ns), PageSize());
  if (event.shared_fd >= 0) ::close(event.shared_fd);
  event.shared = nullptr;
  event.shared_fd = -1;
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  return Guarded([&] { return sim::GetMemHandle(pHandle, dptr); });
}
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return Guarded([&] { return sim::OpenMemHandle(pdptr, handle, Flags); });
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return Guarded([&] { return sim::OpenMemHandle(pdptr, handle, Flags); });
}
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  return Guarded([&] { return sim::CloseMemHandle(dptr); });
}
CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  return Guarded([&] { return sim::GetEventHandle(pHandle, event); });
}
CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  return Guarded([&] { return sim::OpenEventHandle(phEvent, handle); });
}

}  // extern "C"
