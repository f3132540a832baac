// Limiter: the launch gate and the measured-time accounting (see limiter.h).
#include "compute/limiter.h"

#include <algorithm>

namespace fgpu::compute {
namespace {

// A launch is never estimated below this, so a run of empty kernels still fills the queue bound.
constexpr int64_t kMinEstimateNs = 100;

uint64_t Virtual(int64_t busy_ns, uint32_t share) {
  return static_cast<uint64_t>(busy_ns) * 100 / std::max<uint32_t>(share, 1);
}

// clock = max(clock, floor) + by, atomically (several processes of a slice charge one row).
void AdvanceClock(int64_t* clock, int64_t floor, int64_t by) {
  int64_t value = LoadI64(clock);
  while (!__atomic_compare_exchange_n(clock, &value, std::max(value, floor) + by, true, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
  }
}

}  // namespace

void Limiter::Configure(uint32_t share, Mode mode, Tier tier) {
  cap_resume_at_ns_.store(0, std::memory_order_relaxed);  // a raised cap applies at once
  // A managed board's settings are the agent's (its policy table): nothing of ours to publish.
  if (board_->has_policy()) return;
  layout::BoardEntry* row = entry();
  __atomic_store_n(&row->share, std::clamp<uint32_t>(share, 1, 100), __ATOMIC_RELEASE);
  __atomic_store_n(&row->mode_tier,
                   layout::PackModeTier(static_cast<uint8_t>(mode), static_cast<uint8_t>(tier)), __ATOMIC_RELEASE);
}

RowView Limiter::ReadRow(int index) const {
  const layout::BoardEntry* row = board_->entry(index);
  RowView view;
  view.live = board_->RowKey(index) != 0;
  view.share = __atomic_load_n(board_->share_word(index), __ATOMIC_ACQUIRE);
  const uint32_t mode_tier = __atomic_load_n(board_->mode_tier_word(index), __ATOMIC_ACQUIRE);
  view.mode = static_cast<Mode>(mode_tier & 0xff) == Mode::kCap ? Mode::kCap : Mode::kShare;
  view.tier = static_cast<Tier>(std::min<uint32_t>((mode_tier >> 8) & 0xff, 2));
  view.demand_ns = LoadI64(&row->demand_ns);
  view.activity_ns = LoadI64(&row->activity_ns);
  view.inflight_until_ns = LoadI64(&row->inflight_until_ns);
  view.vtime = LoadU64(&row->vtime);
  view.tat_ns = LoadI64(&row->tat_ns);
  return view;
}

void Limiter::NoteDemand(int64_t now_ns) {
  layout::BoardEntry* row = entry();
  const int64_t previous = LoadI64(&row->demand_ns);
  if (now_ns - previous < kDemandRefreshNs) return;
  StoreI64(&row->demand_ns, now_ns);
  if (IsLatencyTier()) StoreI64(&board_->header()->latency_demand_ns, now_ns);
  if (now_ns - previous > policy_.idle_credit_ns) {
    // Back from idle: no credit for the time it did not want the GPU (it would otherwise
    // monopolise it to "catch up"). Start at most `slack` behind the most advanced owner.
    const uint64_t vclock = LoadU64(&board_->header()->vclock);
    const uint64_t floor = vclock > static_cast<uint64_t>(policy_.slack_ns) ? vclock - policy_.slack_ns : 0;
    StoreMax(&row->vtime, floor);
    StoreMax(&row->tat_ns, now_ns - policy_.rate_credit_ns);  // nor more owed time than it may bank
  }
}

Admission Limiter::TakeOver(int64_t now_ns) {
  layout::BoardHeader* header = board_->header();
  uint64_t owner = LoadU64(&header->owner);
  if (layout::OwnerEntry(owner) == row_) return Admission{};
  RowView rows[layout::kEntryCount];
  for (int i = 0; i < static_cast<int>(layout::kEntryCount); ++i) rows[i] = ReadRow(i);
  rows[row_].launch_estimate_ns = LongestLaunchEstimate();
  const TakeReason reason = ShouldTake(rows, layout::OwnerEntry(owner), row_, now_ns, policy_);
  if (reason == TakeReason::kNo) {
    // Outranked: the owner keeps the GPU until it idles for its hold time, so look less often
    // (a waiter's polling costs the owner's host threads CPU time).
    const int held_by = layout::OwnerEntry(owner);
    const bool outranked = held_by >= 0 && rows[held_by].tier > rows[row_].tier;
    return Admission{Admission::kWait, now_ns + (outranked ? policy_.outranked_poll_ns : policy_.poll_ns), reason};
  }
  const uint64_t next = layout::PackOwner(row_, layout::OwnerEpoch(owner) + 1);
  if (!__atomic_compare_exchange_n(&header->owner, &owner, next, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return Admission{Admission::kWait, now_ns, TakeReason::kNo};  // someone else moved first: look again
  StoreI64(&header->grant_ns, now_ns);
  return Admission{Admission::kGo, 0, reason};
}

Admission Limiter::TryAdmitSlow(int64_t now_ns) {
  NoteDemand(now_ns);
  const uint64_t owner = LoadU64(&board_->header()->owner);
  Admission admission;
  if (layout::OwnerEntry(owner) != row_) {
    admission = TakeOver(now_ns);
    if (admission.verdict == Admission::kWait) return admission;
  }
  const int64_t queued = queued_ns();
  const layout::BoardEntry* row = entry();
  const uint32_t mode_tier = __atomic_load_n(mode_tier_, __ATOMIC_RELAXED);
  if (static_cast<Mode>(mode_tier & 0xff) == Mode::kCap) {
    RowView self;
    self.mode = Mode::kCap;
    self.share = __atomic_load_n(share_, __ATOMIC_RELAXED);
    self.tat_ns = LoadI64(&row->tat_ns);
    const int64_t resume_at = cap_resume_at_ns_.load(std::memory_order_relaxed);
    if (now_ns < resume_at) return Admission{Admission::kWait, resume_at, admission.took};
    const int64_t ready = CapReadyAt(self, queued, policy_);
    if (now_ns < ready) {
      const int64_t until = std::max(ready + policy_.cap_resume_ns, now_ns + policy_.poll_ns / 4);
      cap_resume_at_ns_.store(until, std::memory_order_relaxed);
      return Admission{Admission::kWait, until, admission.took};
    }
  }
  if (queued > InflightBound(now_ns) && pending_marks_.load(std::memory_order_relaxed) > 0) {
    return Admission{Admission::kWait, now_ns + std::min(policy_.poll_ns, queued / 4), admission.took};
  }
  return admission;
}

void Limiter::OnWaited(int64_t waited_ns) {
  __atomic_fetch_add(&entry()->throttled_ns, static_cast<uint64_t>(std::max<int64_t>(waited_ns, 0)), __ATOMIC_RELAXED);
}

void Limiter::OnThrottled() { __atomic_fetch_add(&entry()->throttles, 1, __ATOMIC_RELAXED); }

void Limiter::OnMarkComplete(const Mark& mark, int64_t completed_ns, int64_t device_ns) {
  layout::BoardHeader* header = board_->header();
  layout::BoardEntry* row = entry();
  // Occupancy: the batch could not start before its first launch, nor before the work that
  // completed before it (anyone's on this GPU: the previous owner's tail drains first).
  const int64_t previous = std::max(LoadI64(&header->last_completion_ns), last_completion_ns_.load());
  const int64_t start = std::max(mark.first_launch_ns, previous);
  int64_t busy = std::max<int64_t>(completed_ns - start, 0);
  if (device_ns >= 0) busy = std::min(busy, device_ns);
  if (mark.late) busy = std::min(busy, mark.estimated_ns);
  StoreMax(&header->last_completion_ns, completed_ns);
  last_completion_ns_.store(std::max(last_completion_ns_.load(), completed_ns));

  const uint32_t share = __atomic_load_n(share_, __ATOMIC_RELAXED);
  const uint64_t virtual_busy = Virtual(busy, share);
  const uint64_t vtime = __atomic_add_fetch(&row->vtime, virtual_busy, __ATOMIC_ACQ_REL);
  StoreMax(&header->vclock, vtime);
  __atomic_fetch_add(&row->busy_ns, static_cast<uint64_t>(busy), __ATOMIC_RELAXED);
  __atomic_fetch_add(&row->launches, mark.launches, __ATOMIC_RELAXED);
  // GCRA: the rate clock keeps at most rate_credit_ns of the share the slice did not use (a cap
  // slice delayed by another's long kernel catches up within it; docs/compute.md "Guarantees").
  AdvanceClock(&row->tat_ns, start - policy_.rate_credit_ns, static_cast<int64_t>(virtual_busy));
  StoreMax(&row->activity_ns, completed_ns);

  if (mark.launches > 0 && !mark.late) {
    auto& estimate = estimate_ns_[static_cast<int>(mark.kind)];
    const int64_t per_launch = std::max<int64_t>(busy / mark.launches, kMinEstimateNs);
    const int64_t old = estimate.load(std::memory_order_relaxed);
    estimate.store(old == kUnknownEstimateNs ? per_launch : (3 * old + per_launch) / 4, std::memory_order_relaxed);
  }
  queued_ns_.fetch_sub(mark.estimated_ns, std::memory_order_relaxed);
  pending_marks_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace fgpu::compute
