// The counters in a mapped ledger's header (layout::LedgerHeader, docs/slice-format.md
// "Counters"): how Ledger and SliceAdmin add to and read them.
//
// Contract
// - `ledger` is the base of a ledger mapping validated by MapLedger (read-write, at least the
//   64-byte header), so every word is there and aligned.
// - CountIn is one relaxed __atomic_fetch_add: the counters order nothing, and a refusal is
//   already the slow path. No syscall, lock or allocation; async-signal-safe (the fork handler
//   uses it). ReadCounters is five relaxed loads; the five need not be one snapshot.
#pragma once

#include "slice/layout.h"
#include "slice/slice.h"

namespace fgpu::slice {

enum class Counter { kOomRefusals, kFailClosedRefusals, kComputeUnenforced, kNoFreeSlot, kPassThrough };

inline void CountIn(char* ledger, Counter counter) {
  auto* header = reinterpret_cast<layout::LedgerHeader*>(ledger);
  switch (counter) {
    case Counter::kOomRefusals:
      __atomic_fetch_add(&header->oom_refusals, 1, __ATOMIC_RELAXED);
      return;
    case Counter::kFailClosedRefusals:
      __atomic_fetch_add(&header->fail_closed_refusals, 1, __ATOMIC_RELAXED);
      return;
    case Counter::kComputeUnenforced:
      __atomic_fetch_add(&header->compute_unenforced, 1, __ATOMIC_RELAXED);
      return;
    case Counter::kNoFreeSlot:
      __atomic_fetch_add(&header->no_free_slot, 1, __ATOMIC_RELAXED);
      return;
    case Counter::kPassThrough:
      __atomic_fetch_add(&header->pass_through, 1, __ATOMIC_RELAXED);
      return;
  }
}

inline LedgerCounters ReadCounters(const char* ledger) {
  const auto* header = reinterpret_cast<const layout::LedgerHeader*>(ledger);
  LedgerCounters counters;
  counters.oom_refusals = __atomic_load_n(&header->oom_refusals, __ATOMIC_RELAXED);
  counters.fail_closed_refusals = __atomic_load_n(&header->fail_closed_refusals, __ATOMIC_RELAXED);
  counters.compute_unenforced = __atomic_load_n(&header->compute_unenforced, __ATOMIC_RELAXED);
  counters.no_free_slot = __atomic_load_n(&header->no_free_slot, __ATOMIC_RELAXED);
  counters.pass_through = __atomic_load_n(&header->pass_through, __ATOMIC_RELAXED);
  return counters;
}

}  // namespace fgpu::slice
