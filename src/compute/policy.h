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
  // The same for a latency-tier owner: lower tiers stay throttled between its requests.
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
  // How long a waiter sleeps between looks at the board; and when a higher tier holds the GPU.
  int64_t poll_ns = 50'000;
  int64_t outranked_poll_ns = 1'000'000;
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
};

enum class TakeReason : uint8_t {
  kNo,           // wait
  kNobodyOwns,   // the GPU is free
  kOwnerGone,    // the owner's row was freed
  kOwnerCapped,  // the owner is a cap-mode slice over its rate
  kHigherTier,   // we outrank the owner
  kOwnerIdle,    // the owner has nothing to run (or died)
  kTurnOver,     // same tier: the owner leads the most deserving waiter (us) by more than slack
};

// When a cap-mode row may launch again, counting `queued_ns` of not yet measured work
// (INT64_MIN for a row that is not rate-limited).
int64_t CapReadyAt(const RowView& row, int64_t queued_ns, const Policy& policy);

// Whether a cap-mode row is over its rate now: now < CapReadyAt.
bool OverCap(const RowView& row, int64_t queued_ns, int64_t now_ns, const Policy& policy);

// Whether an owner row is idle: nothing asked, launched, completed or queued for its hold time.
bool Idle(const RowView& row, int64_t now_ns, const Policy& policy);

// Whether row `me` (waiting to launch) may take the GPU from `owner` (-1: nobody).
TakeReason ShouldTake(std::span<const RowView> rows, int owner, int me, int64_t now_ns, const Policy& policy);

const char* ToString(TakeReason reason);

}  // namespace fgpu::compute
