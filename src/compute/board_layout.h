// The byte layout of a compute board: one file per physical GPU, shared by every process of
// every slice on that GPU (docs/compute.md has the same table with offsets); and of the policy
// table that goes with a board on a managed node (each row's key, share, mode and tier, written
// by the node agent only). Fixed-size POD
// structs mapped MAP_SHARED; every field that other processes change is read and written only
// with __atomic builtins (64/32-bit words). The static_asserts pin each offset, so a layout
// change cannot slip in without a kBoardVersion bump and a docs update.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fgpu::compute::layout {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the board format is little-endian");

inline constexpr char kBoardMagic[8] = {'F', 'G', 'P', 'U', 'C', 'M', 'P', '1'};
inline constexpr uint32_t kBoardVersion = 1;
inline constexpr uint32_t kEntryCount = 32;  // slices that can share one GPU
inline constexpr size_t kUuidBytes = 48;
inline constexpr size_t kSliceIdBytes = 48;

struct BoardHeader {
  char magic[8];          // "FGPUCMP1"
  uint32_t version;       // kBoardVersion
  uint32_t header_size;   // sizeof(BoardHeader)
  uint64_t file_size;     // BoardFileSize()
  char uuid[kUuidBytes];  // the GPU, NUL-terminated
  uint32_t entry_count;   // kEntryCount
  uint32_t entry_size;    // sizeof(BoardEntry)
  uint64_t owner;         // atomic: PackOwner(entry, epoch); entry -1 = nobody
  int64_t grant_ns;       // atomic: CLOCK_MONOTONIC when the owner got the GPU
  int64_t last_completion_ns;  // atomic max: latest observed completion of anyone's work
  uint64_t vclock;        // atomic max: the largest virtual time an owner has reached
  int64_t latency_demand_ns;  // atomic: last time a latency-tier slice wanted to launch (0: never)
  uint8_t reserved[8];
};
static_assert(offsetof(BoardHeader, version) == 8);
static_assert(offsetof(BoardHeader, file_size) == 16);
static_assert(offsetof(BoardHeader, uuid) == 24);
static_assert(offsetof(BoardHeader, entry_count) == 72);
static_assert(offsetof(BoardHeader, entry_size) == 76);
static_assert(offsetof(BoardHeader, owner) == 80);
static_assert(offsetof(BoardHeader, grant_ns) == 88);
static_assert(offsetof(BoardHeader, last_completion_ns) == 96);
static_assert(offsetof(BoardHeader, vclock) == 104);
static_assert(offsetof(BoardHeader, latency_demand_ns) == 112);
static_assert(sizeof(BoardHeader) == 128);

// One slice's row. Written by the slice's own processes; read by every process on the GPU.
// On a board with a policy table (a managed node's) `key`, `slice_id`, `share` and `mode_tier`
// are not used (the agent leaves them 0, and nobody reads them): the policy row of the same
// index holds them. The rest is the row's dynamic state, as on any board.
struct alignas(64) BoardEntry {
  uint64_t key;           // atomic: the slice's key; 0 = free row
  char slice_id[kSliceIdBytes];  // for humans (fgpu status); NUL-terminated, advisory
  uint32_t share;         // atomic: percent, 1..100
  uint32_t mode_tier;     // atomic: mode | tier << 8
  int64_t demand_ns;      // atomic: last time a thread of the slice wanted to launch
  int64_t activity_ns;    // atomic max: last launch or observed completion
  int64_t inflight_until_ns;  // atomic max: when the work it has queued should be done (estimate)
  uint64_t vtime;         // atomic: virtual time, Σ busy·100/share (ns)
  // atomic: the rate clock (GCRA at the row's share): advances by busy·100/share from at most
  // Policy::rate_credit_ns before the batch's start. Behind now: the slice got less than its
  // share (owed); ahead by more than the tolerance: a cap-mode slice is over its rate.
  int64_t tat_ns;
  uint64_t busy_ns;       // atomic: total measured GPU occupancy (ns), for accounting
  uint64_t launches;      // atomic: launches whose batch was measured, for accounting
  uint64_t throttled_ns;  // atomic: time the slice's launches waited in the gate (metrics)
  uint64_t throttles;     // atomic: launches that waited at least once (metrics)
  uint8_t reserved[24];
};
static_assert(offsetof(BoardEntry, share) == 56);
static_assert(offsetof(BoardEntry, mode_tier) == 60);
static_assert(offsetof(BoardEntry, demand_ns) == 64);
static_assert(offsetof(BoardEntry, activity_ns) == 72);
static_assert(offsetof(BoardEntry, inflight_until_ns) == 80);
static_assert(offsetof(BoardEntry, vtime) == 88);
static_assert(offsetof(BoardEntry, tat_ns) == 96);
static_assert(offsetof(BoardEntry, busy_ns) == 104);
static_assert(offsetof(BoardEntry, launches) == 112);
static_assert(offsetof(BoardEntry, throttled_ns) == 120);
static_assert(offsetof(BoardEntry, throttles) == 128);
static_assert(sizeof(BoardEntry) == 192);

