#include "slice/ledger_protocol.h"

#include <algorithm>

#include "slice/process_liveness.h"

namespace fgpu::slice {

namespace {

// A double collect that keeps failing means the process's other threads keep completing ops
// on this device (or someone scribbles on the ledger): give up on an exact snapshot after this
// many tries rather than spin.
constexpr int kMaxCollects = 8;

// Bytes credited to a negative lane at settle are capped: a larger magnitude is garbage, and
// crediting it would lock the slice out of its own cap.
constexpr uint64_t kMaxCredit = layout::kMaxBytes;

}  // namespace

SlotIdentity LedgerProtocol::Identity(int slot) const {
  const Word128 word = Load128(slot_header(slot));
  SlotIdentity identity;
  identity.state = static_cast<uint32_t>(word.low);
  identity.process.pid = static_cast<int32_t>(static_cast<uint32_t>(word.low >> 32));
  identity.process.start_time = word.high;
  return identity;
}

int64_t LedgerProtocol::SlotCharge(int slot, int device, int64_t* lanes) const {
  // Each C word changes only by a 128-bit CAS that also advances its `committed` seq (the
  // settle's garbage clear aside), so if every lane's seq reads the same before and after the
  // sums were read, every lane held its value at the instant between the two passes: the sum
  // is a true snapshot. Aligned 64-bit loads of either half are atomic on x86-64.
  // The sum wraps like the lanes (two's complement), so garbage cannot overflow it.
  uint64_t seqs[kLanes];
  uint64_t sum = 0;
  for (int attempt = 1;; ++attempt) {
    sum = 0;
    for (int lane = 0; lane < kLanes; ++lane) {
      const layout::SlotDevice* c = slot_device(slot, device, lane);
      seqs[lane] = __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE);
      const uint64_t charge = __atomic_load_n(&c->charged, __ATOMIC_ACQUIRE);
      if (lanes != nullptr) lanes[lane] = static_cast<int64_t>(charge);
      sum += charge;
    }
    bool still = true;
    for (int lane = 0; lane < kLanes && still; ++lane)
      still = __atomic_load_n(&slot_device(slot, device, lane)->committed, __ATOMIC_ACQUIRE) == seqs[lane];
    if (still || attempt == kMaxCollects) return static_cast<int64_t>(sum);
  }
}

int64_t LedgerProtocol::SlotChargeOnePass(int slot, int device, int64_t* lanes) const {
  uint64_t sum = 0;
  for (int lane = 0; lane < kLanes; ++lane) {
    const uint64_t charge = __atomic_load_n(&slot_device(slot, device, lane)->charged, __ATOMIC_ACQUIRE);
    if (lanes != nullptr) lanes[lane] = static_cast<int64_t>(charge);
    sum += charge;
  }
  return static_cast<int64_t>(sum);
}

uint32_t LedgerProtocol::NegativeLanes(int slot, int device) const {
  uint32_t negative = 0;
  for (int lane = 0; lane < kLanes; ++lane) {
    const uint64_t charge = __atomic_load_n(&slot_device(slot, device, lane)->charged, __ATOMIC_RELAXED);
    if (static_cast<int64_t>(charge) < 0) negative |= uint32_t{1} << lane;
  }
  return negative;
}

