#include "sched/governance/governor.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sched/policies/best_fit/best_fit.h"
#include "sched/testing.h"

namespace fgpu::sched {
namespace {

using Kind = Action::Kind;

WorkloadSpec Job(int32_t milli, Tier tier = Tier::kStandard, std::string tenant = "t", double duration = 0) {
  WorkloadSpec spec;
  spec.request = testing::Gpus(1, milli, 1'000);
  spec.request.tier = tier;
  spec.request.tenant = std::move(tenant);
  spec.duration = duration;
  return spec;
}

// `gpus` one-GPU nodes (as the agent models a machine), each 1000 milli-GPU.
class GovernorTest : public ::testing::Test {
 protected:
  void Build(int gpus, GovernorOptions options, QuotaTree quotas = {}) {
    std::vector<testing::NodeShape> shapes(static_cast<size_t>(gpus), testing::NodeShape{"G", 1});
    scheduler_ = std::make_unique<Scheduler>(testing::MakeCluster(shapes), std::make_unique<BestFitPolicy>());
    governor_ = std::make_unique<Governor>(scheduler_.get(), std::move(quotas), options);
  }
  WorkloadId Submit(WorkloadSpec spec, double now = 0) {
    Result<WorkloadId> id = governor_->Submit(std::move(spec), now);
    EXPECT_TRUE(id.ok()) << id.status().message();
    return id.ok() ? *id : 0;
  }
  // The workloads started by a pass at `now` (and the other actions in `others`).
  std::vector<WorkloadId> Started(double now, std::vector<Action>* others = nullptr) {
    std::vector<WorkloadId> started;
    for (const Action& action : governor_->Schedule(now)) {
      if (action.kind == Kind::kStart) {
        started.push_back(action.workload);
      } else if (others != nullptr) {
        others->push_back(action);
      }
    }
    return started;
  }
  NodeId NodeOf(WorkloadId id) {
    const Workload* workload = governor_->Find(id);
    return scheduler_->reservation(workload->reservations.at(0))->placement.node;
  }
  WorkloadState StateOf(WorkloadId id) { return governor_->Find(id)->state; }
  // Two GPUs, each running a batch job of `victim`; at 1 s `boss` asks for both in the latency tier.
  void TwoBatchJobsThenTwoLatencyRequests() {
    Submit(Job(1000, Tier::kBatch, "victim"));
    Submit(Job(1000, Tier::kBatch, "victim"));
    EXPECT_EQ(Started(0).size(), 2u);
    Submit(Job(1000, Tier::kLatency, "boss"), 1);
    Submit(Job(1000, Tier::kLatency, "boss"), 1);
  }

  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Governor> governor_;
};

// Plain preemption (governor.h) with some options changed.
template <typename Change>
GovernorOptions With(Change change) {
  GovernorOptions options = PlainPreemption();
  change(options);
  return options;
}

GovernorOptions Fifo() {
  return With([](GovernorOptions& o) {
    o.tiers = false;
    o.preemption = false;
    o.queueing = Queueing::kGreedy;
    o.fair_share = false;
  });
}

TEST_F(GovernorTest, GreedyStartsInOrderWhateverFits) {
  Build(1, Fifo());
  const WorkloadId a = Submit(Job(600));
  const WorkloadId b = Submit(Job(600));
  const WorkloadId c = Submit(Job(400));
  EXPECT_EQ(Started(0), (std::vector<WorkloadId>{a, c}));  // b does not fit; c goes around it
  EXPECT_EQ(governor_->WhyWaiting(*governor_->Find(b)), "no node fits");
  EXPECT_EQ(governor_->QueueOrder(), std::vector<WorkloadId>{b});
  ASSERT_TRUE(governor_->Finish(a, 10).ok());
  EXPECT_EQ(Started(10), std::vector<WorkloadId>{b});
  EXPECT_EQ(governor_->Finish(a, 10).code(), StatusCode::kNotFound);
}

TEST_F(GovernorTest, StrictOrderLetsNothingOvertake) {
  Build(1, With([](GovernorOptions& o) { o.tiers = false; o.preemption = false; o.queueing = Queueing::kStrict; o.fair_share = false; }));
  Submit(Job(600));
  const WorkloadId b = Submit(Job(600));
  const WorkloadId c = Submit(Job(400));
  EXPECT_EQ(Started(0).size(), 1u);
  EXPECT_EQ(StateOf(c), WorkloadState::kQueued);
  EXPECT_NE(governor_->WhyWaiting(*governor_->Find(c)).find("strict"), std::string::npos);
  EXPECT_EQ(governor_->QueueOrder(), (std::vector<WorkloadId>{b, c}));
}

TEST_F(GovernorTest, HigherTiersGoFirst) {
  Build(1, With([](GovernorOptions& o) { o.preemption = false; o.queueing = Queueing::kGreedy; o.fair_share = false; }));
  const WorkloadId batch = Submit(Job(600, Tier::kBatch));
  const WorkloadId latency = Submit(Job(600, Tier::kLatency), 1);
  EXPECT_EQ(Started(1), std::vector<WorkloadId>{latency});
  EXPECT_EQ(StateOf(batch), WorkloadState::kQueued);
}

TEST_F(GovernorTest, PreemptionTakesTheLeastDisruptiveVictimsAndHoldsTheNodeUntilTheyEnd) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; }));
  // GPU 0: a batch job that ran long and a standard one; GPU 1: two batch jobs, one just started.
  WorkloadSpec first = Job(500, Tier::kBatch);
  first.request.node = 0;
  const WorkloadId old_batch = Submit(first);
  WorkloadSpec second = Job(500, Tier::kStandard);
  second.request.node = 0;
  const WorkloadId standard = Submit(second);
  EXPECT_EQ(Started(0).size(), 2u);
  WorkloadSpec third = Job(500, Tier::kBatch);
  third.request.node = 1;
  const WorkloadId batch_a = Submit(third, 100);
  const WorkloadId batch_b = Submit(third, 100);
  EXPECT_EQ(Started(100).size(), 2u);

  // A standard request needing 500: only batch victims; GPU 1's batch jobs ran 100 s less.
  const WorkloadId newcomer = Submit(Job(500, Tier::kStandard), 200);
  std::vector<Action> others;
  EXPECT_TRUE(Started(200, &others).empty());
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].kind, Kind::kPreempt);
  EXPECT_EQ(others[0].for_workload, newcomer);
  EXPECT_EQ(others[0].reason, "priority");
  const WorkloadId victim = others[0].workload;
  EXPECT_TRUE(victim == batch_a || victim == batch_b);
  EXPECT_EQ(StateOf(victim), WorkloadState::kTerminating);
  EXPECT_EQ(StateOf(standard), WorkloadState::kRunning);  // never an equal tier
  EXPECT_EQ(StateOf(old_batch), WorkloadState::kRunning);
  EXPECT_EQ(*governor_->Find(newcomer)->nominated, 1u);

  // The room its victim leaves is held for it: a latency request arriving then, first in
  // order, does not take it — it makes room of its own on the other GPU.
  ASSERT_TRUE(governor_->Finish(victim, 202).ok());
  const WorkloadId latency = Submit(Job(500, Tier::kLatency), 202);
  others.clear();
  EXPECT_EQ(Started(202, &others), std::vector<WorkloadId>{newcomer});
  EXPECT_EQ(NodeOf(newcomer), 1u);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, old_batch);  // the lowest tier on GPU 0, not the standard job
  EXPECT_EQ(others[0].for_workload, latency);
  EXPECT_EQ(StateOf(standard), WorkloadState::kRunning);
  ASSERT_TRUE(governor_->Finish(old_batch, 203).ok());
  EXPECT_EQ(Started(203), std::vector<WorkloadId>{latency});
}

