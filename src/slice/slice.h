// A slice: a share of one or more GPUs given to a workload (one or many processes).
//
// On disk / in shared memory a slice is a directory with two files:
//   limits  — written only by the slice's creator (the agent, or `fgpu run` standalone), mode
//             0644; the workload maps it read-only. Holds the slice id and, per device (by UUID),
//             the memory cap and the compute share, mode and tier. Each is an aligned word read
//             atomically on every operation, so it can change while the workload runs.
//   ledger  — written by the workload's processes through the hook (mode 0666 when the creator
//             is another user). Holds per device the bytes charged, and one slot per process
//             (pid + start time, so PID reuse cannot keep a dead process's charge alive) with its
//             own charges, split over kLanes lanes so that its threads do not serialise on a lock.
// Both files start with a magic and a format version (docs/slice-format.md); a file of another
// version, a truncated or garbage file is refused with a clear Status, never reinterpreted.
//
// Admission (Ledger::Reserve) is lock-free and crash-safe: no lock is ever held, so a process
// killed at any instruction cannot make another wait, and its charges — including one caught
// between "device counter updated" and "own slot updated" — are fully recovered by whoever
// reaps it (the next process of the slice that attaches or runs out of memory, or the agent).
// The protocol (docs/slice-format.md, version 2): a per-device 128-bit word {used, last op =
// (slot, lane, seq)} updated by one CAS, a per-lane journal {bytes, seq} written before that
// CAS, and a per-lane 128-bit {charged (signed), committed seq} that the owner or any helper
// completes idempotently. A thread runs its op on an idle lane of its process's slot, picked
// with a non-blocking try, so threads of one process do not serialise on a lock either.
//
// Thread-safety: everything may be called from any thread of any process. The Ledger's
// Reserve/Release/Cap/Used make no syscall, take no lock and allocate nothing. A thread stopped
// inside an op holds one lane only, so it never makes the other threads of its process wait; a
// thread retries (spins, then yields) only while every lane of the device is held at the moment
// it looks, i.e. more than kLanes threads of its process are in ledger ops on that device at once
// (docs/slice-format.md, "Lanes").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace fgpu::slice {

inline constexpr uint32_t kFormatVersion = 2;
inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcesses = 256;
inline constexpr int kLanes = 8;  // per slot and device: threads of a process that can run ops at once
inline constexpr size_t kUuidBytes = 48;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" + NUL, padded
inline constexpr size_t kIdBytes = 64;

// How a compute share is enforced (by a later issue): kCap = never more than the share, even on
// an idle device; kShare = at least the share under contention, idle time may be borrowed.
enum class ComputeMode : uint8_t { kCap = 0, kShare = 1 };
// Scheduling priority of the slice: a higher number is a higher priority.
enum class Tier : uint8_t { kBatch = 0, kStandard = 1, kLatency = 2 };

struct DeviceLimit {
  std::string uuid;              // NVML form, "GPU-..." (the one index space; ordinals are translated at the edges)
  uint64_t memory_cap = 0;       // bytes
  uint32_t compute_share = 100;  // percent of the device, 1..100 (enforced by a later issue)
  ComputeMode compute_mode = ComputeMode::kShare;
  Tier tier = Tier::kStandard;
};

struct SliceSpec {
  std::string id;  // [A-Za-z0-9._-]{1,63}
  std::vector<DeviceLimit> devices;  // 1..kMaxDevices, distinct UUIDs
};

struct ProcessUsage {
  int32_t pid = 0;
  uint64_t start_time = 0;
  std::vector<uint64_t> charged;  // per slice device
};

// The ledger's counters of refusals and degraded modes (docs/slice-format.md "Counters"): shared
// by every process of the slice, monotonic (they wrap, which a Prometheus counter reads as a
// reset), and kept across crashes since they live in the file.
struct LedgerCounters {
  uint64_t oom_refusals = 0;          // allocations refused with OUT_OF_MEMORY: the cap would be exceeded
  uint32_t fail_closed_refusals = 0;  // requests refused because fgpu could not know their cost
  uint32_t compute_unenforced = 0;    // (process, GPU) pairs that ran without compute enforcement
  uint32_t no_free_slot = 0;          // processes refused: all kMaxProcesses slots were held
  uint32_t pass_through = 0;          // processes that ran with FGPU_DISABLE=1 in this slice
  bool operator==(const LedgerCounters&) const = default;
};

