#include "probe/nvml_query.h"

#include <dlfcn.h>

#include <vector>

#include "core/abi/nvml_api.h"

namespace fgpu::probe {

namespace {

constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
constexpr unsigned kInitialProcessCapacity = 64;
constexpr int kProcessListAttempts = 4;  // the list can grow between two calls

struct Nvml {
  decltype(&::nvmlInit_v2) init = nullptr;
  decltype(&::nvmlShutdown) shutdown = nullptr;
  decltype(&::nvmlErrorString) error_string = nullptr;
  decltype(&::nvmlDeviceGetHandleByUUID) handle_by_uuid = nullptr;
  decltype(&::nvmlDeviceGetMemoryInfo) memory_info = nullptr;
  decltype(&::nvmlDeviceGetComputeRunningProcesses_v3) compute_processes = nullptr;
  decltype(&::nvmlDeviceGetUtilizationRates) utilization = nullptr;

  std::string Describe(const char* call, nvmlReturn_t rc) const {
    const char* text = error_string != nullptr ? error_string(rc) : nullptr;
    return std::string(call) + ": " + (text != nullptr ? text : "error " + std::to_string(rc));
  }
};

template <typename Fn>
bool Resolve(void* library, const char* name, Fn* out, std::string* error) {
  dlerror();
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  if (*out != nullptr) return true;
  const char* text = dlerror();
  *error = std::string("dlsym ") + name + ": " + (text != nullptr ? text : "not found");
  return false;
}

bool Load(Nvml* nvml, std::string* error) {
  void* library = dlopen(kNvmlLibrary, RTLD_NOW);
  if (library == nullptr) {
    const char* text = dlerror();
    *error = text != nullptr ? text : "cannot load libnvidia-ml.so.1";
    return false;
  }
  // nvmlErrorString first, so later failures can be described.
  return Resolve(library, "nvmlErrorString", &nvml->error_string, error) &&
         Resolve(library, "nvmlInit_v2", &nvml->init, error) &&
         Resolve(library, "nvmlShutdown", &nvml->shutdown, error) &&
         Resolve(library, "nvmlDeviceGetHandleByUUID", &nvml->handle_by_uuid, error) &&
         Resolve(library, "nvmlDeviceGetMemoryInfo", &nvml->memory_info, error) &&
         Resolve(library, "nvmlDeviceGetComputeRunningProcesses_v3", &nvml->compute_processes, error) &&
         Resolve(library, "nvmlDeviceGetUtilizationRates", &nvml->utilization, error);
}

void AppendProcesses(const Nvml& nvml, nvmlDevice_t device, JsonLine* line) {
  std::vector<nvmlProcessInfo_t> infos(kInitialProcessCapacity);
  nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
  unsigned count = 0;
  for (int attempt = 0; attempt < kProcessListAttempts && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    count = static_cast<unsigned>(infos.size());
    rc = nvml.compute_processes(device, &count, infos.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) infos.resize(count + kInitialProcessCapacity);
  }
  if (rc != NVML_SUCCESS) {
    line->Null("processes").Str("processes_error", nvml.Describe("nvmlDeviceGetComputeRunningProcesses_v3", rc));
    return;
  }
  line->BeginArray("processes");
  for (unsigned i = 0; i < count && i < infos.size(); ++i) {
    line->BeginObject("").Uint("pid", infos[i].pid);
    if (infos[i].usedGpuMemory == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) {
      line->Null("used");
    } else {
      line->Uint("used", infos[i].usedGpuMemory);
    }
    line->EndObject();
  }
  line->EndArray();
}

}  // namespace

void AppendNvmlFacts(const std::string& uuid, JsonLine* line) {
  Nvml nvml;
  std::string error;
  line->BeginObject("nvml");
  if (!Load(&nvml, &error)) {
    line->Bool("available", false).Str("error", error).EndObject();
    return;
  }
  if (nvmlReturn_t rc = nvml.init(); rc != NVML_SUCCESS) {
    line->Bool("available", false).Str("error", nvml.Describe("nvmlInit_v2", rc)).EndObject();
    return;
  }
  nvmlDevice_t device = nullptr;
  nvmlMemory_t memory{};
  nvmlReturn_t rc = nvml.handle_by_uuid(uuid.c_str(), &device);
  const char* failed = "nvmlDeviceGetHandleByUUID";
  if (rc == NVML_SUCCESS) {
    rc = nvml.memory_info(device, &memory);
    failed = "nvmlDeviceGetMemoryInfo";
  }
  if (rc != NVML_SUCCESS) {
    line->Bool("available", false).Str("error", nvml.Describe(failed, rc));
  } else {
    line->Bool("available", true);
    line->BeginObject("memory").Uint("total", memory.total).Uint("free", memory.free).Uint("used", memory.used);
    line->EndObject();
    AppendProcesses(nvml, device, line);
    nvmlUtilization_t utilization{};
    if (nvmlReturn_t util_rc = nvml.utilization(device, &utilization); util_rc == NVML_SUCCESS) {
      line->Uint("utilization_gpu", utilization.gpu);
    } else {
      line->Null("utilization_gpu").Str("utilization_error", nvml.Describe("nvmlDeviceGetUtilizationRates", util_rc));
    }
  }
  line->EndObject();
  nvml.shutdown();
}

}  // namespace fgpu::probe