TEST_F(GovernorTest, NoVictimsOfAnEqualOrHigherTier) {
  Build(1, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; }));
  Submit(Job(1000, Tier::kStandard));
  EXPECT_EQ(Started(0).size(), 1u);
  const WorkloadId same = Submit(Job(500, Tier::kStandard), 1);
  std::vector<Action> others;
  EXPECT_TRUE(Started(1, &others).empty());
  EXPECT_TRUE(others.empty());
  EXPECT_EQ(StateOf(same), WorkloadState::kQueued);
}

TEST_F(GovernorTest, APreemptionBudgetProtectsATenantFromChurn) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.preemption_budget = 1; o.preemption_window = 100; }));
  TwoBatchJobsThenTwoLatencyRequests();
  std::vector<Action> others;
  Started(1, &others);
  EXPECT_EQ(others.size(), 1u);  // one of the tenant's per 100 s
  others.clear();
  Started(102, &others);
  EXPECT_EQ(others.size(), 1u);  // the window moved on
}

TEST_F(GovernorTest, PreemptionSearchesAreRationedPerSecondHoweverOftenPassesRun) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.preemption_searches_per_second = 1; }));
  TwoBatchJobsThenTwoLatencyRequests();
  std::vector<Action> others;
  Started(1, &others);
  EXPECT_EQ(others.size(), 1u);  // the bucket holds one search
  others.clear();
  Started(1.25, &others);
  Started(1.5, &others);
  EXPECT_TRUE(others.empty());  // half a search refilled: none
  Started(2, &others);
  EXPECT_EQ(others.size(), 1u);
}

