// NVML's view of one device, for `info`. NVML is optional: the probe loads
// libnvidia-ml.so.1 at run time (dlopen + dlsym, as PyTorch does), so it runs where
// only libcuda is installed.
//
// Contract
// - AppendNvmlFacts adds an object "nvml" to `line`:
//     {"available":true,"memory":{"total","free","used"},"processes":[{"pid","used"}],
//      "utilization_gpu":U}
//   or {"available":false,"error":"..."} when the library, a required symbol,
//   nvmlInit_v2, the device lookup or the memory query fails.
// - The device is found by UUID (nvmlDeviceGetHandleByUUID), never by assuming the
//   CUDA ordinal equals the NVML index (CUDA_VISIBLE_DEVICES and PCI ordering break
//   that).
// - Optional parts that fail become null with an "*_error" string beside them
//   (e.g. utilization is not supported under MIG). A process's "used" is null when
//   NVML reports NVML_VALUE_NOT_AVAILABLE.
#ifndef FGPU_PROBE_NVML_QUERY_H_
#define FGPU_PROBE_NVML_QUERY_H_

#include <string>

#include "probe/json_line.h"

namespace fgpu::probe {

void AppendNvmlFacts(const std::string& uuid, JsonLine* line);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_NVML_QUERY_H_
