#include "hook/memory/context_meter.h"

#include <unistd.h>

#include <cstring>
#include <vector>

namespace fgpu::hook {
namespace {

constexpr unsigned int kInitialProcessRoom = 64;
constexpr int kListAttempts = 3;  // the list can grow between the sizing answer and the retry

}  // namespace

bool FindProcessUsage(const unsigned char* entries, unsigned int count, unsigned int pid, uint64_t* used) {
  for (unsigned int i = 0; i < count; ++i) {
    const unsigned char* entry = entries + size_t{i} * kProcessEntryStride;
    unsigned int entry_pid = 0;
    unsigned long long entry_used = 0;
    std::memcpy(&entry_pid, entry + offsetof(nvmlProcessInfo_t, pid), sizeof(entry_pid));
    std::memcpy(&entry_used, entry + offsetof(nvmlProcessInfo_t, usedGpuMemory), sizeof(entry_used));
    if (entry_pid != pid) continue;
    if (entry_used == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) return false;
    *used = entry_used;
    return true;
  }
  return false;
}

// nvmlInit_v2 once, never shut down: NVML counts inits, so the application's own nvmlShutdown
// still balances its own nvmlInit.
bool ContextMeter::NvmlReady() {
  int state = nvml_state_.load(std::memory_order_acquire);
  if (state == 0) {
    const bool ok = calls_->nvml_init != nullptr && calls_->nvml_get_handle_by_uuid != nullptr &&
                    calls_->nvml_compute_processes != nullptr && calls_->nvml_init() == NVML_SUCCESS;
    state = ok ? 1 : 2;
    nvml_state_.store(state, std::memory_order_release);
  }
  return state == 1;
}

bool ContextMeter::NvmlUsage(CUdevice device, uint64_t* bytes, bool* found) {
  *bytes = 0;
  *found = false;
  if (!NvmlReady()) return false;
  CudaDeviceFacts facts;
  if (!devices_->Cuda(device, &facts)) return false;
  nvmlDevice_t handle = nullptr;
  if (calls_->nvml_get_handle_by_uuid(facts.uuid, &handle) != NVML_SUCCESS) return false;
  unsigned int room = kInitialProcessRoom;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    std::vector<unsigned char> buffer;
    try {
      buffer.assign(size_t{room} * kProcessEntryRoom, 0xFF);
    } catch (...) {
      return false;
    }
    unsigned int count = room;
    const nvmlReturn_t rc =
        calls_->nvml_compute_processes(handle, &count, reinterpret_cast<nvmlProcessInfo_t*>(buffer.data()));
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      room = count + 8;
      continue;
    }
    if (rc != NVML_SUCCESS || count > room) return false;
    *found = FindProcessUsage(buffer.data(), count, static_cast<unsigned int>(getpid()), bytes);
    return true;
  }
  return false;
}

bool ContextMeter::FreeWith(CUcontext ctx, uint64_t* free_bytes) {
  if (ctx == nullptr || calls_->mem_get_info == nullptr || calls_->ctx_push_current == nullptr ||
      calls_->ctx_pop_current == nullptr) {
    return false;
  }
  if (calls_->ctx_push_current(ctx) != CUDA_SUCCESS) return false;
  size_t free = 0;
  size_t total = 0;
  const bool ok = calls_->mem_get_info(&free, &total) == CUDA_SUCCESS;
  CUcontext popped = nullptr;
  calls_->ctx_pop_current(&popped);
  *free_bytes = free;
  return ok;
}

ContextMeter::Baseline ContextMeter::Before(CUdevice device, CUcontext other) {
  Baseline before;
  bool found = false;
  before.nvml = NvmlUsage(device, &before.nvml_bytes, &found);
  before.mem_info = FreeWith(other, &before.free_bytes);
  return before;
}

bool ContextMeter::Change(const Baseline& before, CUdevice device, CUcontext ctx, int64_t* taken) {
  if (before.nvml) {
    uint64_t after = 0;
    bool found = false;
    if (NvmlUsage(device, &after, &found) && found) {
      *taken = static_cast<int64_t>(after) - static_cast<int64_t>(before.nvml_bytes);
      return true;
    }
  }
  if (before.mem_info) {
    uint64_t free_after = 0;
    if (FreeWith(ctx, &free_after)) {
      *taken = static_cast<int64_t>(before.free_bytes) - static_cast<int64_t>(free_after);
      return true;
    }
  }
  return false;
}

OverheadMeasurement ContextMeter::After(const Baseline& before, CUdevice device, CUcontext created) {
  if (before.nvml) {
    uint64_t after = 0;
    bool found = false;
    if (NvmlUsage(device, &after, &found) && found) {
      return {after > before.nvml_bytes ? after - before.nvml_bytes : 0, OverheadMethod::kNvmlProcess};
    }
  }
  if (before.mem_info) {
    uint64_t free_after = 0;
    if (FreeWith(created, &free_after)) {
      return {before.free_bytes > free_after ? before.free_bytes - free_after : 0,
              OverheadMethod::kMemGetInfo};
    }
  }
  return {kEstimatedContextOverhead, OverheadMethod::kEstimate};
}

}  // namespace fgpu::hook
