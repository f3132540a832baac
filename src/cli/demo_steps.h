// The five steps of `fgpu demo`. Each runs fgpu-probe processes on the simulated GPU,
// prints its part of the narrative with the numbers the probes reported, and returns an
// error when a probe fails or the device does not behave as one shared physical GPU would
// (a process missing from NVML's list, a fill that does not end in out-of-memory or does not
// get the memory exited processes gave back, two processes' kernels running longer in total
// than the time they ran in).
#pragma once

#include <cstdint>
#include <ostream>

#include "cli/probe_client.h"
#include "cli/sim_target.h"
#include "core/status.h"

namespace fgpu::cli {

struct DemoContext {
  ProbeClient probe;
  SimTarget target;  // its segment is the demo's private one
  std::ostream* out;
};

// What step 1 learned about device 0 and later steps size themselves by.
struct DeviceFacts {
  uint64_t total_mem = 0;
  uint64_t idle_free = 0;  // cuMemGetInfo of a process alone on the device
};

Result<DeviceFacts> ShowDevice(const DemoContext& demo);
Status ShareMemory(const DemoContext& demo, const DeviceFacts& device);
Status FillToOutOfMemory(const DemoContext& demo, const DeviceFacts& device);
Status ShareCompute(const DemoContext& demo);
// Step 5 (demo_slice_step.cc): `fgpu run` enforcing a 10 GiB cap on the same probe.
Status ShowSlice(const DemoContext& demo);

}  // namespace fgpu::cli
