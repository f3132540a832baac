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
  Limiter(Board* board, int row, const Policy& policy) : board_(board), row_(row), policy_(policy) {}

  // Publishes this slice's settings in its row (live: shares and tiers change at runtime).
  void Configure(uint32_t share, Mode mode, Tier tier);

  Admission TryAdmit(int64_t now_ns);
  int64_t OnLaunched(int64_t now_ns, LaunchKind kind);
  // `last_close_ns`: when the calling thread last closed a batch.
  bool ShouldClose(const Mark& open, int64_t now_ns, int64_t last_close_ns) const;
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
  int row() const { return row_; }
  const Policy& policy() const { return policy_; }
  layout::BoardEntry* entry() const { return board_->entry(row_); }

 private:
  RowView ReadRow(int index) const;
  void NoteDemand(int64_t now_ns);
  Admission TakeOver(int64_t now_ns);

  Board* board_;
  int row_;
  Policy policy_;
  std::atomic<int64_t> queued_ns_{0};     // estimated device time launched, not yet measured
  std::atomic<int64_t> pending_marks_{0};  // closed marks not yet observed complete
  // Estimated device time of one launch, learned from completed marks (EWMA, 1/4 weight).
  std::atomic<int64_t> estimate_ns_[2] = {kUnknownEstimateNs, kUnknownEstimateNs};
  std::atomic<int64_t> last_completion_ns_{0};
  std::atomic<int64_t> cap_resume_at_ns_{0};  // cap mode: ran ahead; wait until then
  static constexpr int64_t kUnknownEstimateNs = 1'000'000;
};

}  // namespace fgpu::compute
