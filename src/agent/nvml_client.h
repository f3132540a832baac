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

 private:
  struct Api;
  explicit NvmlClient(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace fgpu::agent
