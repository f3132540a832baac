#include "slice/ledger_protocol.h"

#include <algorithm>

#include "slice/process_liveness.h"

namespace fgpu::slice {

SlotIdentity LedgerProtocol::Identity(int slot) const {
  const Word128 word = Load128(slot_header(slot));
  SlotIdentity identity;
  identity.state = static_cast<uint32_t>(word.low);
  identity.process.pid = static_cast<int32_t>(static_cast<uint32_t>(word.low >> 32));
  identity.process.start_time = word.high;
  return identity;
}

bool LedgerProtocol::Apply(int slot, int device, int64_t delta, bool check_cap) {
  layout::SlotDevice* own = slot_device(slot, device);
  // 1. Journal the op under the next sequence number. Only this slot's operator writes J,
  //    and no device word names (slot, seq) yet, so nobody reads it before the CAS below.
  const uint64_t seq = layout::NextSeq(Load128(&own->charged).high);
  __atomic_store_n(&own->journal_bytes, static_cast<uint64_t>(delta), __ATOMIC_RELAXED);
  __atomic_store_n(&own->journal_seq, seq, __ATOMIC_RELEASE);
  CrashAt(CrashStep::kAfterJournal);

  // 2. Publish it in the device word by one CAS, after finishing whatever op is there: the
  //    word names at most one uncommitted op, so D.used - (that op) == sum of committed charges.
  const uint64_t op = layout::PackOp(slot, seq);
  void* word = device_word(device);
  for (;;) {
    const Word128 before = Load128(word);
    Help(device, before.high);
    if (delta > 0 && check_cap) {
      const uint64_t cap = Cap(device);
      // Refused: J stays inert because no device word will ever name (slot, seq); the next
      // op of this slot reuses seq and overwrites it.
      if (before.low > cap || static_cast<uint64_t>(delta) > cap - before.low) return false;
    } else if (delta < 0 && before.low < static_cast<uint64_t>(-delta)) {
      // Only reachable after someone corrupted the ledger: never let the total wrap. J may
      // still be rewritten: it is read only once a device word names this op.
      delta = -static_cast<int64_t>(before.low);
      __atomic_store_n(&own->journal_bytes, static_cast<uint64_t>(delta), __ATOMIC_RELAXED);
    }
    if (Cas128(word, before, Word128{before.low + static_cast<uint64_t>(delta), op})) break;
  }
  CrashAt(CrashStep::kAfterDeviceCas);

  // 3. Commit it to the slot (or find a helper did).
  Help(device, op);
  CrashAt(CrashStep::kAfterCommit);
  return true;
}

void LedgerProtocol::Help(int device, uint64_t last) {
  const int slot = layout::OpSlot(last);
  if (slot < 0 || slot >= kMaxProcesses) return;  // no op, or garbage
  const uint64_t seq = layout::OpSeq(last);
  layout::SlotDevice* target = slot_device(slot, device);
  const Word128 c = Load128(&target->charged);
  // Only the op right after the committed one can be pending: the slot cannot start op q+1
  // before q is committed. Anything else is committed already (or a stale snapshot).
  if (layout::NextSeq(c.high) != seq) return;
  if (__atomic_load_n(&target->journal_seq, __ATOMIC_ACQUIRE) != seq) return;
  const uint64_t bytes = __atomic_load_n(&target->journal_bytes, __ATOMIC_RELAXED);
  // If J was read torn (the slot committed `seq` and began seq+1 meanwhile), C has moved on
  // and this CAS fails: whoever gets here first commits, the others fail harmlessly.
  Cas128(&target->charged, c, Word128{c.low + bytes, seq});
}

void LedgerProtocol::Settle(int slot, bool reaping) {
  for (int device = 0; device < static_cast<int>(device_count_); ++device) {
    // An op of this slot that reached the device word is either still named there (commit
    // it now) or was committed by whoever CAS'd the word after it. An op that never reached
    // it is inert. So after this Help, C is final.
    Help(device, Load128(device_word(device)).high);
    void* c_word = &slot_device(slot, device)->charged;
    const uint64_t charged = Load128(c_word).low;
    if (charged != 0) {
      // A charge above the device total is garbage; Apply clamps it to the total.
      const uint64_t amount = std::min<uint64_t>(charged, uint64_t{1} << 62);
      Apply(slot, device, -static_cast<int64_t>(amount), /*check_cap=*/false);
      if (reaping && device == 0) CrashAt(CrashStep::kAfterReapOp);
    }
    // After corruption the clamped release may leave a residue: the slot holds nothing now.
    for (;;) {
      const Word128 c = Load128(c_word);
      if (c.low == 0 || Cas128(c_word, c, Word128{0, c.high})) break;
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
    if (Charged(slot, device) > layout::kMaxBytes) return true;
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
