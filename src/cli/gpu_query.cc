#include "cli/gpu_query.h"

#include <dlfcn.h>

#include <cctype>

#include "core/abi/nvml_types.h"

namespace fgpu::cli {
namespace {

// The handful of NVML entry points `fgpu run` needs, resolved from one dlopen handle.
struct Nvml {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;

  template <typename Fn>
  bool Resolve(Fn* out, const char* symbol) {
    *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
    return *out != nullptr;
  }
  bool Load() {
    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    return handle != nullptr && Resolve(&init, "nvmlInit_v2") && Resolve(&shutdown, "nvmlShutdown") &&
           Resolve(&by_index, "nvmlDeviceGetHandleByIndex_v2") && Resolve(&by_uuid, "nvmlDeviceGetHandleByUUID") &&
           Resolve(&uuid, "nvmlDeviceGetUUID") && Resolve(&name, "nvmlDeviceGetName") &&
           Resolve(&index, "nvmlDeviceGetIndex") && Resolve(&memory, "nvmlDeviceGetMemoryInfo");
  }
};

bool IsIndex(const std::string& text) {
  if (text.empty() || text.size() > 4) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

Result<GpuInfo> QueryGpu(const std::string& selector) {
  Nvml nvml;
  if (!nvml.Load()) {
    return Status::Unavailable(std::string("cannot load NVML (libnvidia-ml.so.1): ") +
                               (dlerror() ? "symbol or library missing" : "not found") +
                               "; on a machine without a GPU run under `fgpu sim run --`");
  }
  if (nvml.init() != NVML_SUCCESS) return Status::Unavailable("NVML failed to initialise");
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t found = IsIndex(selector) ? nvml.by_index(static_cast<unsigned>(std::stoi(selector)), &device)
                                               : nvml.by_uuid(selector.c_str(), &device);
  if (found != NVML_SUCCESS) {
    nvml.shutdown();
    return Status::NotFound("no GPU '" + selector + "' (give an NVML index such as 0, or a UUID GPU-...)");
  }
  GpuInfo info;
  char text[96] = {};
  unsigned index = 0;
  nvmlMemory_t memory{};
  if (nvml.uuid(device, text, sizeof(text)) != NVML_SUCCESS || nvml.index(device, &index) != NVML_SUCCESS ||
      nvml.memory(device, &memory) != NVML_SUCCESS) {
    nvml.shutdown();
    return Status::Unavailable("NVML could not describe GPU '" + selector + "'");
  }
  info.uuid = text;
  info.nvml_index = static_cast<int>(index);
  info.total_bytes = memory.total;
  if (nvml.name(device, text, sizeof(text)) == NVML_SUCCESS) info.name = text;
  nvml.shutdown();
  return info;
}

}  // namespace fgpu::cli