TEST_F(GovernorTest, ARequestWaitsForRoomThatFreesSoonInsteadOfPreempting) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.wait_for_room = 60; }));
  const WorkloadId ends_soon = Submit(Job(1000, Tier::kBatch, "t", 30));
  const WorkloadId ends_late = Submit(Job(1000, Tier::kBatch, "t", 1000));
  EXPECT_EQ(Started(0).size(), 2u);
  const WorkloadId latency = Submit(Job(1000, Tier::kLatency), 1);
  std::vector<Action> others;
  EXPECT_TRUE(Started(1, &others).empty());
  EXPECT_TRUE(others.empty());  // nobody preempted: GPU of `ends_soon` frees at 30
  EXPECT_EQ(governor_->Find(latency)->wait, Wait::kRoomSoon);
  EXPECT_EQ(*governor_->Find(latency)->nominated, NodeOf(ends_soon));
  // The held GPU is not given to anyone else when it frees.
  ASSERT_TRUE(governor_->Finish(ends_soon, 30).ok());
  Submit(Job(500, Tier::kBatch), 30);
  EXPECT_EQ(Started(30), std::vector<WorkloadId>{latency});
  EXPECT_EQ(StateOf(ends_late), WorkloadState::kRunning);
  EXPECT_EQ(governor_->counters().preempted, 0u);
}

TEST_F(GovernorTest, RoomThatIsLateIsWaitedForAWhileThenTakenByPreemption) {
  Build(1, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.wait_for_room = 60; }));
  const WorkloadId overruns = Submit(Job(1000, Tier::kBatch, "t", 30));  // says 30 s, runs on
  EXPECT_EQ(Started(0).size(), 1u);
  const WorkloadId latency = Submit(Job(1000, Tier::kLatency), 1);
  std::vector<Action> others;
  Started(1, &others);
  Started(60, &others);  // 30 s late: still waiting for it
  EXPECT_TRUE(others.empty());
  Started(91, &others);  // room_at + wait_for_room passed: it preempts
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, overruns);
  EXPECT_EQ(others[0].for_workload, latency);
}

TEST_F(GovernorTest, PreemptionWaitsItsDelayAndSparesTiersThatAreNotPreemptible) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.preemptible = 1U << static_cast<int>(Tier::kBatch); o.preemption_delay = 20; }));
  const WorkloadId standard = Submit(Job(1000, Tier::kStandard));
  const WorkloadId batch = Submit(Job(1000, Tier::kBatch));
  EXPECT_EQ(Started(0).size(), 2u);
  Submit(Job(1000, Tier::kLatency), 1);
  std::vector<Action> others;
  Started(10, &others);
  EXPECT_TRUE(others.empty());  // waited 9 s of its 20
  Started(21, &others);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, batch);  // the standard job is not preemptible
  Submit(Job(1000, Tier::kLatency), 22);
  others.clear();
  Started(60, &others);
  EXPECT_TRUE(others.empty());
  EXPECT_EQ(StateOf(standard), WorkloadState::kRunning);
}

