// The NVML entry points NvmlClient uses, resolved with dlsym (private to nvml_client*.cc).
#pragma once

#include <dlfcn.h>

#include "agent/nvml_client.h"
#include "core/abi/nvml_types.h"

namespace fgpu::agent {

struct NvmlClient::Api {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned*,
                                      unsigned long long) = nullptr;
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  // MIG (nvml_client_mig.cc): optional, absent from NVMLs older than MIG.
  nvmlReturn_t (*set_mig_mode)(nvmlDevice_t, unsigned, nvmlReturn_t*) = nullptr;
  nvmlReturn_t (*gi_profile_info)(nvmlDevice_t, unsigned, nvmlGpuInstanceProfileInfo_t*) = nullptr;
  nvmlReturn_t (*gpu_instances)(nvmlDevice_t, unsigned, nvmlGpuInstance_t*, unsigned*) = nullptr;
  nvmlReturn_t (*gpu_instance_by_id)(nvmlDevice_t, unsigned, nvmlGpuInstance_t*) = nullptr;
  nvmlReturn_t (*gpu_instance_info)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*) = nullptr;
  nvmlReturn_t (*create_gpu_instance)(nvmlDevice_t, unsigned, const nvmlGpuInstancePlacement_t*,
                                      nvmlGpuInstance_t*) = nullptr;
  nvmlReturn_t (*destroy_gpu_instance)(nvmlGpuInstance_t) = nullptr;
  nvmlReturn_t (*ci_profile_info)(nvmlGpuInstance_t, unsigned, unsigned,
                                  nvmlComputeInstanceProfileInfo_t*) = nullptr;
  nvmlReturn_t (*create_compute_instance)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t*) = nullptr;
  nvmlReturn_t (*compute_instances)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t*, unsigned*) = nullptr;
  nvmlReturn_t (*destroy_compute_instance)(nvmlComputeInstance_t) = nullptr;
  nvmlReturn_t (*max_mig_devices)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*mig_device_by_index)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*mig_gpu_instance_id)(nvmlDevice_t, unsigned*) = nullptr;

  // Resolves the optional MIG entry points (a missing one leaves MIG unavailable).
  void ResolveMig();
  bool HasMig() const;

  template <typename Fn>
  bool Resolve(Fn* slot, const char* symbol, bool required = true) {
    *slot = reinterpret_cast<Fn>(dlsym(handle, symbol));
    return *slot != nullptr || !required;
  }
};

}  // namespace fgpu::agent
