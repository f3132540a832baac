// What the limiter charges a completed batch: the host-observed occupancy, bounded by the
// device-timed span between the batch's markers when there is one (limiter.h).
#include "compute/limiter.h"
#include "compute/test_units.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fgpu::compute {
namespace {

class LimiterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-limiter-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    Result<Board*> board = Board::Open(dir_, "GPU-limiter");
    ASSERT_TRUE(board.ok()) << board.status().message();
    board_.reset(*board);
    const int row = board_->Join(SliceKey("slice"), "slice", 0);
    ASSERT_GE(row, 0);
    limiter_ = std::make_unique<Limiter>(board_.get(), row, Policy{});
    limiter_->Configure(50, Mode::kShare, Tier::kStandard);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // One launch at `launched`, closed and observed complete at `observed`.
  int64_t Charge(int64_t launched, int64_t observed, int64_t device_ns, bool late = false) {
    const uint64_t before = __atomic_load_n(&limiter_->entry()->busy_ns, __ATOMIC_RELAXED);
    Mark mark;
    mark.first_launch_ns = launched;
    mark.launches = 1;
    mark.estimated_ns = limiter_->OnLaunched(launched, LaunchKind::kKernel);
    mark.timed = device_ns >= 0;
    mark.late = late;
    limiter_->OnMarkClosed();
    limiter_->OnMarkComplete(mark, observed, device_ns);
    return static_cast<int64_t>(__atomic_load_n(&limiter_->entry()->busy_ns, __ATOMIC_RELAXED) - before);
  }

  std::string dir_;
  std::unique_ptr<Board> board_;
  std::unique_ptr<Limiter> limiter_;
};

TEST_F(LimiterTest, ABatchOnAnIdleGpuIsChargedItsDeviceTimeNotTheObservationDelay) {
  // A 10 µs kernel whose completion was noticed 80 µs late.
  EXPECT_EQ(Charge(100 * kMs, 100 * kMs + 90 * kUs, 10 * kUs), 10 * kUs);
}

TEST_F(LimiterTest, WithoutTimingTheHostObservedOccupancyIsCharged) {
  EXPECT_EQ(Charge(100 * kMs, 100 * kMs + 90 * kUs, -1), 90 * kUs);
}

TEST_F(LimiterTest, TheDeviceSpanDoesNotChargeWorkThatCompletedBeforeTheBatchCouldStart) {
  // Another slice's work completed at 105 ms; ours, launched at 100 ms, ran 1 ms after it. The
  // start marker waited behind that tail, so the device span (6 ms) overstates; the host measure
  // from the previous completion does not.
  StoreMax(&board_->header()->last_completion_ns, 105 * kMs);
  EXPECT_EQ(Charge(100 * kMs, 106 * kMs, 6 * kMs), 1 * kMs);
}

TEST_F(LimiterTest, ConsecutiveBatchesTelescope) {
  EXPECT_EQ(Charge(100 * kMs, 101 * kMs, -1), 1 * kMs);
  // Launched while the first ran: occupancy starts at the first's completion.
  EXPECT_EQ(Charge(100 * kMs + 500 * kUs, 102 * kMs, -1), 1 * kMs);
}

TEST_F(LimiterTest, ALateMarkIsChargedItsEstimateAtMost) {
  Charge(100 * kMs, 101 * kMs, 1 * kMs);  // teaches the estimate: 1 ms per launch
  EXPECT_EQ(Charge(200 * kMs, 300 * kMs, -1, /*late=*/true), limiter_->estimate_ns(LaunchKind::kKernel));
}

TEST_F(LimiterTest, VirtualTimeAdvancesByBusyTimeOverShare) {
  const uint64_t before = __atomic_load_n(&limiter_->entry()->vtime, __ATOMIC_RELAXED);
  Charge(100 * kMs, 102 * kMs, 1 * kMs);
  EXPECT_EQ(__atomic_load_n(&limiter_->entry()->vtime, __ATOMIC_RELAXED) - before, 2u * kMs);  // 1 ms at 50 %
}

TEST_F(LimiterTest, ACappedSliceWaitsOnceItRunsAheadOfItsRate) {
  limiter_->Configure(50, Mode::kCap, Tier::kStandard);
  int64_t now = 100 * kMs;
  // 1 ms batches back to back at 50 %: each pushes the rate clock 2 ms, 1 ms more than the wall
  // clock moves. After the cap credit (the clock starts at most 10 ms behind: 10 batches) and
  // the tolerance (2 ms of device time ahead), the limiter asks to wait.
  int launched = 0;
  while (limiter_->TryAdmit(now).verdict == Admission::kGo && launched < 100) {
    Charge(now, now + kMs, kMs);
    now += kMs;
    ++launched;
  }
  EXPECT_GE(launched, 10 + 2);
  EXPECT_LE(launched, 10 + 4);
  const Admission wait = limiter_->TryAdmit(now);
  ASSERT_EQ(wait.verdict, Admission::kWait);
  EXPECT_GT(wait.until_ns, now);
  EXPECT_EQ(limiter_->TryAdmit(wait.until_ns).verdict, Admission::kGo);
}

// Launching threads book and close marks while the completion thread charges them: every
// estimate queued is taken back, and every mark charged (run under ThreadSanitizer too).
TEST_F(LimiterTest, LaunchingThreadsAndTheCompletionThreadAgree) {
  constexpr int kThreads = 4;
  constexpr int kMarksPerThread = 2000;
  std::atomic<int> closed{0};
  std::mutex ring_mutex;  // the hook's ring is lock-free; here only the limiter is under test
  std::vector<Mark> ring;
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&] {
      for (int i = 0; i < kMarksPerThread; ++i) {
        const int64_t now = MonotonicNs();
        (void)limiter_->TryAdmit(now);
        Mark mark;
        mark.first_launch_ns = now;
        mark.launches = 1;
        mark.estimated_ns = limiter_->OnLaunched(now, LaunchKind::kKernel);
        limiter_->OnMarkClosed();
        std::lock_guard<std::mutex> lock(ring_mutex);
        ring.push_back(mark);
        closed.fetch_add(1);
      }
    });
  }
  int completed = 0;
  while (completed < kThreads * kMarksPerThread) {
    std::vector<Mark> batch;
    {
      std::lock_guard<std::mutex> lock(ring_mutex);
      batch.swap(ring);
    }
    for (const Mark& mark : batch) limiter_->OnMarkComplete(mark, MonotonicNs(), 1'000);
    completed += static_cast<int>(batch.size());
  }
  for (std::thread& launcher : launchers) launcher.join();
  EXPECT_EQ(limiter_->queued_ns(), 0);
  EXPECT_EQ(__atomic_load_n(&limiter_->entry()->launches, __ATOMIC_RELAXED),
            static_cast<uint64_t>(kThreads * kMarksPerThread));
}

}  // namespace
}  // namespace fgpu::compute
