// The arbitration algorithm against a model GPU, in simulated time: a discrete-event model of
// a time-sliced device (one FIFO of kernels, as the simulator and a GPU without MPS run
// work from different processes), clients that keep it saturated the way fgpu-probe does, and
// the real Board + Limiter + policy code between them. Deterministic and fast, so the bars hold
// with margin here; tests/sim/compute_test.cc checks the same bars in real time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "compute/board.h"
#include "compute/limiter.h"
#include "compute/policy_table.h"
#include "compute/sealed.h"
#include "compute/test_units.h"

namespace fgpu::compute {
namespace {

struct ClientSpec {
  uint32_t share = 100;
  Mode mode = Mode::kShare;
  Tier tier = Tier::kStandard;
  int64_t kernel_ns = 1 * kMs;
  int depth = 2;              // kernels kept in flight (the app syncs the oldest beyond)
  int64_t think_ns = 0;       // host time between a completion and the next launch (request loops)
  int duty = 100;             // < 100: launch i is due at start + i·kernel·100/duty, late ones at once (fgpu-probe spin)
  bool sync_each = false;     // wait for every kernel before the next launch
  int64_t start_ns = 0;
  int64_t stop_ns = INT64_MAX;
};

// A file board (rows claimed and configured by the workloads) or a sealed one (a managed node's:
// the agent assigns rows and writes their settings in the policy table).
enum class BoardKind { kFile, kSealed };

class Model {
 public:
  explicit Model(int64_t observe_jitter_ns = 20 * kUs, BoardKind kind = BoardKind::kFile, Policy policy = {})
      : jitter_(observe_jitter_ns), policy_(policy) {
    if (kind == BoardKind::kSealed) {
      Result<SealedPair> pair = CreateSealedPair("GPU-model");
      EXPECT_TRUE(pair.ok()) << pair.status().message();
      Result<Board*> board = Board::Map(pair->board, pair->policy, "GPU-model", {.writable_policy = true, .owner = ::geteuid()});
      EXPECT_TRUE(board.ok()) << board.status().message();
      ClosePair(&*pair);
      board_.reset(*board);
      return;
    }
    dir_ = "/tmp/fgpu-arbitration-model-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    Result<Board*> board = Board::Open(dir_, "GPU-model");
    EXPECT_TRUE(board.ok()) << board.status().message();
    board_.reset(*board);
  }
  ~Model() {
    if (!board_->has_policy()) std::remove(board_->path().c_str());
    board_.reset();
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }

  int Add(const ClientSpec& spec) {
    auto client = std::make_unique<Client>();
    client->spec = spec;
    const uint64_t key = SliceKey("slice-" + std::to_string(clients_.size()));
    if (board_->has_policy()) {
      // The agent's part: a row and its settings. Then the workload's attempts to raise its own
      // priority — what Configure would publish, and forged words in its board row — change nothing.
      AssignRow(*board_, FreeRowIndex(*board_, never_freed_), key, "m", spec.share, spec.mode, spec.tier, 0);
    }
    const int row = board_->Join(key, "m", 0);
    EXPECT_GE(row, 0);
    client->limiter = std::make_unique<Limiter>(board_.get(), row, policy_);
    if (board_->has_policy()) {
      client->limiter->Configure(100, Mode::kShare, Tier::kLatency);
      __atomic_store_n(&board_->entry(row)->share, 100u, __ATOMIC_RELEASE);
      __atomic_store_n(&board_->entry(row)->mode_tier,
                       layout::PackModeTier(static_cast<uint8_t>(Mode::kShare), static_cast<uint8_t>(Tier::kLatency)),
                       __ATOMIC_RELEASE);
    } else {
      client->limiter->Configure(spec.share, spec.mode, spec.tier);
    }
    clients_.push_back(std::move(client));
    const int id = static_cast<int>(clients_.size()) - 1;
    At(spec.start_ns, [this, id] { TryLaunch(id); });
    return id;
  }

  void Run(int64_t until_ns) {
    while (!events_.empty() && events_.top().time <= until_ns) {
      Event event = events_.top();
      events_.pop();
      now_ = event.time;
      event.action();
    }
    now_ = until_ns;
  }

