// Exported NVML entry points: device memory and the processes using it.
//
// Memory is what the shared state has charged: used = the sum of every live process's
// charge (contexts included), free = total - used, reserved = 0 (the simulator keeps
// no driver-reserved memory). Process lists carry host pids, so a process sees the
// charges of every other process on the device, as with the real driver.
#include <cstdint>
#include <vector>

#include "core/abi/nvml_api.h"
#include "sim/nvml/library.h"
#include "sim/nvml/mig_view.h"

namespace {

using fgpu::sim::MemoryInfo;
using fgpu::sim::ProcessMemory;
using fgpu::sim::nvml::Session;
using fgpu::sim::nvml::MigDeviceView;
using fgpu::sim::nvml::ViewMigDevice;
using fgpu::sim::nvml::WithDevice;
using fgpu::sim::nvml::WithSession;

// A device's memory, or for a MIG device handle its GPU instance's (the real NVML's
// per-instance view): the instance's size and the charges of the processes using it.
nvmlReturn_t MemoryOf(Session& session, nvmlDevice_t device, MemoryInfo* info) {
  int index = 0;
  if (session.Resolve(device, &index) == NVML_SUCCESS) {
    *info = session.shared().Memory(index);
    return NVML_SUCCESS;
  }
  MigDeviceView view;
  if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
  *info = session.shared().GpuInstanceMemory(view.ref.device, view.ref.gi);
  return NVML_SUCCESS;
}

constexpr unsigned int kNoMigInstance = 0xFFFFFFFFu;

// The state never charges past the total; clamp anyway rather than wrap.
unsigned long long FreeBytes(const MemoryInfo& info) { return info.used >= info.total ? 0 : info.total - info.used; }

// infoCount: in = capacity of infos, out = entries written, or entries needed with
// NVML_ERROR_INSUFFICIENT_SIZE. infos may be NULL only with a capacity of 0 (the
// sizing call), which succeeds when there is nothing to list.
nvmlReturn_t CheckListArguments(const unsigned int* infoCount, const void* infos) {
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (infos == nullptr && *infoCount != 0) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

template <typename Info>
nvmlReturn_t ListComputeProcesses(nvmlDevice_t device, unsigned int* infoCount, Info* infos) {
  return WithDevice(device, [&](Session& session, int index) {
    if (nvmlReturn_t rc = CheckListArguments(infoCount, infos); rc != NVML_SUCCESS) return rc;
    const std::vector<ProcessMemory> processes = session.shared().Processes(index);
    const auto needed = static_cast<unsigned int>(processes.size());
    if (*infoCount < needed) {
      *infoCount = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < needed; ++i) {
      Info info{};
      info.pid = static_cast<unsigned int>(processes[i].pid);
      info.usedGpuMemory = processes[i].used_bytes;
      if constexpr (requires { info.gpuInstanceId; }) {
        info.gpuInstanceId = kNoMigInstance;
        info.computeInstanceId = kNoMigInstance;
      }
      infos[i] = info;
    }
    *infoCount = needed;
    return NVML_SUCCESS;
  });
}

// Graphics and MPS-server clients do not exist in the simulator.
nvmlReturn_t ListNoProcesses(nvmlDevice_t device, unsigned int* infoCount, const void* infos) {
  return WithDevice(device, [&](Session&, int) {
    if (nvmlReturn_t rc = CheckListArguments(infoCount, infos); rc != NVML_SUCCESS) return rc;
    *infoCount = 0;
    return NVML_SUCCESS;
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return WithSession([&](Session& session) {
    MemoryInfo info;
    if (nvmlReturn_t rc = MemoryOf(session, device, &info); rc != NVML_SUCCESS) return rc;
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = info.total;
    memory->used = info.used;
    memory->free = FreeBytes(info);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return WithSession([&](Session& session) {
    MemoryInfo info;
    if (nvmlReturn_t rc = MemoryOf(session, device, &info); rc != NVML_SUCCESS) return rc;
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->total = info.total;
    memory->reserved = 0;
    memory->used = info.used;
    memory->free = FreeBytes(info);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  return ListComputeProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return ListComputeProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return ListComputeProcesses(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                   nvmlProcessInfo_v1_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_v2_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v1_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_v2_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_t* infos) {
  return ListNoProcesses(device, infoCount, infos);
}

}  // extern "C"
