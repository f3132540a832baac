#include "agent/nvml_client.h"

#include <dlfcn.h>

#include <algorithm>

#include "agent/nvml_api.h"

namespace fgpu::agent {


Result<std::shared_ptr<NvmlClient>> NvmlClient::Load() {
  auto api = std::make_unique<Api>();
  api->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->handle == nullptr) {
    return Status::Unavailable("cannot load NVML (libnvidia-ml.so.1); on a machine without a GPU run the agent "
                               "under `fgpu sim run --`");
  }
  const bool resolved = api->Resolve(&api->init, "nvmlInit_v2") && api->Resolve(&api->shutdown, "nvmlShutdown") &&
                        api->Resolve(&api->count, "nvmlDeviceGetCount_v2") &&
                        api->Resolve(&api->by_index, "nvmlDeviceGetHandleByIndex_v2") &&
                        api->Resolve(&api->uuid, "nvmlDeviceGetUUID") && api->Resolve(&api->name, "nvmlDeviceGetName") &&
                        api->Resolve(&api->memory, "nvmlDeviceGetMemoryInfo") &&
                        api->Resolve(&api->utilization, "nvmlDeviceGetUtilizationRates", /*required=*/false) &&
                        api->Resolve(&api->by_uuid, "nvmlDeviceGetHandleByUUID") &&
                        api->Resolve(&api->processes, "nvmlDeviceGetComputeRunningProcesses_v3", /*required=*/false) &&
                        api->Resolve(&api->process_utilization, "nvmlDeviceGetProcessUtilization", /*required=*/false) &&
                        api->Resolve(&api->compute_capability, "nvmlDeviceGetCudaComputeCapability", false) &&
                        api->Resolve(&api->mig_mode, "nvmlDeviceGetMigMode", false) &&
                        api->Resolve(&api->minor, "nvmlDeviceGetMinorNumber", false) &&
                        api->Resolve(&api->driver_version, "nvmlSystemGetDriverVersion", false);
  if (!resolved) {
    dlclose(api->handle);
    return Status::Unavailable("libnvidia-ml.so.1 lacks an entry point the agent needs");
  }
  api->ResolveMig();
  if (api->init() != NVML_SUCCESS) {
    dlclose(api->handle);
    return Status::Unavailable("NVML failed to initialise");
  }
  return std::shared_ptr<NvmlClient>(new NvmlClient(std::move(api)));
}

NvmlClient::NvmlClient(std::unique_ptr<Api> api) : api_(std::move(api)) {}

NvmlClient::~NvmlClient() {
  api_->shutdown();
  // The library stays loaded: NVML keeps threads of its own in some versions.
}