struct UsageSnapshot {
  std::vector<uint64_t> used;  // per slice device; empty when the ledger cannot be read
  std::vector<uint64_t> caps;
  std::vector<ProcessUsage> processes;
  LedgerCounters counters;  // all 0 when `used` is empty
  std::string problem;      // why `used` is empty ("" when the ledger was read)
};

struct FileOwner;

// Creator side: makes, resizes, inspects and removes slices. Not used by the hook.
//
// The ledger belongs to the slice's workload user, who may write anything into it or truncate
// it: the admin reads it only by copying it (pread) and validating the copy, never through a
// mapping, so no ledger can crash the admin (SIGBUS) or feed it out-of-range values. Only the
// TEST_ methods and ReapDeadProcesses write to it (through a mapping: for a creator that owns
// the ledger itself, such as a private `fgpu run`; the agent never calls them).
class SliceAdmin {
 public:
  // Creates `dir` (must not exist, parent must) with both files; the ledger is `owner`'s when
  // given (slice_files.h). Invalid spec -> InvalidArgument.
  static Result<SliceAdmin> Create(const std::string& dir, const SliceSpec& spec, const FileOwner* owner = nullptr);
  // Opens an existing slice for administration: validates the limits; the ledger need only exist
  // (its content is the workload's, checked on every read).
  static Result<SliceAdmin> Open(const std::string& dir);

  SliceAdmin(SliceAdmin&&) noexcept;
  SliceAdmin& operator=(SliceAdmin&&) noexcept;
  ~SliceAdmin();

  const SliceSpec& spec() const;
  // Live resize: shrinking below usage makes new reservations fail; existing charges stay.
  Status SetMemoryCap(int device, uint64_t cap);
  // Live change of the compute fields: share 1..100, a known mode and tier, else
  // InvalidArgument (nothing changed). Two atomic stores (share, then mode|tier), then a
  // generation bump: a reader that needs share and mode|tier as one pair re-reads on a
  // generation change.
  Status SetCompute(int device, uint32_t share, ComputeMode mode, Tier tier);
  // A copy of the ledger, read now: `used` is empty when it cannot be read or fails validation
  // (missing, truncated, garbage: the slice is degraded), and `problem` then says why.
  UsageSnapshot Usage() const;  // counters included
  // The ledger's counters alone, from a copy: Corrupt/Unavailable when it cannot be read.
  Result<LedgerCounters> Counters() const;
  // Releases the charges of dead processes. Returns how many were reaped.
  int ReapDeadProcesses();
  // Deletes both files and the directory.
  Status Remove();

  // ---- Extra methods (for testing) ----
  // Claims a slot for (pid, start_time) as if that process had attached, and charges it
  // through the protocol (no cap check). Returns the slot index. Lets tests plant a process
  // whose pid is alive but whose start time is wrong (PID reuse).
  Result<int> TEST_PlantProcess(int32_t pid, uint64_t start_time, const std::vector<uint64_t>& charged);
  // Sum of every slot's charge (all lanes, signed) on `device`, FREE slots included. Not
  // clamped: a negative total shows as a huge number, so a test cannot mistake it for 0.
  uint64_t TEST_TotalSlotCharges(int device) const;

 private:
  struct Impl;
  explicit SliceAdmin(Impl* impl);
  Impl* impl_;
};

// Workload side, used by the hook: maps the slice, claims this process's slot, and admits
// device memory against the caps. Attach may allocate and make syscalls; nothing else does.
class Ledger {
 public:
  // Maps `dir`/limits read-only and `dir`/ledger read-write, validates both, reaps dead
  // processes, claims (or re-uses, for the same pid + start time) a process slot.
  // Errors name the file and the problem: NotFound, VersionMismatch, Corrupt, ResourceExhausted
  // (no free slot: counted in the ledger's no_free_slot, as is a forked child that finds none).
  // Attaching the same slice again in this process returns the same Ledger. A forked child
  // gets a slot of its own (pthread_atfork handler; no slot → Reserve refuses, fail closed).
  static Result<Ledger*> Attach(const char* dir);  // never freed: the hook lives as long as the process

