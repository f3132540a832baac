// The byte layout of a simulator segment (docs/sim-segment.md is the prose version; change
// both, and kSegmentVersion, together).
//
// Contract
// - Plain-old-data only: the segment is mapped at different addresses by unrelated
//   processes, so nothing here may hold a pointer, a vtable or a non-trivial member.
// - Every field is read and written only while holding SegmentHeader::mutex, except
//   the header's identity fields, which are written once at creation (magic last, under
//   the creation flock) and read-only afterwards.
// - Layout: SegmentPrefix (header + process slots), then device_count DeviceState
//   blocks. The first 16 bytes (magic, layout_version, header_size) keep their offsets in
//   every version, so any version can recognise any other.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sim/state/shared_devices.h"

namespace fgpu::sim::layout {

inline constexpr char kMagic[8] = {'F', 'G', 'P', 'U', 'S', 'I', 'M', '1'};
// 2: MIG state per device (MigDevice) and each process's MIG binding (ProcessSlot::mig_*).
inline constexpr uint32_t kSegmentVersion = 2;

inline constexpr int kSlotCount = kMaxProcessSlots;
// Utilization ring: 10 ms buckets covering 12.8 s, more than the longest query (10 s).
inline constexpr uint64_t kBucketNs = 10'000'000;
inline constexpr uint64_t kBucketCount = 1280;
// Kernel intervals reserved on a timeline but not yet accounted into buckets (they are
// accounted lazily, up to "now", so utilization never counts the future).
inline constexpr uint64_t kPendingCapacity = 1024;

// ProcessSlot::state. A non-zero magic word for "live", so zeroed or garbage memory does
// not read as a live process.
inline constexpr uint32_t kSlotFree = 0;
inline constexpr uint32_t kSlotLive = 0x4556494c;  // "LIVE"
inline constexpr uint32_t kNoSlot = 0xffffffff;    // PendingInterval::slot of an unowned kernel

// MIG instance slots: a GPU has at most 7 GPU instances and a GPU instance at most 7 compute
// instances (one per compute slice); 8 keeps the arrays a power of two.
inline constexpr int kMigSlots = 8;
// MigGpuSlot::state / MigComputeSlot::state: "live" is a magic word for the same reason as
// kSlotLive; anything else reads as free (and is cleared by the repair after a crash).
inline constexpr uint32_t kMigFree = 0;
inline constexpr uint32_t kMigLive = 0x4749494d;  // "MIIG"

struct alignas(64) SegmentHeader {
  char magic[8];                // kMagic; written last by the creator, so a torn init reads as "no magic"
  uint32_t layout_version;      // kSegmentVersion of the creator
  uint32_t header_size;         // sizeof(SegmentHeader) of the creator
  uint64_t total_size;          // bytes of the whole segment (== its file size)
  uint64_t config_fingerprint;  // ConfigFingerprint() of the creator's config
  uint32_t device_count;        // DeviceState blocks that follow the prefix
  int32_t creator_pid;          // diagnostics only
  uint64_t created_ns;          // NowNs() at creation; diagnostics only
  uint32_t slot_count;          // kSlotCount; checked on attach
  uint32_t bucket_count;        // kBucketCount; checked on attach
  uint64_t bucket_ns;           // kBucketNs; checked on attach
  uint32_t pending_capacity;    // kPendingCapacity; checked on attach
  uint32_t reserved;
  pthread_mutex_t mutex;        // PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST; guards all below
};

// One attached process. Claimed by the process itself on Attach; released (state = free,
// one store) by whichever process finds it dead.
struct alignas(64) ProcessSlot {
  uint32_t state;                          // kSlotFree / kSlotLive; set live last, set free first
  int32_t pid;
  uint64_t start_time;                     // /proc/<pid>/stat field 22 (ticks after boot); 0 = unknown
  uint32_t generation;                     // bumped per claim: tells a previous owner's kernels apart
  uint32_t reserved;
  uint64_t claimed_epoch;                  // bucket epoch at claim; older buckets belong to earlier owners
  uint64_t charged[kMaxSimDevices];        // bytes this process holds per device (TryCharge/Credit)
  uint64_t last_busy_ns[kMaxSimDevices];   // latest instant its kernels were accounted as running
  // The MIG compute instance this process's CUDA uses (CUDA_VISIBLE_DEVICES=MIG-...): its
  // charges on that device count against the GPU instance's memory, and the instances
  // cannot be destroyed while it lives. mig_device_plus1 == 0: not bound.
  uint32_t mig_device_plus1;
  uint32_t mig_gpu_instance;
  uint32_t mig_compute_instance;
  uint32_t mig_reserved;
};

// A reserved kernel interval waiting to be accounted. Intervals on one device never
// overlap and are queued in time order.
struct PendingInterval {
  uint64_t start_ns;    // advanced as the interval is accounted piecewise
  uint64_t end_ns;
  uint32_t slot;        // owner's slot index, or kNoSlot
  uint32_t generation;  // owner's ProcessSlot::generation when enqueued
};

// Busy time inside [epoch * kBucketNs, (epoch + 1) * kBucketNs). A bucket whose tag is
// not epoch + 1 holds another epoch (or nothing) and reads as zero.
struct UtilizationBucket {
  uint64_t tag;                            // epoch + 1; stored after the counters are zeroed
  uint64_t busy_ns;                        // device busy time
  uint32_t slot_busy_ns[kMaxProcessSlots]; // busy time per slot (<= kBucketNs fits 32 bits)
};

// A compute instance inside a GPU instance: `size` compute slices from `start`.
struct MigComputeSlot {
  uint32_t state;    // kMigFree / kMigLive; set live last, set free in one store
  uint32_t id;       // unique within its GPU instance
  uint32_t profile;  // NVML_COMPUTE_INSTANCE_PROFILE_*
  uint32_t start;    // first compute slice, relative to the GPU instance
  uint32_t size;     // compute slices
  uint32_t reserved;
};

// A GPU instance: a profile (fgpu::mig::Profile::id) at a memory-slice start.
struct MigGpuSlot {
  uint32_t state;       // kMigFree / kMigLive; set live last, set free in one store
  uint32_t id;          // unique within the device
  uint32_t profile_id;  // nvidia-smi's profile id
  uint32_t start;       // first memory slice
  MigComputeSlot compute[kMigSlots];
};

// A device's MIG configuration; all zero (MIG disabled, no instance) at creation.
struct MigDevice {
  uint32_t current_mode;  // NVML_DEVICE_MIG_DISABLE / _ENABLE
  uint32_t pending_mode;
  MigGpuSlot gpu[kMigSlots];
};

struct alignas(64) DeviceState {
  uint64_t total_bytes;     // the config's memory; written at creation only
  uint64_t busy_until_ns;   // end of the last interval reserved on the timeline
  uint64_t pending_head;    // intervals accounted so far (monotonic); oldest at head % capacity
  uint64_t pending_tail;    // intervals queued so far (monotonic); published after the entry is written
  PendingInterval pending[kPendingCapacity];
  UtilizationBucket buckets[kBucketCount];  // ring indexed by epoch % kBucketCount
  MigDevice mig;
};

struct SegmentPrefix {
  SegmentHeader header;
  ProcessSlot slots[kSlotCount];
};

constexpr uint64_t SegmentSize(uint64_t device_count) {
  return sizeof(SegmentPrefix) + device_count * sizeof(DeviceState);
}

static_assert(std::is_trivially_copyable_v<SegmentPrefix> && std::is_standard_layout_v<SegmentPrefix>);
static_assert(std::is_trivially_copyable_v<DeviceState> && std::is_standard_layout_v<DeviceState>);
static_assert(offsetof(SegmentHeader, layout_version) == 8 && offsetof(SegmentHeader, header_size) == 12,
              "the version fields must never move: other versions read them to refuse us");
static_assert(sizeof(SegmentPrefix) % 64 == 0, "DeviceState blocks must stay cache-line aligned");
static_assert(kBucketNs <= UINT32_MAX, "per-slot bucket counters are 32-bit");

}  // namespace fgpu::sim::layout