  // Device time of client `id`'s kernels inside [from, to).
  int64_t Busy(int id, int64_t from, int64_t to) const {
    int64_t total = 0;
    for (const auto& [start, end] : clients_[id]->runs) total += std::max<int64_t>(0, std::min(end, to) - std::max(start, from));
    return total;
  }
  const std::vector<int64_t>& Latencies(int id) const { return clients_[id]->latencies; }
  Limiter& limiter(int id) { return *clients_[id]->limiter; }
  // A resize: by the agent in the policy table on a sealed board, by the workload on a file one.
  void SetShare(int id, uint32_t share, Mode mode = Mode::kShare, Tier tier = Tier::kStandard) {
    if (board_->has_policy()) {
      UpdateRow(*board_, limiter(id).row(), share, mode, tier);
    } else {
      limiter(id).Configure(share, mode, tier);
    }
  }

 private:
  struct Event {
    int64_t time;
    uint64_t order;
    std::function<void()> action;
    bool operator<(const Event& other) const { return time != other.time ? time > other.time : order > other.order; }
  };
  struct Client {
    ClientSpec spec;
    std::unique_ptr<Limiter> limiter;
    std::deque<int64_t> in_flight_ends;
    Mark open;
    int64_t open_end = 0;
    int64_t last_close = 0;
    bool waiting_launch = false;
    std::vector<std::pair<int64_t, int64_t>> runs;
    std::vector<int64_t> latencies;
  };

  void At(int64_t time, std::function<void()> action) { events_.push(Event{time, order_++, std::move(action)}); }

  void Close(int id, bool late) {
    Client& c = *clients_[id];
    if (c.open.launches == 0) return;
    Mark mark = c.open;
    mark.late = late;
    c.open = Mark{};
    c.last_close = now_;
    c.limiter->OnMarkClosed();
    const int64_t done = std::max(c.open_end, now_);
    At(done + jitter_, [this, id, mark, done] { clients_[id]->limiter->OnMarkComplete(mark, done + jitter_); });
  }

  void TryLaunch(int id) {
    Client& c = *clients_[id];
    if (now_ >= c.spec.stop_ns) return;
    while (!c.in_flight_ends.empty() && c.in_flight_ends.front() <= now_ - jitter_) c.in_flight_ends.pop_front();
    if (static_cast<int>(c.in_flight_ends.size()) >= c.spec.depth || (c.spec.sync_each && !c.in_flight_ends.empty())) {
      Close(id, false);  // the app synchronises: the hook's sync wrapper closes the batch
      const int64_t awaited = c.spec.sync_each ? c.in_flight_ends.back() : c.in_flight_ends.front();
      At(std::max(awaited, now_) + c.spec.think_ns + jitter_, [this, id] { TryLaunch(id); });
      return;
    }
    const int64_t due = c.spec.start_ns + static_cast<int64_t>(c.runs.size()) * c.spec.kernel_ns * 100 / c.spec.duty;
    if (c.spec.duty < 100 && now_ < due) {
      Close(id, false);
      At(due, [this, id] { TryLaunch(id); });
      return;
    }
    const Admission admission = c.limiter->TryAdmit(now_);
    if (admission.verdict == Admission::kWait) {
      Close(id, false);
      At(std::max(admission.until_ns, now_ + 10 * kUs), [this, id] { TryLaunch(id); });
      return;
    }
    if (c.open.launches > 0 && now_ - c.open.first_launch_ns > 200 * kUs && c.in_flight_ends.empty()) Close(id, true);
    const int64_t start = std::max(now_, device_free_);
    const int64_t end = start + c.spec.kernel_ns;
    device_free_ = end;
    c.runs.emplace_back(start, end);
    c.latencies.push_back(end - now_);
    c.in_flight_ends.push_back(end);
    if (c.open.launches == 0) c.open.first_launch_ns = now_;
    c.open.launches++;
    c.open.estimated_ns += c.limiter->OnLaunched(now_, LaunchKind::kKernel);
    c.open_end = end;
    if (c.limiter->ShouldClose(c.open, now_, c.last_close)) Close(id, false);
    At(now_ + 2 * kUs, [this, id] { TryLaunch(id); });  // the host's launch overhead
  }