bool LedgerProtocol::Apply(int slot, int lane, int device, int64_t delta, bool check_cap) {
  layout::SlotDevice* own = slot_device(slot, device, lane);
  // 1. Journal the op under the lane's next sequence number. Only the thread holding this lane
  //    of the slot writes J, and no device word names (slot, lane, seq) yet, so nobody reads
  //    it before the CAS below.
  const uint64_t seq = layout::NextSeq(Load128(&own->charged).high);
  __atomic_store_n(&own->journal_bytes, static_cast<uint64_t>(delta), __ATOMIC_RELAXED);
  __atomic_store_n(&own->journal_seq, seq, __ATOMIC_RELEASE);
  CrashAt(CrashStep::kAfterJournal);

  // 2. Publish it in the device word by one CAS, after finishing whatever op is there: the
  //    word names at most one uncommitted op, so D.used - (that op) == sum of committed charges.
  const uint64_t op = layout::PackOp(slot, lane, seq);
  void* word = device_word(device);
  for (;;) {
    const Word128 before = Load128(word);
    Help(device, before.high);
    if (delta > 0 && check_cap) {
      const uint64_t cap = Cap(device);
      // Refused: J stays inert because no device word will ever name (slot, lane, seq); the
      // next op of this lane reuses seq and overwrites it.
      if (before.low > cap || static_cast<uint64_t>(delta) > cap - before.low) return false;
    } else if (delta > 0 && static_cast<uint64_t>(delta) > ~uint64_t{0} - before.low) {
      // An uncapped credit (settle) onto a total only a corrupting writer can have made this
      // large: saturate rather than wrap. J may be rewritten: no device word names it yet.
      delta = static_cast<int64_t>(std::min<uint64_t>(~uint64_t{0} - before.low, uint64_t{1} << 62));
      __atomic_store_n(&own->journal_bytes, static_cast<uint64_t>(delta), __ATOMIC_RELAXED);
    } else if (delta < 0 && before.low < static_cast<uint64_t>(-delta)) {
      // Never let the total wrap. Reached after a double release or corruption (a process's
      // lanes sum to at most what it reserved, and the total includes that).
      delta = -static_cast<int64_t>(before.low);
      __atomic_store_n(&own->journal_bytes, static_cast<uint64_t>(delta), __ATOMIC_RELAXED);
    }
    if (Cas128(word, before, Word128{before.low + static_cast<uint64_t>(delta), op})) break;
  }
  CrashAt(CrashStep::kAfterDeviceCas);

  // 3. Commit it to the lane (or find a helper did).
  Help(device, op);
  CrashAt(CrashStep::kAfterCommit);
  return true;
}

void LedgerProtocol::Help(int device, uint64_t last) {
  const int slot = layout::OpSlot(last);
  if (slot < 0 || slot >= kMaxProcesses) return;  // no op, or garbage
  const int lane = layout::OpLane(last);
  const uint64_t seq = layout::OpSeq(last);
  layout::SlotDevice* target = slot_device(slot, device, lane);
  const Word128 c = Load128(&target->charged);
  // Only the op right after the committed one can be pending: the lane cannot start op q+1
  // before q is committed. Anything else is committed already (or a stale snapshot).
  if (layout::NextSeq(c.high) != seq) return;
  if (__atomic_load_n(&target->journal_seq, __ATOMIC_ACQUIRE) != seq) return;
  const uint64_t bytes = __atomic_load_n(&target->journal_bytes, __ATOMIC_RELAXED);
  // If J was read torn (the lane committed `seq` and began seq+1 meanwhile), C has moved on
  // and this CAS fails: whoever gets here first commits, the others fail harmlessly.
  // Two's-complement addition: the lane's charge is signed.
  Cas128(&target->charged, c, Word128{c.low + bytes, seq});
}

uint64_t LedgerProtocol::CreditBudget(int slot, int device) const {
  // A slot's lanes net to what the process holds, never below zero: a release on one lane
  // credits a reservation on another lane of the same slot. So all the credits together are
  // at most what the positive lanes hold; past that, or past the 1 PiB a ledger's total may
  // show (MapLedger refuses a file beyond it), a credit is garbage.
  uint64_t positive = 0;
  for (int lane = 0; lane < kLanes; ++lane) {
    const int64_t charge = LaneCharge(slot, device, lane);
    if (charge > 0) positive = std::min(positive + static_cast<uint64_t>(charge), kMaxCredit);
  }
  const uint64_t used = Used(device);
  return std::min(positive, used >= kMaxCredit ? 0 : kMaxCredit - used);
}

void LedgerProtocol::Settle(int slot, bool reaping) {
  for (int device = 0; device < static_cast<int>(device_count_); ++device) {
    // An op of this slot that reached the device word is either still named there (commit
    // it now) or was committed by whoever CAS'd the word after it. An op that never reached
    // it is inert. So after this Help, every lane's C is final.
    Help(device, Load128(device_word(device)).high);
    // Credits first: a negative lane means memory reserved on another lane of this slot was
    // released here, so the total over-counts nothing while the positive lanes still stand.
    // Taking the positive lanes first would let the total dip below what the other processes
    // hold, where a concurrent Reserve could be admitted past the cap and a clamp lose bytes.
    uint64_t credit_left = CreditBudget(slot, device);
    for (int pass = 0; pass < 2; ++pass) {
      const bool credits = pass == 0;
      for (int lane = 0; lane < kLanes; ++lane) {
        const int64_t charge = LaneCharge(slot, device, lane);
        if (credits ? charge >= 0 : charge <= 0) continue;
        if (credits) {
          // Garbage past the budget is cleared below without touching the total.
          const uint64_t credit = std::min(0 - static_cast<uint64_t>(charge), credit_left);
          credit_left -= credit;
          if (credit == 0) continue;
          Apply(slot, lane, device, static_cast<int64_t>(credit), /*check_cap=*/false);
        } else {
          // A charge above the device total is garbage; Apply clamps it to the total.
          const uint64_t debit = std::min<uint64_t>(static_cast<uint64_t>(charge), uint64_t{1} << 62);
          Apply(slot, lane, device, -static_cast<int64_t>(debit), /*check_cap=*/false);
        }
        if (reaping && device == 0) CrashAt(CrashStep::kAfterReapOp);
      }
    }
    // After corruption or a clamp a lane may keep a residue: the slot holds nothing now.
    for (int lane = 0; lane < kLanes; ++lane) {
      void* c_word = &slot_device(slot, device, lane)->charged;
      for (;;) {
        const Word128 c = Load128(c_word);
        if (c.low == 0 || Cas128(c_word, c, Word128{0, c.high})) break;
      }
    }
  }
}

