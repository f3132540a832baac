// The byte layout of a slice's two files (docs/slice-format.md has the same tables with
// offsets). Every struct here is a fixed-size POD placed directly in a shared mapping; the
// static_asserts below pin each offset, so a layout change cannot slip in without a
// kFormatVersion bump and a docs update.
//
// Fields that other processes change concurrently are accessed only through the helpers in
// slice/atomic128.h (128-bit words) or __atomic builtins (64/32-bit words); never with plain
// loads and stores.
#pragma once

#include <cstddef>
#include <cstdint>

#include "slice/slice.h"

namespace fgpu::slice::layout {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the slice format is little-endian");

inline constexpr char kLimitsMagic[8] = {'F', 'G', 'P', 'U', 'L', 'I', 'M', '1'};
inline constexpr char kLedgerMagic[8] = {'F', 'G', 'P', 'U', 'L', 'E', 'D', '1'};

// A memory cap, a charge or a device total above this (1 PiB) is garbage, not a GPU.
inline constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

// ---- limits -------------------------------------------------------------------------------

struct LimitsHeader {
  char magic[8];          // "FGPULIM1"
  uint32_t version;       // kFormatVersion
  uint32_t header_size;   // sizeof(LimitsHeader)
  uint64_t file_size;     // header + device_count * sizeof(LimitsDevice)
  char id[kIdBytes];      // slice id, NUL-terminated
  uint32_t device_count;  // 1..kMaxDevices
  uint32_t reserved;
  uint64_t generation;  // atomic; bumped on every limit change
};
static_assert(offsetof(LimitsHeader, version) == 8);
static_assert(offsetof(LimitsHeader, header_size) == 12);
static_assert(offsetof(LimitsHeader, file_size) == 16);
static_assert(offsetof(LimitsHeader, id) == 24);
static_assert(offsetof(LimitsHeader, device_count) == 88);
static_assert(offsetof(LimitsHeader, generation) == 96);
static_assert(sizeof(LimitsHeader) == 104);

struct LimitsDevice {
  char uuid[kUuidBytes];   // NUL-terminated
  uint64_t memory_cap;     // atomic; bytes
  uint32_t compute_share;  // atomic; percent, 1..100
  // The compute word: these three are one aligned 32-bit word, stored and loaded only as a
  // whole (ComputeWord below), so mode and tier change together.
  uint8_t compute_mode;  // ComputeMode: 0 cap, 1 share
  uint8_t tier;          // Tier: 0 batch, 1 standard, 2 latency (higher = higher priority)
  uint16_t reserved;     // 0
};
static_assert(offsetof(LimitsDevice, memory_cap) == 48);
static_assert(offsetof(LimitsDevice, compute_share) == 56);
static_assert(offsetof(LimitsDevice, compute_mode) == 60);
static_assert(offsetof(LimitsDevice, tier) == 61);
static_assert(offsetof(LimitsDevice, reserved) == 62);
static_assert(sizeof(LimitsDevice) == 64);

inline constexpr uint8_t kMaxComputeMode = static_cast<uint8_t>(ComputeMode::kShare);
inline constexpr uint8_t kMaxTier = static_cast<uint8_t>(Tier::kLatency);

// The compute word (mode | tier << 8 | reserved << 16, little-endian, so byte 60 is the mode and
// byte 61 the tier) as a 32-bit object that may alias the three byte fields.
typedef uint32_t __attribute__((may_alias)) AliasedU32;
inline AliasedU32* ComputeWord(LimitsDevice* device) { return reinterpret_cast<AliasedU32*>(&device->compute_mode); }
inline const AliasedU32* ComputeWord(const LimitsDevice* device) {
  return reinterpret_cast<const AliasedU32*>(&device->compute_mode);
}
constexpr uint32_t PackComputeWord(uint8_t mode, uint8_t tier, uint16_t reserved) {
  return uint32_t{mode} | uint32_t{tier} << 8 | uint32_t{reserved} << 16;
}
constexpr uint8_t ComputeWordMode(uint32_t word) { return static_cast<uint8_t>(word); }
constexpr uint8_t ComputeWordTier(uint32_t word) { return static_cast<uint8_t>(word >> 8); }
constexpr uint16_t ComputeWordReserved(uint32_t word) { return static_cast<uint16_t>(word >> 16); }

constexpr uint64_t LimitsFileSize(uint32_t device_count) {
  return sizeof(LimitsHeader) + uint64_t{device_count} * sizeof(LimitsDevice);
}

// ---- ledger -------------------------------------------------------------------------------

struct LedgerHeader {
  char magic[8];         // "FGPULED1"
  uint32_t version;      // kFormatVersion
  uint32_t header_size;  // sizeof(LedgerHeader)
  uint64_t file_size;
  uint32_t device_count;  // equals the limits file's
  uint32_t slot_count;    // kMaxProcesses
  uint32_t slot_size;     // SlotSize(device_count)
  uint32_t slots_offset;  // SlotsOffset(device_count)
  // Counters of refusals and degraded modes (slice.h LedgerCounters): atomic, monotonic, only
  // ever changed by a relaxed __atomic_fetch_add. These bytes were reserved (0) before, so a
  // ledger written earlier reads as "nothing counted" and needs no version bump.
  uint64_t oom_refusals;
  uint32_t fail_closed_refusals;
  uint32_t compute_unenforced;
  uint32_t no_free_slot;
  uint32_t pass_through;
};
static_assert(offsetof(LedgerHeader, device_count) == 24);
static_assert(offsetof(LedgerHeader, slot_count) == 28);
static_assert(offsetof(LedgerHeader, slot_size) == 32);
static_assert(offsetof(LedgerHeader, slots_offset) == 36);
static_assert(offsetof(LedgerHeader, oom_refusals) == 40);
static_assert(offsetof(LedgerHeader, fail_closed_refusals) == 48);
static_assert(offsetof(LedgerHeader, compute_unenforced) == 52);
static_assert(offsetof(LedgerHeader, no_free_slot) == 56);
static_assert(offsetof(LedgerHeader, pass_through) == 60);
static_assert(sizeof(LedgerHeader) == 64);

// D: the device's 128-bit word {used, last}, alone on its cache line so that devices do not
// contend with each other or with the slots.
struct alignas(64) DeviceWord {
  uint64_t used;  // low half: bytes charged by all processes (including one op not yet committed)
  uint64_t last;  // high half: the op that last changed `used`, PackOp(slot, lane, seq); 0 = none
  uint8_t pad[48];
};
static_assert(sizeof(DeviceWord) == 64);

// Slot states. The identity word {state, pid, start_time} is changed only by 128-bit CAS, so
// it always names the one process responsible for the slot: the owner (CLAIMING, LIVE) or
// the reaper (REAPING).
enum SlotState : uint32_t { kFree = 0, kClaiming = 1, kLive = 2, kReaping = 3 };

struct SlotHeader {
  uint32_t state;       // SlotState        } the identity word: one 16-byte-aligned
  int32_t pid;          //                  } 128-bit CAS target
  uint64_t start_time;  // /proc/<pid>/stat field 22 (clock ticks after boot)
  uint32_t generation;  // bumped on every claim
  uint32_t reserved0;
  uint64_t reserved1;
};
static_assert(offsetof(SlotHeader, pid) == 4);
static_assert(offsetof(SlotHeader, start_time) == 8);
static_assert(offsetof(SlotHeader, generation) == 16);
static_assert(sizeof(SlotHeader) == 32);

// Per slot, device and lane: the journal J of the lane's current op, and C = {charged,
// committed}. A slot has kLanes of these per device, lane-major within the device
// (SlotSize below); each lane runs one op at a time.
struct SlotDevice {
  uint64_t journal_bytes;  // J: two's-complement delta of the op numbered journal_seq
  uint64_t journal_seq;
  uint64_t charged;    // C low half: bytes this lane holds on the device, SIGNED (two's complement):
                       // memory reserved on one lane may be released on another
  uint64_t committed;  // C high half: seq of the last op applied to `charged`
};
static_assert(offsetof(SlotDevice, charged) == 16);
static_assert(sizeof(SlotDevice) == 32);
static_assert(kLanes == 8, "the op encoding below gives the lane 3 bits");

// Offset of lane `lane` of `device` inside a slot.
constexpr uint32_t SlotDeviceOffset(int device, int lane) {
  return static_cast<uint32_t>(sizeof(SlotHeader) +
                               (static_cast<size_t>(device) * kLanes + static_cast<size_t>(lane)) * sizeof(SlotDevice));
}
static_assert(SlotDeviceOffset(0, 0) == 32);
static_assert(SlotDeviceOffset(0, 1) == 64);
static_assert(SlotDeviceOffset(1, 0) == 32 + 256);

constexpr uint32_t SlotSize(uint32_t device_count) {
  const uint32_t raw =
      static_cast<uint32_t>(sizeof(SlotHeader) + uint64_t{device_count} * kLanes * sizeof(SlotDevice));
  return (raw + 63) / 64 * 64;
}
static_assert(SlotSize(1) == 320);
static_assert(SlotSize(2) == 576);
static_assert(SlotSize(16) == 4160);
constexpr uint32_t SlotsOffset(uint32_t device_count) {
  return static_cast<uint32_t>(sizeof(LedgerHeader) + device_count * sizeof(DeviceWord));
}
constexpr uint64_t LedgerFileSize(uint32_t device_count) {
  return uint64_t{SlotsOffset(device_count)} + uint64_t{kMaxProcesses} * SlotSize(device_count);
}
static_assert(LedgerFileSize(1) == 64 + 64 + 256 * 320);
static_assert(LedgerFileSize(16) == 64 + 16 * 64 + 256 * 4160);

// `last` packs (slot, lane, seq): the low 12 bits are (slot + 1) << 3 | lane — slot + 1 in
// bits 3..11 (1..256; 0 = no op), the lane in bits 0..2 — and seq is in the high 52 bits.
// Sequence numbers count per lane modulo 2^52 and are never reset, so a stale (slot, lane,
// seq) can only be confused with a new op after 2^52 more ops of that lane.
inline constexpr int kLaneBits = 3;
inline constexpr int kOpBits = 12;  // slot + 1 and lane
inline constexpr uint64_t kSeqMask = (uint64_t{1} << (64 - kOpBits)) - 1;
static_assert(kLanes == 1 << kLaneBits);
static_assert(kMaxProcesses + 1 <= (1 << (kOpBits - kLaneBits)));  // slot + 1 fits in 9 bits

constexpr uint64_t PackOp(int slot, int lane, uint64_t seq) {
  return ((seq & kSeqMask) << kOpBits) | static_cast<uint64_t>(slot + 1) << kLaneBits |
         static_cast<uint64_t>(lane & (kLanes - 1));
}
// -1 when `last` names no op (then OpLane and OpSeq mean nothing); may exceed kMaxProcesses on garbage.
constexpr int OpSlot(uint64_t last) { return static_cast<int>((last & ((1u << kOpBits) - 1)) >> kLaneBits) - 1; }
constexpr int OpLane(uint64_t last) { return static_cast<int>(last & (kLanes - 1)); }
constexpr uint64_t OpSeq(uint64_t last) { return last >> kOpBits; }
constexpr uint64_t NextSeq(uint64_t seq) { return (seq + 1) & kSeqMask; }
static_assert(PackOp(0, 0, 0) == 8);
static_assert(OpSlot(PackOp(255, 7, 5)) == 255 && OpLane(PackOp(255, 7, 5)) == 7 && OpSeq(PackOp(255, 7, 5)) == 5);
static_assert(OpSlot(PackOp(3, 2, kSeqMask)) == 3 && OpSeq(PackOp(3, 2, kSeqMask)) == kSeqMask);
static_assert(OpSlot(0) == -1);
static_assert(OpSlot(~uint64_t{0}) == 510);  // garbage names no slot

}  // namespace fgpu::slice::layout
