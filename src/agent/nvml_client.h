// NvmlClient: the machine's GPUs as NVML reports them (the real libnvidia-ml.so.1, or the
// simulated one under `fgpu sim run`), loaded with dlopen so `fgpu agent` starts on a machine
// without a GPU library and says so.
//
// Contract: Load() fails with Unavailable (and a hint) when the library or its init fails.
// Gpus() reads every device afresh: what a field cannot be read for is left at its zero value
// (utilization is not available on every GPU or under MIG).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/isolation.h"
#include "core/mig_profiles.h"
#include "core/status.h"

namespace fgpu::agent {

struct GpuState {
  int index = 0;      // NVML index
  std::string uuid;   // "GPU-..."
  std::string name;
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  int utilization_pct = -1;  // -1: not reported
  // What a scheduler selects GPUs by (the Kubernetes plugin's device attributes); empty or -1
  // where this NVML does not say.
  std::string compute_capability{};  // "9.0"
  std::string driver_version{};      // the system's, "550.54.15"
  bool mig_capable = false;
  int minor = -1;  // /dev/nvidia<minor>
  // How the agent uses it (its configuration, not NVML's): a GPU's class; a MIG instance is a
  // placement target of its own, carved from `parent_uuid` (mig_setup.h).
  IsolationClass isolation = IsolationClass::kShared;
  std::string parent_uuid{};  // a MIG instance's GPU ("" for a whole GPU)
  std::string mig_profile{};  // a MIG instance's profile, "3g.40gb"
  int mig_start = -1;         // a MIG instance's first memory slice
  std::string mig_note{};     // a MIG GPU: why its configured geometry is not (all) applied
  bool mig_dynamic = false;   // a MIG GPU whose instances are made per request (config "mig": "dynamic")
};

// One GPU instance of a GPU in MIG mode, with the compute instance the agent gives it (all of
// its compute slices): what a slice inside it is placed on.
struct MigInstance {
  uint32_t gpu_instance_id = 0;
  uint32_t profile_id = 0;  // nvmlGpuInstanceProfileInfo_t.id ("3g.40gb" is 9)
  int start = 0;            // first memory slice
  int size = 0;             // memory slices
  std::string uuid;         // "MIG-..." of its first compute instance; "" with none
  std::string name;         // NVML's, "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
};

struct MigMode {
  bool current = false;
  bool pending = false;
};

struct GpuProcess {
  int pid = 0;
  uint64_t used_bytes = 0;  // NVML's per-process device memory
};

// How busy a process kept the GPU's SMs, as the driver measured it (not as anyone reported it).
struct ProcessBusy {
  int pid = 0;
  unsigned sm_percent = 0;  // of the whole GPU, averaged over the samples read
};

class NvmlClient {
 public:
  static Result<std::shared_ptr<NvmlClient>> Load();
  ~NvmlClient();
  NvmlClient(const NvmlClient&) = delete;
  NvmlClient& operator=(const NvmlClient&) = delete;

  Result<std::vector<GpuState>> Gpus() const;
  // The processes using the GPU `uuid` and their memory (nvmlDeviceGetComputeRunningProcesses_v3).
  Result<std::vector<GpuProcess>> Processes(const std::string& uuid) const;
  // Each process's SM utilization over the samples newer than `since_us` (CPU time, µs; 0: the
  // driver's last period), averaged per process (nvmlDeviceGetProcessUtilization); `*newest_us`
  // gets the newest sample's time, for the next call. Unavailable where the driver does not
  // report it (MIG, some GPUs).
  Result<std::vector<ProcessBusy>> ProcessUtilization(const std::string& uuid, uint64_t since_us,
                                                      uint64_t* newest_us) const;

  // MIG (nvml_client_mig.cc). Changes need root (PermissionDenied otherwise, as NVML says);
  // Unavailable where this NVML or GPU has no MIG.
  Result<MigMode> GetMigMode(const std::string& uuid) const;
  // Turns MIG mode on: true when it is on now, false when the driver holds it pending (the GPU
  // is in use, or needs a reset).
  Result<bool> EnableMig(const std::string& uuid) const;
  // The GPU instances, by start, each with its first compute instance's MIG device.
  Result<std::vector<MigInstance>> MigInstances(const std::string& uuid) const;
  // A GPU instance of profile `wanted` at memory slice `start`, and one compute instance over all
  // its compute slices; if the compute instance fails the GPU instance goes too.
  Status CreateMigInstance(const std::string& uuid, const mig::Profile& wanted, int start) const;
  // The GPU instance `gpu_instance_id`, its compute instances first.
  Status DestroyMigInstance(const std::string& uuid, uint32_t gpu_instance_id) const;

 // The resolved entry points (nvml_api.h: private to nvml_client*.cc).
  struct Api;

 private:
  explicit NvmlClient(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace fgpu::agent
