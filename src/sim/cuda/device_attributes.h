// Device attribute values of a simulated device: an H100-class part whose SM count,
// compute capability and PCI location come from its DeviceSpec.
#pragma once

#include "core/abi/cuda_types.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::cuda {

// CUDA_ERROR_INVALID_VALUE for an attribute id the 13.0 driver does not define;
// otherwise *value is set (0 for capabilities the simulator does not model).
CUresult DeviceAttribute(const DeviceSpec& spec, int device, CUdevice_attribute attribute, int* value);

// PCI bus/device numbers parsed from "DDDDDDDD:BB:DD.F".
struct PciLocation {
  int domain = 0;
  int bus = 0;
  int device = 0;
};
PciLocation ParsePciBusId(const std::string& id);

}  // namespace fgpu::sim::cuda
