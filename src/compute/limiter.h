// Limiter: one process's view of one slice on one GPU board — the launch gate and the
// accounting of measured GPU time (docs/compute.md).
//
// Contract
// - TryAdmit(now) is called before every launch: kGo means launch now; kWait means sleep until
//   `until_ns` (or a little) and ask again. It never blocks, never allocates, makes no syscall;
//   the caller owns the waiting. With the GPU to itself and under its rate, it is a few atomic
//   loads and one relaxed store at most every 100 µs.
// - OnLaunched(now, kind) after the real launch succeeded; it returns the device time the
//   launch is estimated to take, which the caller adds to its open batch (Mark).
// - A Mark is a batch of launches closed by one completion marker (an event, in the hook).
//   ShouldClose says when the caller should close its open batch; OnMarkComplete(mark, c)
//   is called by the one completion thread, in the order marks were closed, with the time the
//   marker was observed complete and, when the batch carried a start marker, the device time
//   between the two markers (-1 without).
// - Measured time is *occupancy*: from when the batch could start (its first launch, or the
//   previous completion anyone observed on this GPU, whichever is later) to its observed
//   completion. Consecutive batches telescope, so observation jitter does not accumulate.
//   A batch is charged the smaller of that and its device-timed span: the host measure alone
//   charges a batch launched on an idle GPU the delay before its completion was observed (tens
//   of µs, which dominate small kernels), the device span alone would charge the tail of work
//   queued before it (another slice's, or an overlapping stream's). Both bound the truth from
//   above.
// - Thread-safety: TryAdmit/OnLaunched/ShouldClose from any thread; OnMarkComplete from one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "compute/board.h"
#include "compute/policy.h"

namespace fgpu::compute {

enum class LaunchKind : uint8_t { kKernel = 0, kGraph = 1 };

struct Mark {
  int64_t first_launch_ns = 0;
  uint32_t launches = 0;
  int64_t estimated_ns = 0;  // what OnLaunched estimated for the batch
  LaunchKind kind = LaunchKind::kKernel;
  bool timed = false;  // a start marker was recorded before its first launch
  // Closed after the launching thread had stopped (at its next launch): the marker completes
  // when it is recorded, not when the work did, so the batch is charged its estimate at most.
  bool late = false;
};

struct Admission {
  enum Verdict : uint8_t { kGo, kWait } verdict = kGo;
  int64_t until_ns = 0;  // kWait: when asking again can succeed (a hint)
  TakeReason took = TakeReason::kNo;  // kGo after taking the GPU over: why
};

class Limiter {
 public:
  // The row's settings are read through pointers set here, once: the board row's own words, or
  // on a board with a policy table (a managed node's) the policy row's, which only the agent writes.
  Limiter(Board* board, int row, const Policy& policy)
      : board_(board),
        row_(row),
        policy_(policy),
        share_(board->share_word(row)),
        mode_tier_(board->mode_tier_word(row)) {}

  // Publishes this slice's settings in its row (live: shares and tiers change at runtime). On a
  // board with a policy table the agent publishes them: only the local cap state is reset.
  void Configure(uint32_t share, Mode mode, Tier tier);

  // Inline for the common case (this slice owns the GPU, its demand stamp is fresh, share mode,
  // queue under the bound: kGo, nothing written); anything else takes TryAdmitSlow, which
  // decides the same case the same way.
  Admission TryAdmit(int64_t now_ns) {
    if (OwnerUnderBudget(now_ns)) return Admission{};
    return TryAdmitSlow(now_ns);
  }
  Admission TryAdmitSlow(int64_t now_ns);
  // Inline: every launch. The queue total is shared with the completion thread (which subtracts
  // what it measured), hence one atomic add; the in-flight hint is a plain store, written only
  // by this slice's threads (a race between two may lower it by the few µs between their
  // launches, which no rule notices).
  int64_t OnLaunched(int64_t now_ns, LaunchKind kind) {
    const int64_t estimate = estimate_ns(kind);
    const int64_t queued = queued_ns_.fetch_add(estimate, std::memory_order_relaxed) + estimate;
    int64_t* inflight_until = &entry()->inflight_until_ns;
    if (now_ns + queued > LoadI64(inflight_until)) StoreI64(inflight_until, now_ns + queued);
    return estimate;
  }
  // `last_close_ns`: when the calling thread last closed a batch. Inline: asked every launch.
  bool ShouldClose(const Mark& open, int64_t now_ns, int64_t last_close_ns) const {
    if (open.launches == 0) return false;
    const bool sporadic = open.launches == 1 && now_ns - last_close_ns >= kSporadicNs &&
                          pending_marks_.load(std::memory_order_relaxed) == 0;
    return sporadic || open.kind == LaunchKind::kGraph || now_ns - open.first_launch_ns >= kBatchWallNs ||
           open.estimated_ns >= kBatchDeviceNs;
  }
  void OnMarkClosed() { pending_marks_.fetch_add(1, std::memory_order_relaxed); }
  // A launch has waited `waited_ns` more in the gate (the row's throttled time). Called after
  // every sleep, not once at admission, so a slice held off for a whole window shows it at once
  // (stop-loss's starvation check reads it) rather than only when it is finally admitted.
  void OnWaited(int64_t waited_ns);
  // A launch that waited was admitted (the row's throttle count).
  void OnThrottled();
  void OnMarkComplete(const Mark& mark, int64_t completed_ns, int64_t device_ns = -1);

