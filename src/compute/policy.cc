// The arbitration rules (see policy.h and docs/compute.md "Algorithm").
#include "compute/policy.h"

#include <algorithm>

namespace fgpu::compute {
namespace {

bool Waiting(const RowView& row, int64_t now_ns, const Policy& policy) {
  return row.live && now_ns - row.demand_ns <= policy.demand_fresh_ns && !OverCap(row, 0, now_ns, policy);
}

// Who goes first on a free GPU: owed slices before the rest, then the higher tier (strict
// priority: the tier first, then owed).
int Rank(const RowView& row, int64_t now_ns, const Policy& policy) {
  const int owed = Owed(row, now_ns, false, policy) ? 1 : 0;
  const int tier = static_cast<int>(row.tier);
  return policy.strict_priority ? tier * 2 + owed : owed * 3 + tier;
}

// The waiter of `tier` that deserves the GPU next: the least virtual time (the slice furthest
// behind its share), lowest index on ties. -1 if none is waiting.
int MostDeserving(std::span<const RowView> rows, int owner, Tier tier, int64_t now_ns, const Policy& policy) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const RowView& row = rows[i];
    if (i == owner || row.tier != tier || !Waiting(row, now_ns, policy)) continue;
    if (best < 0 || row.vtime < rows[best].vtime) best = i;
  }
  return best;
}

int HighestWaitingRank(std::span<const RowView> rows, int64_t now_ns, const Policy& policy) {
  int highest = -1;
  for (const RowView& row : rows) {
    if (Waiting(row, now_ns, policy)) highest = std::max(highest, Rank(row, now_ns, policy));
  }
  return highest;
}

// Within a tier: take the owner's turn once it is idle, or once it leads the most deserving
// waiter (us) by `slack` of virtual time.
TakeReason SameTierTake(std::span<const RowView> rows, int owner, int me, int64_t now_ns, const Policy& policy) {
  const RowView& self = rows[me];
  const RowView& held = rows[owner];
  if (Idle(held, now_ns, nullptr, policy)) return TakeReason::kOwnerIdle;
  if (MostDeserving(rows, owner, self.tier, now_ns, policy) != me) return TakeReason::kNo;
  if (held.vtime > self.vtime + static_cast<uint64_t>(policy.slack_ns)) return TakeReason::kTurnOver;
  return TakeReason::kNo;
}

// Strict priority: a higher tier takes the GPU at once; a lower one waits for the owner to idle
// (a latency owner: for its hold).
TakeReason StrictTake(const RowView& self, const RowView& held, int64_t now_ns, const Policy& policy) {
  if (self.tier > held.tier) return TakeReason::kHigherTier;
  if (Idle(held, now_ns, nullptr, policy)) return TakeReason::kOwnerIdle;
  return TakeReason::kNo;
}

// Guarantees before tiers: a higher tier takes the GPU at once unless the owner is owed; a lower
// tier takes it when it is owed and the owner is not, or uses the owner's gaps.
TakeReason CrossTierTake(const RowView& self, const RowView& held, int64_t now_ns, const Policy& policy) {
  const bool held_owed = Owed(held, now_ns, true, policy);
  if (self.tier > held.tier) {
    if (!held_owed) return TakeReason::kHigherTier;
    return Idle(held, now_ns, nullptr, policy) ? TakeReason::kOwnerIdle : TakeReason::kNo;
  }
  if (!held_owed && Owed(self, now_ns, false, policy)) return TakeReason::kOwed;
  return Idle(held, now_ns, &self, policy) ? TakeReason::kOwnerIdle : TakeReason::kNo;
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

bool Idle(const RowView& row, int64_t now_ns, const RowView* lender, const Policy& policy) {
  const int64_t last = std::max({row.demand_ns, row.activity_ns, row.inflight_until_ns});
  int64_t hold = policy.idle_ns;
  if (lender != nullptr) {
    hold = policy.lend_idle_ns;
    if (lender->launch_estimate_ns > policy.max_inflight_ns && Owed(row, now_ns, true, policy) &&
        !Owed(*lender, now_ns, false, policy))
      hold = lender->launch_estimate_ns;
  }
  if (policy.strict_priority && row.tier == Tier::kLatency) hold = policy.latency_hold_ns;
  return now_ns - last > hold;
}

bool Owed(const RowView& row, int64_t now_ns, bool as_owner, const Policy& policy) {
  if (row.share >= 100) return false;  // nothing to be owed beyond everything
  const int64_t behind = now_ns - row.tat_ns;
  return as_owner ? behind > 0 : behind > policy.owed_after_ns;
}

TakeReason ShouldTake(std::span<const RowView> rows, int owner, int me, int64_t now_ns, const Policy& policy) {
  const RowView& self = rows[me];
  if (OverCap(self, 0, now_ns, policy)) return TakeReason::kNo;
  if (owner < 0 || owner >= static_cast<int>(rows.size())) {
    // Free GPU: the highest waiting rank goes first, then the least virtual time in its tier.
    if (Rank(self, now_ns, policy) < HighestWaitingRank(rows, now_ns, policy)) return TakeReason::kNo;
    const int best = MostDeserving(rows, -1, self.tier, now_ns, policy);
    if (best >= 0 && best != me && rows[best].vtime + static_cast<uint64_t>(policy.slack_ns) < self.vtime)
      return TakeReason::kNo;
    return TakeReason::kNobodyOwns;
  }
  const RowView& held = rows[owner];
  if (!held.live) return TakeReason::kOwnerGone;
  if (OverCap(held, 0, now_ns, policy)) return TakeReason::kOwnerCapped;
  if (self.tier == held.tier) return SameTierTake(rows, owner, me, now_ns, policy);
  return policy.strict_priority ? StrictTake(self, held, now_ns, policy) : CrossTierTake(self, held, now_ns, policy);
}

const char* ToString(TakeReason reason) {
  switch (reason) {
    case TakeReason::kNo: return "no";
    case TakeReason::kNobodyOwns: return "nobody-owns";
    case TakeReason::kOwnerGone: return "owner-gone";
    case TakeReason::kOwnerCapped: return "owner-capped";
    case TakeReason::kOwed: return "owed";
    case TakeReason::kHigherTier: return "higher-tier";
    case TakeReason::kOwnerIdle: return "owner-idle";
    case TakeReason::kTurnOver: return "turn-over";
  }
  return "?";
}

}  // namespace fgpu::compute