int LedgerProtocol::Claim(const ProcessId& self) {
  for (int slot = 0; slot < kMaxProcesses; ++slot) {
    void* word = slot_header(slot);
    const Word128 identity = Load128(word);
    if (static_cast<uint32_t>(identity.low) != layout::kFree) continue;
    // The pid and start time go in with the state, so a CLAIMING slot always names its
    // claimer and can be reaped if the claimer dies before LIVE.
    if (!Cas128(word, identity, PackIdentity(layout::kClaiming, self))) continue;
    CrashAt(CrashStep::kAfterClaim);
    __atomic_fetch_add(&slot_header(slot)->generation, 1u, __ATOMIC_RELAXED);
    Settle(slot, /*reaping=*/false);  // a FREE slot holds nothing, unless someone scribbled on it
    if (MakeLive(slot, self)) return slot;
  }
  return -1;
}

bool LedgerProtocol::MakeLive(int slot, const ProcessId& self) {
  void* word = slot_header(slot);
  for (;;) {
    const Word128 identity = Load128(word);
    const auto state = static_cast<uint32_t>(identity.low);
    if (identity != PackIdentity(state, self) || (state != layout::kClaiming && state != layout::kLive))
      return false;
    if (state == layout::kLive || Cas128(word, identity, PackIdentity(layout::kLive, self))) return true;
  }
}

void LedgerProtocol::Free(int slot, const ProcessId& self, uint32_t state) {
  // Fails only if the slot no longer names us, in which case it is not ours to free.
  Cas128(slot_header(slot), PackIdentity(state, self), Word128{});
}

bool LedgerProtocol::LooksDead(int slot, const SlotIdentity& identity) const {
  if (identity.state > layout::kReaping || identity.process.pid <= 0) return true;
  for (int device = 0; device < static_cast<int>(device_count_); ++device) {
    for (int lane = 0; lane < kLanes; ++lane) {
      // A plain 64-bit load: this scans every live process's lanes, and a CAS-load would pull
      // their cache lines away from them.
      const auto charge = static_cast<int64_t>(
          __atomic_load_n(&slot_device(slot, device, lane)->charged, __ATOMIC_RELAXED));
      const uint64_t magnitude = charge < 0 ? 0 - static_cast<uint64_t>(charge) : static_cast<uint64_t>(charge);
      if (magnitude > layout::kMaxBytes) return true;
    }
  }
  return IsProcessDead(identity.process.pid, identity.process.start_time);
}

int LedgerProtocol::ReapDead(const ProcessId& self) {
  int reaped = 0;
  for (int slot = 0; slot < kMaxProcesses; ++slot) {
    const SlotIdentity identity = Identity(slot);
    if (identity.state == layout::kFree) continue;
    if (identity.process == self) continue;  // ours: alive by definition
    if (!LooksDead(slot, identity)) continue;
    // Whoever wins this CAS operates the slot; the identity now names the reaper, so a
    // reaper that dies here is itself a dead process whose REAPING slot can be taken over.
    if (!Cas128(slot_header(slot), PackIdentity(identity.state, identity.process),
                PackIdentity(layout::kReaping, self)))
      continue;
    CrashAt(CrashStep::kMidReap);
    Settle(slot, /*reaping=*/true);
    Free(slot, self, layout::kReaping);
    ++reaped;
  }
  return reaped;
}

}  // namespace fgpu::slice