TEST_F(GovernorTest, OldWorkIsSparedUntilTheRequestHasWaitedItsEscalation) {
  Build(1, With([](GovernorOptions& o) {
          o.queueing = Queueing::kGreedy;
          o.fair_share = false;
          o.preemption_exempt_after = 100;
          o.preemption_escalation = 50;
        }));
  const WorkloadId old = Submit(Job(1000, Tier::kBatch));
  EXPECT_EQ(Started(0).size(), 1u);
  Submit(Job(1000, Tier::kLatency), 200);
  std::vector<Action> others;
  Started(200, &others);
  Started(240, &others);
  EXPECT_TRUE(others.empty());  // it ran 200 s: spared while the request waited < 50 s
  Started(251, &others);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, old);
}

TEST_F(GovernorTest, StrictTiersStartNothingLowerWhileAHigherTierWaits) {
  Build(2, With([](GovernorOptions& o) {
          o.preemption = false;
          o.queueing = Queueing::kGreedy;
          o.fair_share = false;
          o.strict_tiers = true;
        }));
  Submit(Job(600));
  Submit(Job(600));
  EXPECT_EQ(Started(0).size(), 2u);
  const WorkloadId latency = Submit(Job(1000, Tier::kLatency), 1);
  const WorkloadId batch = Submit(Job(300, Tier::kBatch), 1);  // would fit beside either
  EXPECT_TRUE(Started(1).empty());
  EXPECT_EQ(StateOf(latency), WorkloadState::kQueued);
  EXPECT_EQ(governor_->Find(batch)->wait, Wait::kStrictOrder);
}

TEST_F(GovernorTest, SegregationPutsPreemptibleWorkBesidePreemptibleWork) {
  // Best fit ties two half-full GPUs; the batch request joins the batch job, not the latency one.
  Build(2, With([](GovernorOptions& o) {
          o.preemption = false;
          o.queueing = Queueing::kGreedy;
          o.fair_share = false;
          o.preemptible = 1U << static_cast<int>(Tier::kBatch);
          o.segregation = 0.9;
        }));
  WorkloadSpec first = Job(500, Tier::kLatency);
  first.request.node = 0;
  WorkloadSpec second = Job(500, Tier::kBatch);
  second.request.node = 1;
  Submit(first);
  const WorkloadId batch_on_1 = Submit(second);
  EXPECT_EQ(Started(0).size(), 2u);
  const WorkloadId batch = Submit(Job(500, Tier::kBatch), 1);
  EXPECT_EQ(Started(1), std::vector<WorkloadId>{batch});
  EXPECT_EQ(NodeOf(batch), NodeOf(batch_on_1));
}

// Two teams of 1000 milli each on two GPUs.
QuotaTree TwoTeams() {
  Result<QuotaTree> quotas = QuotaTree::Create({{.name = "a", .nominal = Amount{0, 1000}},
                                                {.name = "b", .nominal = Amount{0, 1000}}});
  EXPECT_TRUE(quotas.ok());
  return std::move(quotas).value();
}

TEST_F(GovernorTest, ABorrowerIsReclaimedWhenTheOwnerWantsItsQuotaBack) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; }), TwoTeams());
  const WorkloadId a1 = Submit(Job(1000, Tier::kStandard, "a"));
  const WorkloadId a2 = Submit(Job(1000, Tier::kStandard, "a"), 1);  // borrows b's idle quota
  EXPECT_EQ(Started(1).size(), 2u);
  EXPECT_EQ(governor_->quotas().Borrowed("a"), (Amount{0, 1000}));
  const WorkloadId a3 = Submit(Job(500, Tier::kStandard, "a"), 2);
  const WorkloadId b1 = Submit(Job(1000, Tier::kStandard, "b"), 3);
  std::vector<Action> others;
  EXPECT_TRUE(Started(3, &others).empty());
  // a3 is beyond what a may borrow and may not reclaim; b1 is within b's nominal: it reclaims
  // one borrowed workload (of two that lost as much, the newer), of an equal tier.
  EXPECT_NE(governor_->WhyWaiting(*governor_->Find(a3)).find("cannot lend"), std::string::npos)
      << governor_->WhyWaiting(*governor_->Find(a3));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, a2);
  EXPECT_EQ(others[0].reason, "reclaim");
  EXPECT_EQ(StateOf(a1), WorkloadState::kRunning);
  ASSERT_TRUE(governor_->Finish(a2, 4).ok());
  EXPECT_EQ(Started(4), std::vector<WorkloadId>{b1});
  EXPECT_EQ(governor_->counters().reclaimed, 1u);
}