  int64_t queued_ns() const { return queued_ns_.load(std::memory_order_relaxed); }
  int64_t estimate_ns(LaunchKind kind) const {
    return estimate_ns_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  // The longer of the kernel and graph estimates, of those learned (unknown: a kernel's default).
  int64_t LongestLaunchEstimate() const {
    const int64_t kernel = estimate_ns(LaunchKind::kKernel);
    const int64_t graph = estimate_ns(LaunchKind::kGraph);
    return graph == kUnknownEstimateNs ? kernel : std::max(kernel, graph);
  }
  int row() const { return row_; }
  const Policy& policy() const { return policy_; }
  layout::BoardEntry* entry() const { return board_->entry(row_); }

 private:
  // The demand stamp is a shared cache line: refresh it at most this often.
  static constexpr int64_t kDemandRefreshNs = 100'000;
  // A batch is closed once it spans this much wall time or estimated device time. A sporadic
  // launch (the first since the thread's previous batch closed this long ago, with none of ours
  // in flight) is closed at once, so a request is measured when it completes rather than charged
  // an estimate at the next one; a stream of launches is not, which would make each launch a
  // batch of its own (two event records and a wake-up of the completion thread per launch).
  static constexpr int64_t kBatchWallNs = 200'000;
  static constexpr int64_t kBatchDeviceNs = 500'000;
  static constexpr int64_t kSporadicNs = 200'000;

  // TryAdmit's common case, decided from a few loads: true means TryAdmitSlow would return kGo
  // without writing anything (NoteDemand's stamp fresh, owner, not cap, queue under the bound).
  bool OwnerUnderBudget(int64_t now_ns) const {
    const layout::BoardEntry* row = entry();
    if (now_ns - LoadI64(&row->demand_ns) >= kDemandRefreshNs) return false;
    if (layout::OwnerEntry(LoadU64(&board_->header()->owner)) != row_) return false;
    if (static_cast<Mode>(__atomic_load_n(mode_tier_, __ATOMIC_RELAXED) & 0xff) == Mode::kCap) return false;
    return pending_marks_.load(std::memory_order_relaxed) == 0 || queued_ns() <= InflightBound(now_ns);
  }
  // The queue bound: max_inflight_ns; while a latency-tier slice has asked within
  // latency_guard_ns and this slice is of a lower tier, guarded_inflight_ns (one closed batch
  // beyond it at most: what a latency request may find ahead of it).
  int64_t InflightBound(int64_t now_ns) const {
    if (IsLatencyTier() || now_ns - LoadI64(&board_->header()->latency_demand_ns) > policy_.latency_guard_ns)
      return policy_.max_inflight_ns;
    return policy_.guarded_inflight_ns;
  }
  bool IsLatencyTier() const {
    return ((__atomic_load_n(mode_tier_, __ATOMIC_RELAXED) >> 8) & 0xff) == static_cast<uint32_t>(Tier::kLatency);
  }
  RowView ReadRow(int index) const;
  void NoteDemand(int64_t now_ns);
  Admission TakeOver(int64_t now_ns);

  Board* board_;
  int row_;
  Policy policy_;
  // This row's share and mode|tier words (board.h share_word, mode_tier_word): set once, so the
  // launch fast path reads its mode with one load whichever table holds it.
  const uint32_t* share_;
  const uint32_t* mode_tier_;
  std::atomic<int64_t> queued_ns_{0};     // estimated device time launched, not yet measured
  std::atomic<int64_t> pending_marks_{0};  // closed marks not yet observed complete
  // Estimated device time of one launch, learned from completed marks (EWMA, 1/4 weight).
  std::atomic<int64_t> estimate_ns_[2] = {kUnknownEstimateNs, kUnknownEstimateNs};
  std::atomic<int64_t> last_completion_ns_{0};
  std::atomic<int64_t> cap_resume_at_ns_{0};  // cap mode: ran ahead; wait until then
  static constexpr int64_t kUnknownEstimateNs = 1'000'000;
};

}  // namespace fgpu::compute
