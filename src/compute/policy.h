// The arbitration policy: who may launch on a shared GPU, decided from a snapshot of the board
// by the process that wants to launch (docs/compute.md "Algorithm"). Pure functions of their
// arguments: no clock, no shared memory, so every rule is unit-tested with made-up numbers.
//
// The GPU is time-sliced between slices, as the hardware time-slices between contexts, but
// weighted: one slice at a time is the *owner* and may queue work; a slice that wants to launch
// takes the GPU over when the rules below say the owner has had its turn.
#pragma once

#include <cstdint>
#include <span>

#include "slice/slice.h"

namespace fgpu::compute {

// A slice's settings, as its limits file holds them (slice.h).
using Mode = slice::ComputeMode;
using Tier = slice::Tier;

struct Policy {
  // An owner keeps the GPU until its virtual time leads the most deserving waiter's by this
  // much. A full rotation among saturating slices therefore lasts about 2·slack of real time.
  int64_t slack_ns = 5'000'000;
  // An owner that has launched nothing, completed nothing and has nothing queued for this long
  // is idle (or dead): anyone may take the GPU.
  int64_t idle_ns = 1'000'000;
  // A waiter the owner outranks may use the GPU once the owner has had nothing to run for this
  // long: idle time goes to whoever wants it (the owner outranks it when it asks again).
  int64_t lend_idle_ns = 50'000;
  // Guarantees before tiers. A slice's rate clock (RowView::tat_ns, GCRA at its share) behind now
  // means it got less than its share: it is *owed*. Between tiers, an owed slice goes before one
  // that is not, whatever their tiers; otherwise the higher tier goes first. Within a tier,
  // weighted fair queueing on virtual time. A waiter is owed once its clock is this far behind;
  // an owner stays owed until its clock catches up with now.
  int64_t owed_after_ns = 2'000'000;
  // The rate clock restarts at most this far before a batch's start: a slice banks at most this
  // much of the share it did not use (virtual time). So a cap slice delayed by another's long
  // kernel catches up, and a slice back from idle is owed at most this much.
  int64_t rate_credit_ns = 10'000'000;
  // For this long after a latency-tier slice wanted to launch, a lower-tier process keeps at
  // most guarded_inflight_ns of estimated work queued beyond one closed batch, so a latency
  // request waits for little more than the kernel already running (a kernel is never preempted).
  int64_t latency_guard_ns = 20'000'000;
  int64_t guarded_inflight_ns = 200'000;
  // Strict priority (an admin's choice per GPU: node.conf `strict_priority`): a higher tier always
  // goes first, and a latency-tier owner keeps the GPU until it has been idle this long. Lower
  // tiers can then starve; the board counts what they waited (throttled time).
  bool strict_priority = false;
  int64_t latency_hold_ns = 20'000'000;
  // A slice that asked to launch within this window is "waiting".
  int64_t demand_fresh_ns = 2'000'000;
  // A slice that asked nothing for this long was idle: it comes back without credit for the
  // time it did not use (at most `slack` behind the most advanced slice).
  int64_t idle_credit_ns = 50'000'000;
  // Cap mode: a slice may run ahead of its rate by this much device time (GCRA tolerance).
  int64_t cap_tolerance_ns = 2'000'000;
  // Cap mode: a slice that ran ahead waits until it is this far under its limit, so it runs in
  // bursts that start on an idle queue (device-timed: exact) rather than one launch at a time,
  // each charged the delay before its completion was seen. Below cap_tolerance_ns, so the rate
  // clock never restarts during the wait: no budget is lost.
  int64_t cap_resume_ns = 1'000'000;
  // The most estimated device time one process may have queued (bounds hand-over delay).
  int64_t max_inflight_ns = 2'000'000;
  // How long a waiter sleeps between looks at the board; and when it is outranked.
  int64_t poll_ns = 50'000;
  int64_t outranked_poll_ns = 100'000;
};

// One row of the board as read at one instant.
struct RowView {
  bool live = false;  // a slice holds the row
  uint32_t share = 100;
  Mode mode = Mode::kShare;
  Tier tier = Tier::kStandard;
  int64_t demand_ns = 0;
  int64_t activity_ns = 0;
  int64_t inflight_until_ns = 0;
  uint64_t vtime = 0;
  int64_t tat_ns = 0;
  // The waiter's own row only: the device time its longest launch is estimated to take.
  int64_t launch_estimate_ns = 0;
};

enum class TakeReason : uint8_t {
  kNo,           // wait
  kNobodyOwns,   // the GPU is free
  kOwnerGone,    // the owner's row was freed
  kOwnerCapped,  // the owner is a cap-mode slice over its rate
  kOwed,         // we got less than our share, the owner (of a higher tier) did not
  kHigherTier,   // a higher tier than the owner's, which is not owed
  kOwnerIdle,    // the owner has nothing to run (or died)
  kTurnOver,     // same tier: the owner leads the most deserving waiter (us) by more than slack
};

// When a cap-mode row may launch again, counting `queued_ns` of not yet measured work
// (INT64_MIN for a row that is not rate-limited).
int64_t CapReadyAt(const RowView& row, int64_t queued_ns, const Policy& policy);

// Whether a cap-mode row is over its rate now: now < CapReadyAt.
bool OverCap(const RowView& row, int64_t queued_ns, int64_t now_ns, const Policy& policy);

// Whether an owner row is idle for a waiter: nothing asked, launched, completed or queued for
// `idle_ns`; or, for a waiter of a lower tier (`lender`: the waiter's row), `lend_idle_ns`: the
// owner's gaps are idle time the waiter may use, and the owner takes the GPU back when it asks
// again, after the kernel the waiter started. An owed owner lends a waiter that is not owed and
// whose launches are longer than `max_inflight_ns` only a gap that long (a long kernel in each
// short gap would keep the owner from its share). A strict-priority latency owner: its hold.
bool Idle(const RowView& row, int64_t now_ns, const RowView* lender, const Policy& policy);

// Whether a row got less than its share: its rate clock is behind now by more than
// `owed_after_ns` (a waiter) or at all (the owner). Share and cap rows alike.
bool Owed(const RowView& row, int64_t now_ns, bool as_owner, const Policy& policy);

// Whether row `me` (waiting to launch) may take the GPU from `owner` (-1: nobody).
TakeReason ShouldTake(std::span<const RowView> rows, int owner, int me, int64_t now_ns, const Policy& policy);

const char* ToString(TakeReason reason);

}  // namespace fgpu::compute
