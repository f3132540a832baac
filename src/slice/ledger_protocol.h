// The admission protocol over a mapped ledger (docs/slice-format.md, "Protocol").
//
// Contract
// - LedgerProtocol is a view: it owns nothing and is cheap to copy. The mappings must stay
//   valid for its lifetime; `device_count` must be the validated count.
// - Apply, Help, Load*, Cap make no syscall, take no lock and allocate nothing. Claim and
//   Settle neither; ReapDead makes syscalls (kill, /proc) but allocates nothing, so it is
//   safe in a pthread_atfork child handler.
// - One slot has one operator at a time: its owner (CLAIMING, LIVE) or its reaper (REAPING).
//   Apply and Settle on slot s must only be called by that operator. Apply on (s, device,
//   lane) by one thread of it at a time (the Ledger gives each thread an idle lane); Settle
//   while no Apply on s runs. Help may be called by anyone.
// - Nothing here trusts the ledger's contents: slot indexes, states and amounts read from
//   the mapping are range-checked, so a corrupted ledger can produce wrong numbers for its own
//   slice but never an out-of-bounds access or a hang.
#pragma once

#include <cstdint>

#include "slice/atomic128.h"
#include "slice/layout.h"
#include "slice/test_crash.h"

namespace fgpu::slice {

struct ProcessId {
  int32_t pid = 0;
  uint64_t start_time = 0;
  friend bool operator==(const ProcessId&, const ProcessId&) = default;
};

// A slot's identity word, decoded.
struct SlotIdentity {
  uint32_t state = layout::kFree;
  ProcessId process;
};

class LedgerProtocol {
 public:
  LedgerProtocol() = default;
  LedgerProtocol(char* ledger, const char* limits, uint32_t device_count, CrashPlan* crash)
      : ledger_(ledger), limits_(limits), device_count_(device_count), crash_(crash) {}

  uint32_t device_count() const { return device_count_; }

  uint64_t Cap(int device) const {
    return __atomic_load_n(&limits_device(device)->memory_cap, __ATOMIC_ACQUIRE);
  }
  uint64_t Used(int device) const { return Load128(device_word(device)).low; }
  // One lane's charge, signed.
  int64_t LaneCharge(int slot, int device, int lane) const {
    return static_cast<int64_t>(Load128(&slot_device(slot, device, lane)->charged).low);
  }
  // The slot's charge: the sum of its lanes, as one snapshot when the lanes hold still long
  // enough to be read twice alike (else the last sum read). Plain 64-bit loads, no write to
  // the cache lines. Signed: negative only after a double release (or corruption).
  // `lanes`, if given, receives the kLanes charges the sum was taken over.
  int64_t SlotCharge(int slot, int device, int64_t* lanes = nullptr) const;
  // One pass of the same loads, no snapshot: a sum that may be off by ops completing during
  // the pass. `lanes` as above.
  int64_t SlotChargeOnePass(int slot, int device, int64_t* lanes = nullptr) const;
  // Bit k set when lane k's charge reads negative (one pass of plain loads: a hint, no snapshot).
  uint32_t NegativeLanes(int slot, int device) const;
  // SlotCharge clamped at 0.
  uint64_t Charged(int slot, int device) const {
    const int64_t charge = SlotCharge(slot, device);
    return charge > 0 ? static_cast<uint64_t>(charge) : 0;
  }
  SlotIdentity Identity(int slot) const;
  uint32_t Generation(int slot) const {
    return __atomic_load_n(&slot_header(slot)->generation, __ATOMIC_RELAXED);
  }

  // One op by (or on behalf of) `slot` on `device`, journaled and committed on `lane`: adds
  // `delta` (two's complement) to the device total and the lane's charge, atomically with
  // respect to every other op. With `check_cap`, a positive delta is refused (false, nothing
  // changed) when it would take the total past the cap. A negative delta is clamped so the
  // total never underflows.
  bool Apply(int slot, int lane, int device, int64_t delta, bool check_cap);

  // Commits the op `last` (PackOp) if it is still pending. Idempotent.
  void Help(int device, uint64_t last);

  // For the slot's operator: completes any op of the slot that reached the device word and
  // zeroes every lane, leaving charged == 0 on every lane of every device: per device, first
  // the negative lanes (credits, which raise the total), then the positive ones, so the
  // device total never dips below what the other processes hold (docs/slice-format.md,
  // "Settle order"). `reaping` only selects the crash points.
  void Settle(int slot, bool reaping);
  // The most a settle of (slot, device) may credit back: what its positive lanes hold, and no
  // more than keeps the device's total within 1 PiB.
  uint64_t CreditBudget(int slot, int device) const;

  // Claims a FREE slot for `self` (CLAIMING → settled → LIVE). -1 when none is free.
  int Claim(const ProcessId& self);
  // Marks a slot that `self` operates (LIVE or CLAIMING) LIVE; false if it names another.
  bool MakeLive(int slot, const ProcessId& self);
  // Releases the slot `self` operates after settling it: the identity becomes FREE last.
  void Free(int slot, const ProcessId& self, uint32_t state);

  // Reaps every slot whose named process is dead (or whose fields are corrupt), except
  // slots naming `self`. Returns how many this call reaped.
  int ReapDead(const ProcessId& self);

  // Whether this slot's fields are corrupt or its named process is gone (syscalls).
  bool LooksDead(int slot, const SlotIdentity& identity) const;

 private:
  void* device_word(int device) const {
    return ledger_ + sizeof(layout::LedgerHeader) + static_cast<size_t>(device) * sizeof(layout::DeviceWord);
  }
  layout::SlotHeader* slot_header(int slot) const {
    return reinterpret_cast<layout::SlotHeader*>(ledger_ + layout::SlotsOffset(device_count_) +
                                                 static_cast<size_t>(slot) * layout::SlotSize(device_count_));
  }
  layout::SlotDevice* slot_device(int slot, int device, int lane) const {
    return reinterpret_cast<layout::SlotDevice*>(reinterpret_cast<char*>(slot_header(slot)) +
                                                 layout::SlotDeviceOffset(device, lane));
  }
  const layout::LimitsDevice* limits_device(int device) const {
    return reinterpret_cast<const layout::LimitsDevice*>(limits_ + sizeof(layout::LimitsHeader)) + device;
  }
  void CrashAt(CrashStep step) const {
    if (crash_ != nullptr) crash_->At(step);
  }

  char* ledger_ = nullptr;
  const char* limits_ = nullptr;
  uint32_t device_count_ = 0;
  CrashPlan* crash_ = nullptr;
};

// The identity word as stored: low = state | pid << 32, high = start time.
inline Word128 PackIdentity(uint32_t state, const ProcessId& process) {
  return Word128{state | (static_cast<uint64_t>(static_cast<uint32_t>(process.pid)) << 32),
                 process.start_time};
}

}  // namespace fgpu::slice
