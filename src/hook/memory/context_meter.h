// ContextMeter: how much device memory creating a context took — measured, not assumed.
//
// Contract (docs/hook-memory.md "Context overhead")
// Before() samples, the caller creates the context, After() samples again and returns the
// difference, by the first method that works:
//   1. kNvmlProcess: NVML's per-process usage of this pid on the device
//      (nvmlDeviceGetComputeRunningProcesses_v3), after minus before. Needs NVML and needs the
//      pid to appear after the creation (inside a PID namespace NVML lists host pids: it does
//      not, and the next method is used).
//   2. kMemGetInfo: the real cuMemGetInfo_v2 free bytes, read with another live context of this
//      process on the device pushed current before, and with the new one after. Noisy if other
//      processes allocate meanwhile.
//   3. kEstimate: kEstimatedContextOverhead.
// Callers serialise context operations per device (ContextAccounting), so two creations are
// never measured over each other; an allocation by another thread of this process during the
// window is counted too (over, never under).
// Slow path: makes driver and NVML calls, may allocate (the process list).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/abi/cuda_types.h"
#include "hook/interpose/real_calls.h"
#include "hook/memory/device_map.h"

namespace fgpu::hook {

enum class OverheadMethod : uint8_t { kNvmlProcess, kMemGetInfo, kEstimate };

// What an H100 context costs with CUDA 12 (and the simulator's default): used only when neither
// measurement is possible.
inline constexpr uint64_t kEstimatedContextOverhead = uint64_t{500} << 20;

// nvmlDeviceGetComputeRunningProcesses_v3 entries are read with the 24-byte nvmlProcessInfo_t
// stride; one driver (535.43.02) used 32 bytes. The buffer is sized for 32-byte entries so that
// driver cannot overrun it; at the wrong stride only entry 0 parses right, so a pid found
// elsewhere may be missed (the next method is used), never misread: see the test.
inline constexpr size_t kProcessEntryStride = 24;
inline constexpr size_t kProcessEntryRoom = 32;

// Usage of `pid` in a process list of `count` entries; false if the pid is absent or its usage
// is not available.
bool FindProcessUsage(const unsigned char* entries, unsigned int count, unsigned int pid, uint64_t* used);

struct OverheadMeasurement {
  uint64_t bytes = 0;
  OverheadMethod method = OverheadMethod::kEstimate;
};

class ContextMeter {
 public:
  struct Baseline {
    bool nvml = false;  // NVML answered (this pid absent counts as 0 bytes)
    uint64_t nvml_bytes = 0;
    bool mem_info = false;
    uint64_t free_bytes = 0;
  };

  ContextMeter(const RealCalls* calls, DeviceMap* devices) : calls_(calls), devices_(devices) {}

  // `other`: a live context of this process on `device`, or null.
  Baseline Before(CUdevice device, CUcontext other);
  OverheadMeasurement After(const Baseline& before, CUdevice device, CUcontext created);
  // What this process took (positive) or gave back (negative) on `device` since `before`, read
  // with `ctx` current; false when neither NVML nor cuMemGetInfo could measure it (no estimate:
  // a module or a limit has no typical size).
  bool Change(const Baseline& before, CUdevice device, CUcontext ctx, int64_t* taken);

 private:
  // This process's usage on the device per NVML. False: NVML unusable. *found: pid listed.
  bool NvmlUsage(CUdevice device, uint64_t* bytes, bool* found);
  // The real free bytes with `ctx` current. False: not measurable.
  bool FreeWith(CUcontext ctx, uint64_t* free_bytes);
  bool NvmlReady();

  const RealCalls* calls_;
  DeviceMap* devices_;
  std::atomic<int> nvml_state_{0};  // 0 not tried, 1 ready, 2 unavailable
};

}  // namespace fgpu::hook
