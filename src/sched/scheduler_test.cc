#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "sched/policies/best_fit/best_fit.h"
#include "sched/policies/gpu_packing/gpu_packing.h"
#include "sched/policies/registry.h"
#include "sched/testing.h"

namespace fgpu::sched {
namespace {

using testing::Gpus;

Cluster ThreeNodes() { return testing::MakeCluster({{"G2", 8}, {"T4", 2, 104'000}, {"G2", 8}}); }

TEST(SchedulerTest, DecidePicksTheBestScoringNodeThatFits) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  Result<Decision> decision = scheduler.Decide(Gpus(1, 500));
  ASSERT_TRUE(decision.ok());
  ASSERT_TRUE(decision->placed);
  EXPECT_EQ(decision->node, 1u);  // the T4 node leaves the least over
  EXPECT_EQ(decision->gpus, GpuBit(0));
  EXPECT_EQ(scheduler.cluster().used_gpu_milli(), 0);  // deciding changes nothing
}

TEST(SchedulerTest, NoNodeFittingIsAnAnswerNotAnError) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  Result<Decision> decision = scheduler.Decide(Gpus(16, 1000));
  ASSERT_TRUE(decision.ok());
  EXPECT_FALSE(decision->placed);
  EXPECT_EQ(scheduler.Decide(Gpus(1, 0)).status().code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerTest, TiesGoToTheFirstNodeOfTheOrder) {
  // GpuPacking scores requests without GPUs 0 everywhere: all three nodes tie.
  Scheduler scheduler(ThreeNodes(), std::make_unique<GpuPackingPolicy>(),
                      {.ties = TieBreak::kFirstInOrder, .node_order = {2, 0, 1}});
  EXPECT_EQ(scheduler.Decide(testing::CpuOnly(1'000))->node, 2u);
  Scheduler by_id(ThreeNodes(), std::make_unique<GpuPackingPolicy>(),
                  {.node_order = {0, 0, 1}});  // not a permutation
  EXPECT_EQ(by_id.Decide(testing::CpuOnly(1'000))->node, 0u);
}

TEST(SchedulerTest, RandomTiesVisitEveryTiedNode) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<GpuPackingPolicy>(),
                      {.seed = 5, .ties = TieBreak::kRandom});
  std::set<NodeId> chosen;
  for (int draw = 0; draw < 100; ++draw) chosen.insert(scheduler.Decide(testing::CpuOnly(1'000))->node);
  EXPECT_EQ(chosen, (std::set<NodeId>{0, 1, 2}));
}

TEST(SchedulerTest, ReserveUnreserveAndReleaseGiveBackExactlyWhatWasTaken) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  const Request request = Gpus(2, 1000, 10'000);
  Result<Decision> decision = scheduler.Decide(request);
  Result<ReservationId> first = scheduler.Reserve(*decision, request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(scheduler.cluster().used_gpu_milli(), 2'000);
  // The same decision again no longer fits (the T4 node is full): nothing changes.
  EXPECT_EQ(scheduler.Reserve(*decision, request).status().code(), StatusCode::kResourceExhausted);
  Result<ReservationId> second = scheduler.Reserve(*scheduler.Decide(request), request);
  ASSERT_TRUE(second.ok());
  scheduler.Unreserve(*first);
  scheduler.Unreserve(*first);  // idempotent
  scheduler.Unreserve(12345);   // unknown ids are ignored
  EXPECT_TRUE(scheduler.Release(*second).ok());
  EXPECT_EQ(scheduler.Release(*second).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheduler.cluster().used_gpu_milli(), 0);
  EXPECT_EQ(scheduler.cluster().state(1).free_cpu_milli, 104'000);
}

TEST(SchedulerTest, ReserveRejectsADecisionThatDoesNotMatchTheRequest) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  Result<Decision> decision = scheduler.Decide(Gpus(1, 500));
  EXPECT_EQ(scheduler.Reserve(*decision, Gpus(2, 500)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.Reserve(Decision{}, Gpus(1, 500)).status().code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerTest, ANamedNodeAndACordonAreFiltersWhoseResultsAreCachedAndRefreshed) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  Request named = Gpus(1, 500);
  named.node = 2;
  EXPECT_EQ(scheduler.Decide(named)->node, 2u);
  ASSERT_TRUE(scheduler.SetCordoned(1, true).ok());
  EXPECT_EQ(scheduler.Decide(Gpus(1, 500))->node, 0u);  // best fit would be the T4 node
  ASSERT_TRUE(scheduler.SetCordoned(2, true).ok());
  Result<Decision> refused = scheduler.Decide(named);
  EXPECT_FALSE(refused->placed);
  EXPECT_EQ(refused->reason, "no node fits");
  const std::vector<Rejection> why = scheduler.Explain(named);
  ASSERT_EQ(why.size(), 3u);
  EXPECT_EQ(why[0].filter, "NodeName");
  EXPECT_EQ(why[1].filter, "NodeName");
  EXPECT_EQ(why[2].filter, "NodeUnschedulable");
  ASSERT_TRUE(scheduler.SetCordoned(1, false).ok());
  EXPECT_EQ(scheduler.Decide(Gpus(1, 500))->node, 1u);
  EXPECT_TRUE(scheduler.Explain(Gpus(1, 500)).empty());
  named.node = -2;
  EXPECT_EQ(scheduler.Decide(named).status().code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerTest, ReserveRefusesADecisionANodeFilterNowRejects) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  const Request request = Gpus(1, 500);
  Result<Decision> decision = scheduler.Decide(request);
  ASSERT_TRUE(scheduler.SetCordoned(decision->node, true).ok());
  Result<ReservationId> reserved = scheduler.Reserve(*decision, request);
  EXPECT_EQ(reserved.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(reserved.status().message().find("NodeUnschedulable"), std::string::npos);
  EXPECT_EQ(scheduler.cluster().used_gpu_milli(), 0);
}

// A filter with per-node state of its own, changed through Touch.
class OddNodesOnly final : public FilterPlugin {
 public:
  std::string_view name() const override { return "OddNodesOnly"; }
  bool Filter(const NodeView& node, const Request& /*request*/) const override { return !on || node.id % 2 == 1; }
  bool on = true;
};

// Counts what it is charged; refuses beyond a budget of GPU milli.
class Budget final : public ReservePlugin {
 public:
  std::string_view name() const override { return "Budget"; }
  Status PreFilter(const Request& request) const override {
    if (used + request.TotalGpuMilli() > limit) return Status::ResourceExhausted("over budget");
    return Status::Ok();
  }
  void Reserve(const Request& request, const Placement& /*placement*/) override { used += request.TotalGpuMilli(); }
  void Unreserve(const Request& request, const Placement& /*placement*/) override { used -= request.TotalGpuMilli(); }
  int64_t used = 0;
  int64_t limit = 2000;
};

TEST(SchedulerTest, AddedFiltersAndReservePluginsRunAtTheirExtensionPoints) {
  Scheduler scheduler(ThreeNodes(), std::make_unique<BestFitPolicy>());
  EXPECT_EQ(scheduler.Decide(Gpus(1, 500))->node, 1u);  // cached before the filter is added
  OddNodesOnly* odd = scheduler.AddFilter(std::make_unique<OddNodesOnly>());
  Budget* budget = scheduler.AddReservePlugin(std::make_unique<Budget>());
  EXPECT_EQ(scheduler.Decide(Gpus(1, 500))->node, 1u);
  const Request two = Gpus(2, 1000, 10'000);
  Result<Decision> decision = scheduler.Decide(two);
  ASSERT_TRUE(decision->placed);
  EXPECT_EQ(decision->node, 1u);
  Result<ReservationId> first = scheduler.Reserve(*decision, two);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(budget->used, 2000 - 0);
  EXPECT_EQ(scheduler.Decide(Gpus(1, 100))->reason, "over budget");
  budget->limit = 10'000;
  EXPECT_EQ(scheduler.Decide(Gpus(1, 100))->reason, "no node fits");  // only node 1, and it is full
  odd->on = false;
  ASSERT_TRUE(scheduler.Touch(0).ok());
  EXPECT_EQ(scheduler.Decide(Gpus(1, 100))->node, 0u);
  ASSERT_TRUE(scheduler.Release(*first).ok());
  EXPECT_EQ(budget->used, 0);
  EXPECT_EQ(scheduler.reservation(*first), nullptr);
}

// Delegates to a real policy but forbids caching: every decision rescored from scratch.
class Uncached final : public Policy {
 public:
  explicit Uncached(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  void OnAttach(const Cluster& cluster) override { inner_->OnAttach(cluster); }
  bool Observe(const Request& request) override { return inner_->Observe(request); }
  NodeScore Score(const NodeView& node, const Request& request) override {
    return inner_->Score(node, request);
  }
  double ModelBias(int model, const Request& request) override { return inner_->ModelBias(model, request); }
  bool has_model_bias() const override { return inner_->has_model_bias(); }
  GpuSet ChooseGpus(const NodeView& node, const Request& request, const NodeScore& scored,
                    Rng& rng) override {
    return inner_->ChooseGpus(node, request, scored, rng);
  }
  void OnPlaced(const NodeView& node, const Placement& placement) override {
    inner_->OnPlaced(node, placement);
  }
  void OnRemoved(const NodeView& node, const Placement& placement) override {
    inner_->OnRemoved(node, placement);
  }
  bool cacheable() const override { return false; }
  bool random_ties() const override { return inner_->random_ties(); }

 private:
  std::unique_ptr<Policy> inner_;
};

TEST(SchedulerTest, CachedScoresDecideExactlyAsRescoringEverything) {
  const std::vector<Request> shapes = {Gpus(1, 500),          Gpus(1, 250, 8'000),     Gpus(1, 1000),
                                       Gpus(2, 1000, 20'000), testing::CpuOnly(6'000), Gpus(8, 1000, 30'000)};
  const TargetWorkload workload = TargetWorkload::MostFrequent(shapes, 1.0);
  for (const PolicyInfo& info : PolicyList()) {
    SCOPED_TRACE(info.name);
    const auto cluster = testing::MakeCluster(
        {{"G2", 8}, {"T4", 2, 104'000}, {"G2", 8}, {"V100M32", 4, 48'000}, {"", 0, 64'000}, {"G2", 8}});
    Scheduler cached(cluster, std::move(MakePolicy(info.name, {workload}).value()), {.seed = 9});
    Scheduler uncached(cluster,
                       std::make_unique<Uncached>(std::move(MakePolicy(info.name, {workload}).value())),
                       {.seed = 9});
    Rng rng(11);
    std::vector<ReservationId> live;
    for (int step = 0; step < 300; ++step) {
      if (!live.empty() && rng.Uniform(4) == 0) {
        const size_t victim = rng.Uniform(live.size());
        ASSERT_TRUE(cached.Release(live[victim]).ok());
        ASSERT_TRUE(uncached.Release(live[victim]).ok());
        live.erase(live.begin() + static_cast<ptrdiff_t>(victim));
        continue;
      }
      const Request& request = shapes[rng.Uniform(shapes.size())];
      const Decision left = *cached.Decide(request);
      const Decision right = *uncached.Decide(request);
      ASSERT_EQ(left.placed, right.placed) << "step " << step;
      if (!left.placed) continue;
      ASSERT_EQ(left.node, right.node) << "step " << step;
      ASSERT_EQ(left.gpus, right.gpus) << "step " << step;
      const ReservationId id = *cached.Reserve(left, request);
      ASSERT_EQ(*uncached.Reserve(right, request), id);
      live.push_back(id);
    }
  }
}

}  // namespace
}  // namespace fgpu::sched