  int device_count() const;
  // Index of the slice device with this UUID (case-insensitive), -1 if the slice does not have it.
  int FindDevice(const char* uuid) const;
  const char* device_uuid(int device) const;

  uint64_t Cap(int device) const;   // current cap (one atomic load)
  uint64_t Used(int device) const;  // bytes charged by all processes of the slice
  // The sum of this process's lanes (a snapshot; 0 if it is negative, which only a double
  // release can cause).
  uint64_t ChargedByThisProcess(int device) const;
  // The compute fields, one atomic load each. Out-of-range values (a limits file edited under
  // a running workload) read as the strictest: share clamped to 1..100, mode kCap, tier kBatch.
  // A device outside the slice: 0, kCap, kBatch.
  uint32_t ComputeShare(int device) const;
  ComputeMode GetComputeMode(int device) const;
  Tier GetTier(int device) const;

  // Charges `bytes` if used + bytes <= cap, atomically with respect to every other process and
  // thread: no interleaving can admit past the cap. On refusal, reaps dead processes (slow path:
  // syscalls) and tries once more. False: nothing changed.
  bool Reserve(int device, uint64_t bytes);
  // Charges `bytes` whatever the cap: for memory the driver placed and cannot take back (a
  // library's lazily placed variables), so the ledger keeps saying what the device holds. Used
  // may then exceed the cap, as after a cap lowered under a running workload. False only for
  // a device outside the slice or a process without a slot.
  bool ReserveOverCap(int device, uint64_t bytes);
  // Returns bytes charged by this process (a free, or the rollback of a failed real call).
  void Release(int device, uint64_t bytes);
  int ReapDeadProcesses();
  // The limits file's generation: changes whenever a cap or share changes (one atomic load).
  uint64_t LimitsGeneration() const;

  // Counters (LedgerCounters), for the interposer's refusal sites: one relaxed atomic add on
  // the mapped ledger each; no syscall, no lock, no allocation.
  // A process without a slot (a forked child that found none) is refused every reservation for
  // that reason, already counted once in no_free_slot: CountOomRefusal does not count those.
  void CountOomRefusal();
  void CountFailClosedRefusal();
  void CountComputeUnenforced();  // once per process and GPU: the caller makes sure
  LedgerCounters Counters() const;
  // Pass-through (FGPU_DISABLE=1) with `dir` naming a slice: maps and validates both files as
  // Attach does, adds one to pass_through and unmaps them. Claims no slot, reaps nothing, takes
  // no lock, and never blocks on a special file (opened O_NONBLOCK). False, with nothing
  // counted, when the slice cannot be used (missing, corrupt, not writable).
  static bool CountPassThrough(const char* dir);

  // ---- Extra methods (for testing) ----
  int TEST_slot() const;  // this process's slot index, -1 when it has none
  // Reserve / Release on a given lane (0..kLanes-1) instead of an idle one: waits while another
  // thread of this process uses that lane. Lets tests put charges on chosen lanes (a reserve
  // on one lane released on another leaves a negative lane).
  bool TEST_ReserveOnLane(int device, int lane, uint64_t bytes);
  void TEST_ReleaseOnLane(int device, int lane, uint64_t bytes);
  // Signed charge of this process's `lane` on `device`.
  int64_t TEST_LaneCharge(int device, int lane) const;
  // The next thread of this process that reaches the protocol step named `step` (a name of
  // kCrashStepNames in test_crash.h, e.g. "after-device-cas") stops there until
  // TEST_ResumePaused(); every other thread passes. False for an unknown name.
  bool TEST_PauseAt(const char* step);
  bool TEST_IsPaused() const;  // a thread is stopped at the armed step
  void TEST_ResumePaused();

 private:
  Ledger() = default;
  struct Impl;
  Impl* impl_ = nullptr;
};

// The environment variable naming the slice directory, read by the hook.
inline constexpr const char* kSliceEnv = "FGPU_SLICE";

}  // namespace fgpu::slice
