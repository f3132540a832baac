// What the NVML entry points need to answer for a MIG device handle (one per compute
// instance): the instance as the shared state has it, its name and UUID. Implemented in
// entry_mig.cc.
#pragma once

#include <string>

#include "core/abi/nvml_types.h"
#include "sim/nvml/library.h"
#include "sim/state/mig_state.h"

namespace fgpu::sim::nvml {

struct MigDeviceView {
  MigRef ref;
  const mig::Profile* gi_profile = nullptr;
  GpuInstanceState gi;
  ComputeInstanceState ci;
  std::string name;  // "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
  std::string uuid;  // "MIG-..."
};

// NVML_SUCCESS and `view` filled when `handle` is a MIG device handle whose compute instance
// exists; NVML_ERROR_INVALID_ARGUMENT otherwise.
nvmlReturn_t ViewMigDevice(Session& session, nvmlDevice_t handle, MigDeviceView* view);

// Whether the parent GPU `device` is in MIG mode (utilization queries are not supported then).
bool MigEnabled(Session& session, int device);

}  // namespace fgpu::sim::nvml