TEST_F(GovernorTest, ATenantAtItsLimitPreemptsItsOwnLowerTierWorkToFitInItsQuota) {
  Result<QuotaTree> quotas = QuotaTree::Create({{.name = "a", .nominal = Amount{0, 1000}, .borrowing_limit = Amount{}},
                                                {.name = "b", .nominal = Amount{0, 1000}, .borrowing_limit = Amount{}}});
  ASSERT_TRUE(quotas.ok());
  Build(2, With([](GovernorOptions& o) {
          o.queueing = Queueing::kGreedy;
          o.fair_share = false;
        }), std::move(*quotas));
  const WorkloadId own_batch = Submit(Job(1000, Tier::kBatch, "a"));
  EXPECT_EQ(Started(0).size(), 1u);  // a holds its whole quota; a GPU is idle
  const WorkloadId latency = Submit(Job(500, Tier::kLatency, "a"), 1);
  std::vector<Action> others;
  EXPECT_TRUE(Started(1, &others).empty());
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].workload, own_batch);
  EXPECT_EQ(others[0].reason, "priority");
  ASSERT_TRUE(governor_->Finish(own_batch, 2).ok());
  EXPECT_EQ(Started(2), std::vector<WorkloadId>{latency});
}

TEST_F(GovernorTest, ReclaimLimitedToLowerTiersLeavesAnEqualTierBorrowerAlone) {
  Build(2, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; o.reclaim = ReclaimTiers::kLower; }), TwoTeams());
  Submit(Job(1000, Tier::kStandard, "a"));
  Submit(Job(1000, Tier::kStandard, "a"), 1);
  EXPECT_EQ(Started(1).size(), 2u);
  const WorkloadId b1 = Submit(Job(1000, Tier::kStandard, "b"), 2);
  std::vector<Action> others;
  EXPECT_TRUE(Started(2, &others).empty());
  EXPECT_TRUE(others.empty());
  EXPECT_EQ(StateOf(b1), WorkloadState::kQueued);
}

TEST_F(GovernorTest, NoTenantIsPlacedAboveItsQuotaPlusBorrowingLimit) {
  Result<QuotaTree> quotas = QuotaTree::Create(
      {{.name = "a", .nominal = Amount{0, 1000}, .borrowing_limit = Amount{0, 500}}, {.name = "b", .nominal = Amount{0, 2000}}});
  ASSERT_TRUE(quotas.ok());
  Build(3, With([](GovernorOptions& o) { o.queueing = Queueing::kGreedy; o.fair_share = false; }), std::move(*quotas));
  for (int i = 0; i < 6; ++i) Submit(Job(500, Tier::kStandard, "a"));
  EXPECT_EQ(Started(0).size(), 3u);
  EXPECT_EQ(governor_->quotas().Usage(governor_->quotas().LeafOf("a")), (Amount{0, 1500}));
}