constexpr uint64_t BoardFileSize() { return sizeof(BoardHeader) + uint64_t{kEntryCount} * sizeof(BoardEntry); }

// owner = epoch << 8 | (entry + 1); low byte 0 = no owner. The epoch makes every hand-over a
// distinct value, so a CAS against a stale read cannot succeed (no ABA).
constexpr uint64_t PackOwner(int entry, uint64_t epoch) {
  return (epoch << 8) | static_cast<uint64_t>(entry + 1);
}
constexpr int OwnerEntry(uint64_t owner) { return static_cast<int>(owner & 0xff) - 1; }
constexpr uint64_t OwnerEpoch(uint64_t owner) { return owner >> 8; }

constexpr uint32_t PackModeTier(uint8_t mode, uint8_t tier) { return mode | (uint32_t{tier} << 8); }

// The policy table of a managed node's board: a sealed memfd the node agent makes beside the
// board and alone writes; workloads map it read-only. Row r describes board row r.
inline constexpr char kPolicyMagic[8] = {'F', 'G', 'P', 'U', 'P', 'O', 'L', '1'};
inline constexpr uint32_t kPolicyVersion = 1;

struct PolicyHeader {
  char magic[8];          // "FGPUPOL1"
  uint32_t version;       // kPolicyVersion
  uint32_t header_size;   // sizeof(PolicyHeader)
  uint64_t file_size;     // PolicyFileSize()
  char uuid[kUuidBytes];  // the GPU, NUL-terminated
  uint32_t entry_count;   // kEntryCount (one policy row per board row)
  uint32_t entry_size;    // sizeof(PolicyEntry)
  uint64_t board_inode;   // st_ino of the board memfd this table goes with (a restarted agent pairs them)
  int64_t created_ns;     // CLOCK_REALTIME when the agent made the pair (the newest pair wins a recovery)
  uint8_t reserved[32];
};
static_assert(offsetof(PolicyHeader, version) == 8);
static_assert(offsetof(PolicyHeader, file_size) == 16);
static_assert(offsetof(PolicyHeader, uuid) == 24);
static_assert(offsetof(PolicyHeader, entry_count) == 72);
static_assert(offsetof(PolicyHeader, entry_size) == 76);
static_assert(offsetof(PolicyHeader, board_inode) == 80);
static_assert(offsetof(PolicyHeader, created_ns) == 88);
static_assert(sizeof(PolicyHeader) == 128);

// One slice's settings on a managed node. Written by the agent only (assign: the fields, then the
// key with a release store; free: the key first); read by every process on the GPU.
struct alignas(64) PolicyEntry {
  uint64_t key;          // atomic: SliceKey of the slice directory's realpath; 0 = free row
  uint32_t share;        // atomic: percent, 1..100
  uint32_t mode_tier;    // atomic: mode | tier << 8
  char slice_id[kSliceIdBytes];  // for humans; NUL-terminated
};
static_assert(offsetof(PolicyEntry, share) == 8);
static_assert(offsetof(PolicyEntry, mode_tier) == 12);
static_assert(offsetof(PolicyEntry, slice_id) == 16);
static_assert(sizeof(PolicyEntry) == 64);

constexpr uint64_t PolicyFileSize() { return sizeof(PolicyHeader) + uint64_t{kEntryCount} * sizeof(PolicyEntry); }

}  // namespace fgpu::compute::layout