  static inline int counter_ = 0;
  int64_t never_freed_[layout::kEntryCount] = {};
  std::string dir_;
  std::unique_ptr<Board> board_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::priority_queue<Event> events_;
  uint64_t order_ = 0;
  int64_t now_ = 0;
  int64_t device_free_ = 0;
  int64_t jitter_;
  Policy policy_;
};

// Achieved share of the device (percent of the window) for each client, per 1 s window after
// a warm-up second.
void ExpectShares(Model& model, const std::vector<double>& targets, double tolerance, int seconds = 5) {
  for (int s = 1; s < seconds; ++s) {
    for (size_t id = 0; id < targets.size(); ++id) {
      const double achieved = 100.0 * static_cast<double>(model.Busy(static_cast<int>(id), s * 1000 * kMs, (s + 1) * 1000 * kMs)) / (1000.0 * kMs);
      EXPECT_NEAR(achieved, targets[id], tolerance) << "client " << id << " window " << s;
    }
  }
}

double WindowShare(const Model& model, int id, int second) {
  return 100.0 * static_cast<double>(model.Busy(id, second * 1000 * kMs, (second + 1) * 1000 * kMs)) / (1000.0 * kMs);
}

class SharesByKernelSize : public ::testing::TestWithParam<int64_t> {};

TEST_P(SharesByKernelSize, ThirtySeventyInShareMode) {
  Model model;
  const int64_t kernel = GetParam();
  const int depth = kernel < 100 * kUs ? 64 : 2;
  model.Add({.share = 30, .kernel_ns = kernel, .depth = depth});
  model.Add({.share = 70, .kernel_ns = kernel, .depth = depth});
  model.Run(5000 * kMs);
  ExpectShares(model, {30, 70}, 2.0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, SharesByKernelSize, ::testing::Values(10 * kUs, 1 * kMs, 10 * kMs));

TEST(ArbitrationModel, ThirtySeventyWithSyncAfterEveryLaunch) {
  Model model;
  model.Add({.share = 30, .kernel_ns = 200 * kUs, .sync_each = true});
  model.Add({.share = 70, .kernel_ns = 200 * kUs, .sync_each = true});
  model.Run(5000 * kMs);
  // Shares of the busy time: a sync loop leaves the GPU idle while the host catches up.
  for (int s = 1; s < 5; ++s) {
    const double a = static_cast<double>(model.Busy(0, s * 1000 * kMs, (s + 1) * 1000 * kMs));
    const double b = static_cast<double>(model.Busy(1, s * 1000 * kMs, (s + 1) * 1000 * kMs));
    EXPECT_NEAR(100.0 * a / (a + b), 30.0, 2.0) << "window " << s;
  }
}

TEST(ArbitrationModel, FourSlicesTenTwentyThirtyForty) {
  Model model;
  for (uint32_t share : {10u, 20u, 30u, 40u}) model.Add({.share = share, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {10, 20, 30, 40}, 2.0);
}

TEST(ArbitrationModel, CapModeAloneHoldsItsRate) {
  Model model;
  model.Add({.share = 50, .mode = Mode::kCap, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {50}, 3.0);
}

TEST(ArbitrationModel, CapModeWithLongKernelsHoldsItsRate) {
  Model model;
  model.Add({.share = 50, .mode = Mode::kCap, .kernel_ns = 10 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {50}, 3.0);
}

TEST(ArbitrationModel, ShareModeAloneUsesTheWholeGpu) {
  Model model;
  model.Add({.share = 30, .kernel_ns = 1 * kMs});
  model.Run(3000 * kMs);
  ExpectShares(model, {100}, 1.0, 3);
}

TEST(ArbitrationModel, ShareModeIsWorkConservingWhenTheOtherGoesIdle) {
  Model model;
  model.Add({.share = 30, .kernel_ns = 1 * kMs});
  model.Add({.share = 70, .kernel_ns = 1 * kMs, .stop_ns = 2000 * kMs});
  model.Run(4000 * kMs);
  const double after = 100.0 * static_cast<double>(model.Busy(0, 2100 * kMs, 4000 * kMs)) / (1900.0 * kMs);
  EXPECT_GT(after, 97.0);
}

TEST(ArbitrationModel, ShareChangeTakesEffectWithinAPeriod) {
  Model model;
  const int a = model.Add({.share = 30, .kernel_ns = 1 * kMs});
  const int b = model.Add({.share = 70, .kernel_ns = 1 * kMs});
  model.Run(2000 * kMs);
  model.limiter(a).Configure(70, Mode::kShare, Tier::kStandard);
  model.limiter(b).Configure(30, Mode::kShare, Tier::kStandard);
  model.Run(4000 * kMs);
  // Within 20 ms of the change the split follows the new shares (the old lead is repaid first,
  // so measure from one period on).
  const double a_after = static_cast<double>(model.Busy(a, 2100 * kMs, 4000 * kMs)) / (1900.0 * kMs);
  EXPECT_NEAR(100.0 * a_after, 70.0, 3.0);
}

int64_t Percentile(std::vector<int64_t> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p / 100.0 * static_cast<double>(values.size() - 1))];
}

// A request of the latency tier goes first, but a kernel already running is not preempted: its
// p99 beside a saturating batch slice is what it has alone plus, at most, one batch kernel (the
// physical limit) and the observation delay.
TEST(ArbitrationModel, LatencyTierWaitsAtMostOneLowerTierKernel) {
  const ClientSpec requests{.share = 50, .tier = Tier::kLatency, .kernel_ns = 1 * kMs, .depth = 1, .think_ns = 3 * kMs};
  int64_t alone = 0;
  {
    Model model;
    const int id = model.Add(requests);
    model.Run(3000 * kMs);
    alone = Percentile(model.Latencies(id), 99);
  }
  for (const int64_t batch_kernel : {100 * kUs, 1 * kMs, 5 * kMs}) {
    Model model;
    const int id = model.Add(requests);
    const int batch = model.Add({.share = 50, .tier = Tier::kBatch, .kernel_ns = batch_kernel});
    model.Run(3000 * kMs);
    const int64_t beside = Percentile(model.Latencies(id), 99);
    EXPECT_LE(beside, alone + batch_kernel + 100 * kUs) << "batch kernels of " << batch_kernel << " ns";
    // The batch slice gets at least its share; gaps shorter than its kernels stay the requests'.
    for (int s = 1; s < 3; ++s) EXPECT_GE(WindowShare(model, batch, s), 50 - 3) << "window " << s;
  }
}

// With strict priority (an admin's choice for a GPU) the latency owner holds lower tiers off
// between its requests: no wait behind their kernels, and they may starve.
TEST(ArbitrationModel, StrictPriorityHoldsLowerTiersOffBetweenRequests) {
  const ClientSpec requests{.share = 50, .tier = Tier::kLatency, .kernel_ns = 1 * kMs, .depth = 1, .think_ns = 3 * kMs};
  const Policy strict{.strict_priority = true};
  int64_t alone = 0;
  {
    Model model(20 * kUs, BoardKind::kFile, strict);
    const int id = model.Add(requests);
    model.Run(3000 * kMs);
    alone = Percentile(model.Latencies(id), 99);
  }
  Model model(20 * kUs, BoardKind::kFile, strict);
  const int id = model.Add(requests);
  const int batch = model.Add({.share = 50, .tier = Tier::kBatch, .kernel_ns = 1 * kMs});
  model.Run(3000 * kMs);
  EXPECT_LE(static_cast<double>(Percentile(model.Latencies(id), 99)), 1.2 * static_cast<double>(alone));
  EXPECT_LT(WindowShare(model, batch, 2), 5) << "starved below its 50 %: what strict priority means";
}

// The first case: a latency slice (share 20, 30 % duty), a standard cap-mode slice (30 %,
// wanting 60 %) and a batch slice (share 26, wanting everything). Each gets its guarantee in every
// window; the idle rest goes by tier (the latency slice's extra 10 %, then the batch slice).
TEST(ArbitrationModel, TiersKeepEveryGuarantee) {
  for (const int64_t batch_kernel : {1 * kMs, 10 * kMs}) {
    Model model;
    const int latency = model.Add({.share = 20, .tier = Tier::kLatency, .kernel_ns = 1 * kMs, .duty = 30});
    const int cap = model.Add({.share = 30, .mode = Mode::kCap, .kernel_ns = 1 * kMs, .duty = 60});
    const int batch = model.Add({.share = 26, .tier = Tier::kBatch, .kernel_ns = batch_kernel});
    model.Run(5000 * kMs);
    for (int s = 1; s < 5; ++s) {
      EXPECT_NEAR(WindowShare(model, cap, s), 30, 3) << "cap, window " << s << ", batch kernels " << batch_kernel;
      EXPECT_GE(WindowShare(model, batch, s), 26 - 3) << "batch, window " << s << ", batch kernels " << batch_kernel;
      EXPECT_GE(WindowShare(model, latency, s), 30 - 3) << "latency, window " << s << ", batch kernels " << batch_kernel;
    }
  }
}

// The second case: a standard share-mode slice (30 %, at 50 % duty) beside a batch
// cap-mode slice (20 %, wanting everything): the batch slice gets its 20 %.
TEST(ArbitrationModel, ABatchCapSliceGetsItsCapBesideAStandardOne) {
  Model model;
  const int standard = model.Add({.share = 30, .kernel_ns = 1 * kMs, .duty = 50});
  const int batch = model.Add({.share = 20, .mode = Mode::kCap, .tier = Tier::kBatch, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  for (int s = 1; s < 5; ++s) {
    EXPECT_NEAR(WindowShare(model, batch, s), 20, 3) << "window " << s;
    EXPECT_GE(WindowShare(model, standard, s), 30 - 3) << "window " << s;
  }
}

// The same bars on a managed node's sealed board: the settings come from the agent's policy
// table, while every workload also publishes the most favourable settings it can (share 100,
// latency tier) through Configure and straight into its board row — which nobody reads there.
TEST(SealedArbitrationModel, ThirtySeventyFollowsThePolicyNotTheWorkloads) {
  Model model(20 * kUs, BoardKind::kSealed);
  model.Add({.share = 30, .kernel_ns = 1 * kMs});
  model.Add({.share = 70, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {30, 70}, 2.0);
}

TEST(SealedArbitrationModel, FourSlicesTenTwentyThirtyForty) {
  Model model(20 * kUs, BoardKind::kSealed);
  for (uint32_t share : {10u, 20u, 30u, 40u}) model.Add({.share = share, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {10, 20, 30, 40}, 2.0);
}

TEST(SealedArbitrationModel, CapModeFromThePolicyHoldsItsRate) {
  Model model(20 * kUs, BoardKind::kSealed);
  model.Add({.share = 50, .mode = Mode::kCap, .kernel_ns = 1 * kMs});
  model.Run(5000 * kMs);
  ExpectShares(model, {50}, 3.0);
}

TEST(SealedArbitrationModel, TheAgentsResizeTakesEffectWithinAPeriod) {
  Model model(20 * kUs, BoardKind::kSealed);
  const int a = model.Add({.share = 30, .kernel_ns = 1 * kMs});
  const int b = model.Add({.share = 70, .kernel_ns = 1 * kMs});
  model.Run(2000 * kMs);
  model.SetShare(a, 70);
  model.SetShare(b, 30);
  model.Run(4000 * kMs);
  const double a_after = static_cast<double>(model.Busy(a, 2100 * kMs, 4000 * kMs)) / (1900.0 * kMs);
  EXPECT_NEAR(100.0 * a_after, 70.0, 3.0);
}

TEST(SealedArbitrationModel, ALatencyTierOnlyThePolicyGivesGoesFirst) {
  const ClientSpec requests{.share = 50, .tier = Tier::kLatency, .kernel_ns = 1 * kMs, .depth = 1, .think_ns = 3 * kMs};
  int64_t alone = 0;
  {
    Model model(20 * kUs, BoardKind::kSealed);
    const int id = model.Add(requests);
    model.Run(3000 * kMs);
    alone = Percentile(model.Latencies(id), 99);
  }
  Model model(20 * kUs, BoardKind::kSealed);
  const int id = model.Add(requests);
  model.Add({.share = 50, .tier = Tier::kBatch, .kernel_ns = 5 * kMs});  // forges latency too: in vain
  model.Run(3000 * kMs);
  EXPECT_LE(Percentile(model.Latencies(id), 99), alone + 5 * kMs + 100 * kUs);
  // Were the forgery read, both would be latency-tier peers: the requests would wait for the
  // batch slice's turn (slack) and its 5 ms kernels, not only the one running.
}

class MeasurementByJitter : public ::testing::TestWithParam<int64_t> {};

// The limiter's measured occupancy is the device time its kernels really took, whatever the
// delay with which completions are observed (telescoping), and shares hold with it.
TEST_P(MeasurementByJitter, MeasuredTimeMatchesDeviceTime) {
  Model model(GetParam());
  const int a = model.Add({.share = 30, .kernel_ns = 1 * kMs});
  const int b = model.Add({.share = 70, .kernel_ns = 1 * kMs});
  model.Run(3000 * kMs);
  for (int id : {a, b}) {
    const double truth = static_cast<double>(model.Busy(id, 0, 3000 * kMs));
    const double measured = static_cast<double>(model.limiter(id).entry()->busy_ns);
    EXPECT_NEAR(measured / truth, 1.0, 0.02) << "client " << id;
  }
  ExpectShares(model, {30, 70}, 2.0, 3);
}

INSTANTIATE_TEST_SUITE_P(Jitter, MeasurementByJitter, ::testing::Values(0, 20 * kUs, 200 * kUs));

}  // namespace
}  // namespace fgpu::compute