TEST_F(GovernorTest, BackfillRunsShortWorkAroundABlockedRequestButNotLongWorkOnItsNodes) {
  Build(2, With([](GovernorOptions& o) { o.tiers = false; o.preemption = false; o.queueing = Queueing::kBackfill; o.fair_share = false; }));
  const WorkloadId ends_at_100 = Submit(Job(600, Tier::kStandard, "t", 100));
  const WorkloadId ends_at_500 = Submit(Job(600, Tier::kStandard, "t", 500));
  EXPECT_EQ(Started(0).size(), 2u);
  const WorkloadId whole = Submit(Job(1000, Tier::kStandard, "t", 50), 1);  // fits when the first ends
  const WorkloadId short_job = Submit(Job(400, Tier::kStandard, "t", 60), 2);
  const WorkloadId long_job = Submit(Job(400, Tier::kStandard, "t", 1000), 3);
  const std::vector<WorkloadId> started = Started(3);
  ASSERT_TRUE(governor_->backfill_reservation().has_value());
  EXPECT_EQ(governor_->backfill_reservation()->workload, whole);
  EXPECT_DOUBLE_EQ(governor_->backfill_reservation()->shadow_time, 100);
  const NodeId reserved = NodeOf(ends_at_100);
  EXPECT_EQ(governor_->backfill_reservation()->nodes, std::vector<NodeId>{reserved});
  // Both small jobs start: the short one may use the reserved GPU (it ends by 100), the long one
  // only the other.
  EXPECT_EQ(started.size(), 2u);
  EXPECT_NE(NodeOf(long_job), reserved);
  EXPECT_EQ(NodeOf(short_job), reserved);
  EXPECT_EQ(governor_->counters().backfilled, 2u);
  ASSERT_TRUE(governor_->Finish(ends_at_100, 100).ok());
  ASSERT_TRUE(governor_->Finish(short_job, 62).ok());
  EXPECT_EQ(Started(100), std::vector<WorkloadId>{whole});  // not delayed
  EXPECT_EQ(StateOf(ends_at_500), WorkloadState::kRunning);
}

TEST_F(GovernorTest, DurationsAreLearnedPerTenantAndTier) {
  Build(1, Fifo());
  const WorkloadId first = Submit(Job(100));
  EXPECT_DOUBLE_EQ(governor_->Estimate(*governor_->Find(first)), 3600);  // the default
  Started(0);
  ASSERT_TRUE(governor_->Finish(first, 100).ok());
  const WorkloadId second = Submit(Job(100), 100);
  EXPECT_DOUBLE_EQ(governor_->Estimate(*governor_->Find(second)), 100);
  Started(100);
  ASSERT_TRUE(governor_->Finish(second, 300).ok());  // ran 200: the average moves 30 % of the way
  const WorkloadId third = Submit(Job(100), 300);
  EXPECT_DOUBLE_EQ(governor_->Estimate(*governor_->Find(third)), 130);
  const WorkloadId other_tenant = Submit(Job(100, Tier::kStandard, "other"), 300);
  EXPECT_DOUBLE_EQ(governor_->Estimate(*governor_->Find(other_tenant)), 3600);
  ASSERT_TRUE(governor_->Cancel(third, 301).ok());  // a cancellation teaches nothing
}

TEST_F(GovernorTest, AGangIsPlacedWholeOrNotAtAllAndExpires) {
  Build(3, With([](GovernorOptions& o) { o.preemption = false; o.queueing = Queueing::kGreedy; o.fair_share = false; o.gang_timeout = 60; }));
  const WorkloadId single = Submit(Job(600));
  EXPECT_EQ(Started(0).size(), 1u);
  WorkloadSpec gang = Job(600);
  gang.members = 3;
  const WorkloadId gang_id = Submit(gang, 1);
  EXPECT_EQ(Started(1), std::vector<WorkloadId>{});  // 2 of 3 would fit: none is placed
  EXPECT_EQ(scheduler_->reservation_count(), 1u);
  ASSERT_TRUE(governor_->Finish(single, 2).ok());
  EXPECT_EQ(Started(2), std::vector<WorkloadId>{gang_id});
  EXPECT_EQ(governor_->Find(gang_id)->reservations.size(), 3u);

  WorkloadSpec too_big = Job(600);
  too_big.members = 4;
  const WorkloadId doomed = Submit(too_big, 3);
  std::vector<Action> others;
  Started(30, &others);
  EXPECT_TRUE(others.empty());
  Started(64, &others);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].kind, Kind::kExpire);
  EXPECT_EQ(others[0].workload, doomed);
  EXPECT_EQ(governor_->Find(doomed), nullptr);
  EXPECT_EQ(governor_->counters().expired, 1u);
}

