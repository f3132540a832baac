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
  uint32_t reserved;
};
static_assert(offsetof(LimitsDevice, memory_cap) == 48);
static_assert(offsetof(LimitsDevice, compute_share) == 56);
static_assert(sizeof(LimitsDevice) == 64);

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
  uint8_t reserved[24];
};
static_assert(offsetof(LedgerHeader, device_count) == 24);
static_assert(offsetof(LedgerHeader, slot_count) == 28);
static_assert(offsetof(LedgerHeader, slot_size) == 32);
static_assert(offsetof(LedgerHeader, slots_offset) == 36);
static_assert(sizeof(LedgerHeader) == 64);

// D: the device's 128-bit word {used, last}, alone on its cache line so that devices do not
// contend with each other or with the slots.
struct alignas(64) DeviceWord {
  uint64_t used;  // low half: bytes charged by all processes (including one op not yet committed)
  uint64_t last;  // high half: the op that last changed `used`, PackOp(slot, seq); 0 = none
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

// Per slot and device: the journal J of the slot's current op, and C = {charged, committed}.
struct SlotDevice {
  uint64_t journal_bytes;  // J: two's-complement delta of the op numbered journal_seq
  uint64_t journal_seq;
  uint64_t charged;    // C low half: bytes this slot holds on the device
  uint64_t committed;  // C high half: seq of the last op applied to `charged`
};
static_assert(offsetof(SlotDevice, charged) == 16);
static_assert(sizeof(SlotDevice) == 32);

constexpr uint32_t SlotSize(uint32_t device_count) {
  const uint32_t raw = static_cast<uint32_t>(sizeof(SlotHeader) + device_count * sizeof(SlotDevice));
  return (raw + 63) / 64 * 64;
}
constexpr uint32_t SlotsOffset(uint32_t device_count) {
  return static_cast<uint32_t>(sizeof(LedgerHeader) + device_count * sizeof(DeviceWord));
}
constexpr uint64_t LedgerFileSize(uint32_t device_count) {
  return uint64_t{SlotsOffset(device_count)} + uint64_t{kMaxProcesses} * SlotSize(device_count);
}

// `last` packs (slot, seq): slot + 1 in the low 12 bits (0 = no op), seq in the high 52.
// Sequence numbers count modulo 2^52 and are never reset for a slot, so a stale (slot, seq)
// can only be confused with a new op after 2^52 more ops of that slot.
inline constexpr int kSlotBits = 12;
inline constexpr uint64_t kSeqMask = (uint64_t{1} << (64 - kSlotBits)) - 1;
static_assert(kMaxProcesses < (1 << kSlotBits));

constexpr uint64_t PackOp(int slot, uint64_t seq) {
  return ((seq & kSeqMask) << kSlotBits) | static_cast<uint64_t>(slot + 1);
}
constexpr int OpSlot(uint64_t last) { return static_cast<int>(last & ((1u << kSlotBits) - 1)) - 1; }
constexpr uint64_t OpSeq(uint64_t last) { return last >> kSlotBits; }
constexpr uint64_t NextSeq(uint64_t seq) { return (seq + 1) & kSeqMask; }

}  // namespace fgpu::slice::layout
