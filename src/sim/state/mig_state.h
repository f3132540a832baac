// MIG as the simulated driver models it: the value types SharedDevices' MIG methods return
// (shared_devices.h) and the pure rules both simulated libraries share.
//
// Contract
// - A device is MIG capable iff its product name and memory map to a model of
//   core/mig_profiles.h (fgpu::mig::ModelOfProduct); the GPU-instance profiles, sizes and
//   placements come from there and nowhere else.
// - Compute instances (CIs) subdivide a GPU instance's (GI's) compute slices. A CI of `n`
//   slices may start at a multiple of n rounded up to a power of two (1c anywhere, 2c at
//   0/2/4, 3c and 4c at 0/4, 7c at 0) and must end inside the GI: the rule that reproduces
//   `nvidia-smi mig -lcipp` on A100 and H100 (derived; docs/sim.md).
// - Pure functions and plain values: thread-safe, no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mig_profiles.h"
#include "core/status.h"

namespace fgpu::sim {

// NVML's compute-instance profile constants (NVML_COMPUTE_INSTANCE_PROFILE_*), restated so the
// state library need not include the NVML ABI.
inline constexpr uint32_t kComputeProfileCount = 8;

struct ComputeInstanceState {
  uint32_t id = 0;
  uint32_t profile = 0;  // NVML_COMPUTE_INSTANCE_PROFILE_*
  int start = 0;         // compute slice, relative to its GPU instance
  int size = 0;          // compute slices
};

struct GpuInstanceState {
  uint32_t id = 0;
  uint32_t profile_id = 0;  // fgpu::mig::Profile::id
  int start = 0;            // memory slice
  int size = 0;             // memory slices
  std::vector<ComputeInstanceState> compute;  // by id

  const ComputeInstanceState* FindCompute(uint32_t ci_id) const;
};

struct MigSnapshot {
  const mig::ModelInfo* model = nullptr;  // nullptr: the device is not MIG capable
  bool enabled = false;                   // current mode
  bool pending_enabled = false;
  std::vector<GpuInstanceState> gpu_instances;  // by id

  const GpuInstanceState* FindGpu(uint32_t gi_id) const;
};

// The outcome of a MIG change, mapped 1:1 to NVML's codes by the NVML side.
enum class MigResult : uint8_t {
  kOk,
  kNotSupported,           // not MIG capable, or MIG disabled for an instance operation
  kInvalidArgument,        // unknown profile, a start the profile may not use
  kInsufficientResources,  // no room: overlap, no free slot, profile count exhausted
  kInUse,                  // processes (or instances) hold what would change
  kNotFound,               // no such instance
  kUnavailable,            // the segment's lock is unrecoverable
};

// Slices of NVML_COMPUTE_INSTANCE_PROFILE_<index>; 0 for an index the simulator does not
// model (1_SLICE_REV1, out of range).
int ComputeProfileSlices(uint32_t profile);
// Whether a CI of `slices` may start at `start` in a GI of `gi_slices` compute slices.
bool ComputeInstanceCanStartAt(int slices, int start, int gi_slices);
// SMs of a CI of `slices` in GI `gi`: all of the GI's when it takes every slice, else those of
// the model's GI profile with that many compute slices (nvidia-smi -lcip shows 1c.3g.40gb with
// a 1g's 16 SMs on H100). Derived; docs/sim.md.
int ComputeInstanceSms(const mig::ModelInfo& model, const mig::Profile& gi, int slices);

// Where the driver puts a GPU instance given no placement: the highest start that fits (that is
// what makes `-cgi 9,19,14,19` succeed and `-cgi 19,19,14,9` fail, cuda.md §4.4); -1 if none.
int DriverStart(const mig::Profile& profile, uint8_t occupied, bool media_used, int count);

// The GPU instances a configuration's "mig" list makes at start, placed in order as the driver
// places an instance given no placement (the highest start that fits); InvalidArgument naming
// the first profile the model lacks or that no longer fits.
Result<std::vector<std::pair<const mig::Profile*, int>>> PlaceMigList(const mig::ModelInfo& model,
                                                                      const std::vector<std::string>& names);
// NVML_COMPUTE_INSTANCE_PROFILE_* of a compute instance of `slices` (-1 for none).
int ComputeProfileOfSlices(int slices);

// "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": stable for (parent UUID, GI id, CI id), the
// same in every process (a digest of the three; the real driver's are assigned by the GPU).
std::string MigUuid(std::string_view parent_uuid, uint32_t gi_id, uint32_t ci_id);
// NVML's name of a MIG device: "<parent name> MIG 3g.40gb", or "... MIG 1c.3g.40gb" for a CI
// smaller than its GI.
std::string MigDeviceName(std::string_view parent_name, const mig::Profile& gi, int ci_slices);

}  // namespace fgpu::sim
