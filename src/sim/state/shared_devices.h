// The simulated GPUs' shared state: one segment per device configuration, mapped by
// every process that loads the simulated libcuda.so.1 or libnvidia-ml.so.1.
//
// Contract
// - One segment (POSIX shared memory, name from SegmentName()) holds, per device, the
//   memory charged by each live process and one kernel timeline. Its layout is
//   versioned (docs/sim-segment.md); a segment of another version or another device
//   configuration is refused with a clear Status, never reinterpreted.
// - A process may die at any instruction. Updates are made under a process-shared
//   robust mutex, and each update is a single store of a consistent value, so a dead
//   lock owner leaves state that the next owner can keep. A dead process's charges are
//   released by whoever next notices (Attach, a failing TryCharge, Memory, Processes):
//   a slot is dead when its pid is gone or its pid now belongs to a process with
//   another start time (PID reuse).
// - Thread-safe: every method may be called from any thread of any process.
// - Times are CLOCK_MONOTONIC nanoseconds (NowNs()), shared by all processes on a host.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/state/mig_state.h"

namespace fgpu::sim {

// Limits of the segment layout (docs/sim-segment.md): devices per configuration and
// processes attached at once.
inline constexpr int kMaxSimDevices = 16;
inline constexpr int kMaxProcessSlots = 128;
// Device memory above this is refused: it keeps the sum of 128 slots' charges far from
// uint64 overflow, and no GPU comes near it.
inline constexpr uint64_t kMaxDeviceMemory = 1ull << 50;  // 1 PiB

struct DeviceSpec {
  std::string name = "NVIDIA H100 80GB HBM3";
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; derived from the index if empty
  std::string pci_bus_id;  // "00000000:XX:00.0"; derived from the index if empty
  uint64_t total_bytes = 81559ull << 20;
  int sm_count = 132;
  int cc_major = 9;
  int cc_minor = 0;
  uint64_t granularity = 2ull << 20;        // allocation rounding, also VMM granularity
  uint64_t context_overhead = 500ull << 20;  // device memory charged per context
  // Non-empty: the device starts in MIG mode with these GPU instances (profile names, placed in
  // order as the driver places them) and one compute instance spanning each.
  std::vector<std::string> mig;
};

struct SimConfig {
  std::vector<DeviceSpec> devices;  // never empty after parsing
  // Kernel durations for functions looked up by name: the time one wave of the kernel
  // (a grid of up to sm_count blocks) occupies the device.
  std::map<std::string, uint64_t> kernel_wave_ns;
  uint64_t default_kernel_wave_ns = 10'000;
  // NVML's utilization sample period (real GPUs: 1/6 s to 1 s).
  uint64_t utilization_period_ns = 1'000'000'000;
};

// Parses the JSON device configuration (format in docs/sim-config.md). Unknown keys,
// wrong types, zero or overflowing sizes, duplicate UUIDs -> InvalidArgument naming the key.
Result<SimConfig> ParseSimConfig(const std::string& json_text);
// Reads and parses a file; a missing or unreadable file -> NotFound / Unavailable with the path.
Result<SimConfig> LoadSimConfig(const std::string& path);
// One NVIDIA H100 80GB HBM3 with the DeviceSpec defaults.
SimConfig DefaultSimConfig();
// Stable digest of everything in the config that the segment's meaning depends on.
uint64_t ConfigFingerprint(const SimConfig& config);
// Checks a config built in code against the rules ParseSimConfig enforces (device
// count, sizes, formats, duplicates). Errors name the field as "devices[i].field".
// A config from ParseSimConfig always passes.
Status ValidateSimConfig(const SimConfig& config);

struct MemoryInfo {
  uint64_t total = 0;
  uint64_t used = 0;
  uint64_t free = 0;
};

struct ProcessMemory {
  int32_t pid = 0;
  uint64_t used_bytes = 0;
};

struct KernelSlot {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct ProcessUtilization {
  int32_t pid = 0;
  uint32_t sm_percent = 0;     // share of the window this process's kernels occupied the device
  uint64_t last_seen_ns = 0;   // end of the last kernel of this process inside the window
};

class SharedDevices {
 public:
  // Maps (creating if absent) the segment `segment_name` (a POSIX shm name, "/..." form)
  // and registers the calling process. Errors: Unavailable (cannot create/map),
  // VersionMismatch (segment written by another layout version), InvalidArgument
  // (segment made for another configuration), Corrupt (header fails validation).
  static Result<std::unique_ptr<SharedDevices>> Attach(const SimConfig& config,
                                                       const std::string& segment_name);
  // Default segment name for a config: "/fgpu-sim-<uid>-<fingerprint hex>".
  static std::string DefaultSegmentName(const SimConfig& config);
  // Removes a segment by name (tests, `fgpu sim reset`). Missing is not an error.
  static Status Remove(const std::string& segment_name);
  static uint64_t NowNs();

  ~SharedDevices();  // unmaps; this process's charges remain until it exits and is reaped
  SharedDevices(const SharedDevices&) = delete;
  SharedDevices& operator=(const SharedDevices&) = delete;