TEST_F(GovernorTest, FairShareServesTheTenantThatUsedLessFirst) {
  Build(1, With([](GovernorOptions& o) { o.preemption = false; o.queueing = Queueing::kGreedy; o.fair_share = true; o.fair_share_half_life = 3600; }));
  const WorkloadId heavy = Submit(Job(1000, Tier::kStandard, "heavy"));
  EXPECT_EQ(Started(0).size(), 1u);
  const WorkloadId heavy_again = Submit(Job(1000, Tier::kStandard, "heavy"), 10);
  const WorkloadId light = Submit(Job(1000, Tier::kStandard, "light"), 20);
  ASSERT_TRUE(governor_->Finish(heavy, 1000).ok());
  EXPECT_EQ(Started(1000), std::vector<WorkloadId>{light});  // submitted later, used nothing
  EXPECT_EQ(StateOf(heavy_again), WorkloadState::kQueued);
}

TEST_F(GovernorTest, AdoptedWorkloadsHoldTheirRoomWhateverTheQuotasSayNow) {
  Result<QuotaTree> quotas = QuotaTree::Create({{.name = "a", .nominal = Amount{0, 100}, .borrowing_limit = Amount{}}});
  ASSERT_TRUE(quotas.ok());
  Build(2, Fifo(), std::move(*quotas));
  Result<WorkloadId> adopted = governor_->Adopt(Job(800, Tier::kStandard, "a"), 1, GpuBit(0), 5);
  ASSERT_TRUE(adopted.ok()) << adopted.status().message();
  EXPECT_EQ(StateOf(*adopted), WorkloadState::kRunning);
  EXPECT_EQ(NodeOf(*adopted), 1u);
  EXPECT_EQ(governor_->quotas().Usage(governor_->quotas().LeafOf("a")), (Amount{0, 800}));  // above its quota
  EXPECT_EQ(governor_->Adopt(Job(300, Tier::kStandard, "a"), 1, GpuBit(0), 5).status().code(),
            StatusCode::kResourceExhausted);  // 800 + 300 > one GPU
  EXPECT_EQ(governor_->Adopt(Job(100), 7, GpuBit(0), 5).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(governor_->Finish(*adopted, 50).ok());
  EXPECT_EQ(scheduler_->reservation_count(), 0u);
}

TEST_F(GovernorTest, AResizeStaysOnItsGpuAndChangesNothingWhenItDoesNotFit) {
  Build(1, Fifo());
  const WorkloadId first = Submit(Job(400));
  const WorkloadId second = Submit(Job(400));
  EXPECT_EQ(Started(0).size(), 2u);
  Request bigger = Job(700).request;
  EXPECT_EQ(governor_->Resize(first, bigger, 1).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(governor_->Find(first)->spec.request.gpu_milli, 400);
  EXPECT_EQ(scheduler_->cluster().used_gpu_milli(), 800);
  Request fits = Job(550).request;
  ASSERT_TRUE(governor_->Resize(first, fits, 2).ok());
  EXPECT_EQ(governor_->Find(first)->spec.request.gpu_milli, 550);
  EXPECT_EQ(scheduler_->cluster().used_gpu_milli(), 950);
  ASSERT_TRUE(governor_->Finish(second, 3).ok());
  ASSERT_TRUE(governor_->Resize(first, bigger, 4).ok());
  EXPECT_EQ(scheduler_->cluster().used_gpu_milli(), 700);
  EXPECT_EQ(governor_->Resize(99, bigger, 4).code(), StatusCode::kNotFound);
}

TEST_F(GovernorTest, BadSubmissionsAreRefused) {
  Build(1, Fifo());
  WorkloadSpec spec = Job(100);
  spec.members = 0;
  EXPECT_EQ(governor_->Submit(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec.members = 65;
  EXPECT_EQ(governor_->Submit(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec = Job(100);
  spec.duration = -1;
  EXPECT_EQ(governor_->Submit(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec = Job(0);
  EXPECT_EQ(governor_->Submit(spec, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(governor_->queued(), 0u);
}

}  // namespace
}  // namespace fgpu::sched
