// The arbitration rules (see policy.h and docs/compute.md "Algorithm").
#include "compute/policy.h"

#include <algorithm>

namespace fgpu::compute {
namespace {

bool Waiting(const RowView& row, int64_t now_ns, const Policy& policy) {
  return row.live && now_ns - row.demand_ns <= policy.demand_fresh_ns;
}

// The waiter that deserves the GPU next among rows of `tier`: the least virtual time (the
// slice furthest behind its share), lowest index on ties. -1 if none is waiting.
int MostDeserving(std::span<const RowView> rows, int owner, Tier tier, int64_t now_ns, const Policy& policy) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const RowView& row = rows[i];
    if (i == owner || row.tier != tier || !Waiting(row, now_ns, policy) || OverCap(row, 0, now_ns, policy)) continue;
    if (best < 0 || row.vtime < rows[best].vtime) best = i;
  }
  return best;
}

Tier HighestWaitingTier(std::span<const RowView> rows, int64_t now_ns, const Policy& policy) {
  Tier highest = Tier::kBatch;
  for (const RowView& row : rows) {
    if (Waiting(row, now_ns, policy) && !OverCap(row, 0, now_ns, policy)) highest = std::max(highest, row.tier);
  }
  return highest;
}

}  // namespace

int64_t CapReadyAt(const RowView& row, int64_t queued_ns, const Policy& policy) {
  if (row.mode != Mode::kCap || row.share >= 100 || row.share == 0) return INT64_MIN;
  const int64_t queued_debt = queued_ns * 100 / row.share;
  return row.tat_ns + queued_debt - policy.cap_tolerance_ns;
}

bool OverCap(const RowView& row, int64_t queued_ns, int64_t now_ns, const Policy& policy) {
  return now_ns < CapReadyAt(row, queued_ns, policy);
}

bool Idle(const RowView& row, int64_t now_ns, const Policy& policy) {
  const int64_t last = std::max({row.demand_ns, row.activity_ns, row.inflight_until_ns});
  const int64_t hold = row.tier == Tier::kLatency ? policy.latency_hold_ns : policy.idle_ns;
  return now_ns - last > hold;
}

TakeReason ShouldTake(std::span<const RowView> rows, int owner, int me, int64_t now_ns, const Policy& policy) {
  const RowView& self = rows[me];
  if (OverCap(self, 0, now_ns, policy)) return TakeReason::kNo;
  if (owner < 0 || owner >= static_cast<int>(rows.size())) {
    // Free GPU: the highest waiting tier, then the least virtual time, goes first.
    if (self.tier < HighestWaitingTier(rows, now_ns, policy)) return TakeReason::kNo;
    const int best = MostDeserving(rows, -1, self.tier, now_ns, policy);
    if (best >= 0 && best != me && rows[best].vtime + static_cast<uint64_t>(policy.slack_ns) < self.vtime)
      return TakeReason::kNo;
    return TakeReason::kNobodyOwns;
  }
  const RowView& held = rows[owner];
  if (!held.live) return TakeReason::kOwnerGone;
  if (OverCap(held, 0, now_ns, policy)) return TakeReason::kOwnerCapped;
  if (self.tier > held.tier) return TakeReason::kHigherTier;
  if (Idle(held, now_ns, policy)) return TakeReason::kOwnerIdle;
  if (self.tier < held.tier) return TakeReason::kNo;
  if (MostDeserving(rows, owner, self.tier, now_ns, policy) != me) return TakeReason::kNo;
  if (held.vtime > self.vtime + static_cast<uint64_t>(policy.slack_ns)) return TakeReason::kTurnOver;
  return TakeReason::kNo;
}

const char* ToString(TakeReason reason) {
  switch (reason) {
    case TakeReason::kNo: return "no";
    case TakeReason::kNobodyOwns: return "nobody-owns";
    case TakeReason::kOwnerGone: return "owner-gone";
    case TakeReason::kOwnerCapped: return "owner-capped";
    case TakeReason::kHigherTier: return "higher-tier";
    case TakeReason::kOwnerIdle: return "owner-idle";
    case TakeReason::kTurnOver: return "turn-over";
  }
  return "?";
}

}  // namespace fgpu::compute