  int device_count() const;
  // An index outside [0, device_count()) yields a spec with an empty name and zero sizes.
  const DeviceSpec& spec(int device) const;
  const SimConfig& config() const;
  const std::string& segment_name() const;

  // Charges `bytes` to this process on `device` if the device has them free (reaping
  // dead processes before giving up). False means out of memory; nothing changed.
  bool TryCharge(int device, uint64_t bytes);
  // Returns a charge made by this process. Crediting more than charged clamps at zero.
  void Credit(int device, uint64_t bytes);
  // This process's current charge on `device`.
  uint64_t ChargedByThisProcess(int device) const;
  // Device totals after reaping dead processes.
  MemoryInfo Memory(int device);
  // Live processes with a non-zero charge on `device`, after reaping.
  std::vector<ProcessMemory> Processes(int device);
  // Releases the charges of every dead process now. Returns how many were reaped.
  int ReapDeadProcesses();

  // Reserves the next free interval of `duration_ns` on the device's single timeline,
  // starting no earlier than max(now, not_before_ns). Kernels of all processes
  // serialize here (time-slicing, as a GPU without MPS).
  KernelSlot EnqueueKernel(int device, uint64_t not_before_ns, uint64_t duration_ns);
  // Percentage (0-100) of [now - period, now] during which a kernel occupied the device.
  // Periods longer than 10 s are shortened to 10 s (the history kept).
  uint32_t UtilizationPercent(int device, uint64_t period_ns);
  // Per-process occupancy over [max(since_ns, now - period), now]; processes with zero
  // busy time in that window are omitted.
  std::vector<ProcessUtilization> ProcessUtilizations(int device, uint64_t since_ns, uint64_t period_ns);

  // ---- MIG (mig_state.cc; rules in mig_state.h) ----------------------------------------
  // Every change is made under the segment mutex and published by one store, so a process
  // killed mid-change leaves the previous or the new configuration. Privilege is NVML's
  // concern, not the state's.
  // The device's MIG model, nullptr if it is not MIG capable.
  const mig::ModelInfo* MigModel(int device) const;
  // Mode and instances (empty snapshot, model == nullptr, for a device without MIG).
  MigSnapshot Mig(int device);
  // Requests MIG mode on/off (Hopper: takes effect at once when idle). kInUse: disabling with
  // GPU instances present (nothing changes), or a live process uses the device (the request
  // stays pending; a later call when idle applies it).
  MigResult SetMigMode(int device, bool enable);
  // A GPU instance of `profile_id` at memory slice `start`, or, when start < 0, at the highest
  // start where it fits (what the driver does when given no placement; cuda.md §4.4).
  MigResult CreateGpuInstance(int device, uint32_t profile_id, int start, uint32_t* gi_id);
  // kInUse while it has compute instances or a process uses it.
  MigResult DestroyGpuInstance(int device, uint32_t gi_id);
  // A compute instance of NVML CI profile `profile` at compute slice `start` (< 0: first fit).
  MigResult CreateComputeInstance(int device, uint32_t gi_id, uint32_t profile, int start, uint32_t* ci_id);
  // kInUse while a process uses it.
  MigResult DestroyComputeInstance(int device, uint32_t gi_id, uint32_t ci_id);
  // Binds this process to compute instance (gi_id, ci_id) of `device`: from now on its charges
  // on `device` count against that GPU instance's memory. False if the instance does not exist
  // or this process has no slot.
  bool BindMigInstance(int device, uint32_t gi_id, uint32_t ci_id);
  // Memory of GPU instance `gi_id`: its profile's memory and the charges of the processes
  // bound to it. All zero if it does not exist.
  MemoryInfo GpuInstanceMemory(int device, uint32_t gi_id);

  // Test hooks (LevelDB's TEST_ convention); production code never calls them.
  // Overwrites slot `index` (not this process's own) with a live entry for `pid` /
  // `start_time` charging `charged_bytes` on `device`, as a process that died or whose pid
  // was reused would leave it. False if the index or device is out of range.
  bool TEST_WriteSlot(int index, int32_t pid, uint64_t start_time, int device, uint64_t charged_bytes);
  // Locks the segment's mutex and returns without unlocking, so the caller can die
  // holding it.
  void TEST_LockAndAbandon();
  // The slot this process holds.
  int TEST_OwnSlot() const;

 private:
  struct Impl;
  explicit SharedDevices(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Environment: FGPU_SIM_CONFIG (path to the JSON config; unset = DefaultSimConfig())
// and FGPU_SIM_SEGMENT (segment name; unset = DefaultSegmentName(config)).
inline constexpr const char* kConfigEnv = "FGPU_SIM_CONFIG";
inline constexpr const char* kSegmentEnv = "FGPU_SIM_SEGMENT";

// Loads the config named by the environment and attaches its segment: the one
// entry point both simulated libraries use.
Result<std::unique_ptr<SharedDevices>> AttachFromEnvironment();

}  // namespace fgpu::sim