Result<std::vector<GpuState>> NvmlClient::Gpus() const {
  unsigned count = 0;
  if (api_->count(&count) != NVML_SUCCESS) return Status::Unavailable("NVML cannot count the GPUs");
  std::vector<GpuState> gpus;
  char driver_version[96] = {};
  if (api_->driver_version != nullptr && api_->driver_version(driver_version, sizeof(driver_version)) != NVML_SUCCESS) {
    driver_version[0] = '\0';
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    char text[96] = {};
    if (api_->by_index(i, &device) != NVML_SUCCESS || api_->uuid(device, text, sizeof(text)) != NVML_SUCCESS) {
      continue;  // a GPU NVML cannot name is not one the agent can place on
    }
    GpuState gpu;
    gpu.index = static_cast<int>(i);
    gpu.uuid = text;
    if (api_->name(device, text, sizeof(text)) == NVML_SUCCESS) gpu.name = text;
    nvmlMemory_t memory{};
    if (api_->memory(device, &memory) == NVML_SUCCESS) {
      gpu.memory_total = memory.total;
      gpu.memory_used = memory.used;
    }
    nvmlUtilization_t utilization{};
    if (api_->utilization != nullptr && api_->utilization(device, &utilization) == NVML_SUCCESS) {
      gpu.utilization_pct = static_cast<int>(utilization.gpu);
    }
    gpu.driver_version = driver_version;
    int major = 0, minor = 0;
    if (api_->compute_capability != nullptr && api_->compute_capability(device, &major, &minor) == NVML_SUCCESS) {
      gpu.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    }
    unsigned current = 0, pending = 0;
    // Supported (any mode) means MIG capable; NOT_SUPPORTED means it is not.
    gpu.mig_capable = api_->mig_mode != nullptr && api_->mig_mode(device, &current, &pending) == NVML_SUCCESS;
    unsigned minor_number = 0;
    if (api_->minor != nullptr && api_->minor(device, &minor_number) == NVML_SUCCESS) {
      gpu.minor = static_cast<int>(minor_number);
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

Result<std::vector<GpuProcess>> NvmlClient::Processes(const std::string& uuid) const {
  if (api_->processes == nullptr) return Status::Unavailable("this NVML cannot list a GPU's processes");
  nvmlDevice_t device = nullptr;
  if (api_->by_uuid(uuid.c_str(), &device) != NVML_SUCCESS) return Status::NotFound("NVML does not know " + uuid);
  unsigned room = 64;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::vector<nvmlProcessInfo_t> entries(room);
    unsigned count = room;
    const nvmlReturn_t rc = api_->processes(device, &count, entries.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      room = count + 16;
      continue;
    }
    if (rc != NVML_SUCCESS || count > room) return Status::Unavailable("NVML could not list the processes of " + uuid);
    std::vector<GpuProcess> processes;
    for (unsigned i = 0; i < count; ++i) {
      const bool known = entries[i].usedGpuMemory != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE);
      processes.push_back({static_cast<int>(entries[i].pid), known ? entries[i].usedGpuMemory : 0});
    }
    return processes;
  }
  return Status::Unavailable("the process list of " + uuid + " keeps growing");
}

Result<std::vector<ProcessBusy>> NvmlClient::ProcessUtilization(const std::string& uuid, uint64_t since_us,
                                                                uint64_t* newest_us) const {
  if (api_->process_utilization == nullptr) return Status::Unavailable("this NVML reports no per-process utilization");
  nvmlDevice_t device = nullptr;
  if (api_->by_uuid(uuid.c_str(), &device) != NVML_SUCCESS) return Status::NotFound("NVML does not know " + uuid);
  unsigned count = 0;
  nvmlReturn_t rc = api_->process_utilization(device, nullptr, &count, since_us);
  std::vector<nvmlProcessUtilizationSample_t> samples;
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    count += 16;  // room for processes that appear between the two calls
    samples.resize(count);
    rc = api_->process_utilization(device, samples.data(), &count, since_us);
  }
  if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && count == 0)) return std::vector<ProcessBusy>();
  if (rc != NVML_SUCCESS || count > samples.size()) {
    return Status::Unavailable("NVML could not report the per-process utilization of " + uuid);
  }
  std::vector<std::pair<uint64_t, unsigned>> sums;  // pid → (sum, samples), in `pids` order
  std::vector<int> pids;
  for (unsigned i = 0; i < count; ++i) {
    const nvmlProcessUtilizationSample_t& sample = samples[i];
    *newest_us = std::max<uint64_t>(*newest_us, sample.timeStamp);
    const auto at = std::find(pids.begin(), pids.end(), static_cast<int>(sample.pid));
    if (at == pids.end()) {
      pids.push_back(static_cast<int>(sample.pid));
      sums.emplace_back(std::min(sample.smUtil, 100u), 1);
    } else {
      auto& [sum, n] = sums[static_cast<std::size_t>(at - pids.begin())];
      sum += std::min(sample.smUtil, 100u);
      ++n;
    }
  }
  std::vector<ProcessBusy> busy;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    busy.push_back({pids[i], static_cast<unsigned>(sums[i].first / sums[i].second)});
  }
  return busy;
}

}  // namespace fgpu::agent
