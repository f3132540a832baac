#include "simulate/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "simulate/tenants.h"
#include "simulate/timeline_report.h"

#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

TimedSpec Short(const std::string& baseline, uint64_t seed = 42) {
  TimedSpec spec;
  spec.baseline = (*ParseBaselines(baseline)).front();
  spec.seed = seed;
  spec.window = 1800;
  spec.warmup = 300;
  spec.drain = 300;
  spec.samples = 20;
  return spec;
}

TEST(TenantsTest, TheModelIsSeededSkewedAndItsQuotasFillTheCluster) {
  const TenantModel model;
  EXPECT_EQ(TenantNames(model).size(), 8u);
  EXPECT_EQ(TenantNames(model).front(), "org1/team1");
  const std::vector<int> first = AssignTenants(10'000, model, 42);
  EXPECT_EQ(first, AssignTenants(10'000, model, 42));
  EXPECT_NE(first, AssignTenants(10'000, model, 43));
  std::vector<int> counts(8, 0);
  for (int tenant : first) ++counts[static_cast<size_t>(tenant)];
  EXPECT_GT(counts[0], 3 * counts[7]);  // Zipf: 1 against 1/8
  Result<sched::QuotaTree> quotas = ModelQuotas(model, 100'000);
  ASSERT_TRUE(quotas.ok());
  int64_t nominal = 0;
  for (const std::string& name : TenantNames(model)) nominal += quotas->Nominal(quotas->LeafOf(name)).gpu_milli;
  EXPECT_LE(nominal, 100'000);
  EXPECT_GT(nominal, 99'990);
  TenantModel equal = model;
  equal.equal_quotas = true;
  Result<sched::QuotaTree> even = ModelQuotas(equal, 80'000);
  EXPECT_EQ(even->Nominal(even->LeafOf("org1/team1")).gpu_milli, 10'000);
  EXPECT_EQ(even->BorrowingLimit(even->LeafOf("org2/team4")).gpu_milli, 10'000);
  TenantModel bad = model;
  bad.orgs = 0;
  EXPECT_FALSE(ModelQuotas(bad, 1000).ok());
}

TEST(TimelineTest, TiersComeFromTheQos) {
  EXPECT_EQ(TierOfQos("LS"), sched::Tier::kLatency);
  EXPECT_EQ(TierOfQos("Guaranteed"), sched::Tier::kStandard);
  EXPECT_EQ(TierOfQos("Burstable"), sched::Tier::kStandard);
  EXPECT_EQ(TierOfQos("BE"), sched::Tier::kBatch);
  EXPECT_EQ(TierOfQos(""), sched::Tier::kBatch);
}

TEST(TimelineTest, ArrivalsScaleWithTheLoadAndStayInTheWindow) {
  const int64_t capacity = testing::SmallScenario().cluster.total_gpu_milli();
  Result<ArrivalPlan> light = PlanArrivals(testing::SmallScenario().pods, capacity, 0.5, 7200);
  Result<ArrivalPlan> heavy = PlanArrivals(testing::SmallScenario().pods, capacity, 1.0, 7200);
  ASSERT_TRUE(light.ok()) << light.status().message();
  ASSERT_TRUE(heavy.ok());
  EXPECT_NEAR(light->compression / heavy->compression, 2.0, 1e-9);
  EXPECT_NEAR(static_cast<double>(heavy->arrivals.size()) / static_cast<double>(light->arrivals.size()), 2.0, 0.05);
  EXPECT_GT(heavy->arrivals.size(), testing::SmallScenario().pods.pods.size());  // the sequence repeats
  for (size_t i = 1; i < heavy->arrivals.size(); ++i) {
    ASSERT_GE(heavy->arrivals[i].time, heavy->arrivals[i - 1].time);
  }
  EXPECT_LT(heavy->arrivals.back().time, 7200);
  PodList untimed = testing::SmallScenario().pods;
  untimed.timed = false;
  EXPECT_EQ(PlanArrivals(untimed, capacity, 1.0, 7200).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(PlanArrivals(testing::SmallScenario().pods, capacity, 0, 7200).ok());
}

TEST(TimelineTest, ARunAccountsForEveryPodAndIsTheSameForTheSameSeed) {
  Result<TimedResult> first = ReplayInTime(testing::SmallScenario(), Short("fgpu"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  int64_t pods = 0;
  for (const TierResult& tier : first->tiers) {
    EXPECT_EQ(tier.pods, tier.started + tier.never_started);
    EXPECT_LE(tier.delay_p50, tier.delay_p99);
    pods += tier.pods;
  }
  EXPECT_GT(pods, 0);
  EXPECT_EQ(first->max_over_limit, 0.0);  // quotas hold
  EXPECT_GT(first->allocated_mean, 0.3);
  EXPECT_LE(first->allocated_mean, 1.0);
  EXPECT_EQ(first->samples.size(), 20u);
  EXPECT_EQ(first->tenants.size(), 8u);
  Result<TimedResult> again = ReplayInTime(testing::SmallScenario(), Short("fgpu"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tiers[2].delay_p99, first->tiers[2].delay_p99);
  EXPECT_EQ(again->decisions, first->decisions);
  EXPECT_EQ(again->lost_gpu_hours, first->lost_gpu_hours);
}

TEST(TimelineTest, BaselinesDifferAsTheirRulesSay) {
  Result<TimedResult> fifo = ReplayInTime(testing::SmallScenario(), Short("fifo"));
  Result<TimedResult> preemption = ReplayInTime(testing::SmallScenario(), Short("preemption"));
  ASSERT_TRUE(fifo.ok());
  ASSERT_TRUE(preemption.ok());
  int64_t fifo_preempted = 0;
  for (const TierResult& tier : fifo->tiers) fifo_preempted += tier.preempted;
  EXPECT_EQ(fifo_preempted, 0);
  EXPECT_EQ(fifo->lost_gpu_hours, 0);
  EXPECT_EQ(preemption->tiers[2].preempted, 0);  // nothing preempts the highest tier
}

TEST(TimelineTest, BadSpecsAreRefused) {
  TimedSpec spec = Short("fifo");
  spec.load = 0;
  EXPECT_EQ(ReplayInTime(testing::SmallScenario(), spec).status().code(), StatusCode::kInvalidArgument);
  spec = Short("fifo");
  spec.warmup = spec.window;
  EXPECT_EQ(ReplayInTime(testing::SmallScenario(), spec).status().code(), StatusCode::kInvalidArgument);
  spec = Short("fifo");
  spec.tick = 0;
  EXPECT_EQ(ReplayInTime(testing::SmallScenario(), spec).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBaselines("fifo,nope").status().code(), StatusCode::kNotFound);
  EXPECT_NE(ParseBaselines("nope").status().message().find("fifo, priority, preemption, fgpu"), std::string::npos);
  EXPECT_EQ(ParseBaselines("all")->size(), 4u);
}

TEST(TimelineTest, JainsIndexIsOneForEqualSharesAndFallsWithSpread) {
  EXPECT_DOUBLE_EQ(JainIndex({}), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({0.8, 0.8, 0.8}), 1.0);
  EXPECT_NEAR(JainIndex({1, 0}), 0.5, 1e-12);
}

TimedResult Made(const std::string& baseline, double ls_p99, double allocated, double lost, double jain) {
  TimedResult run;
  run.baseline = baseline;
  run.load = 1.2;
  run.tiers[2].delay_p99 = ls_p99;
  run.allocated_mean = allocated;
  run.lost_gpu_hours = lost;
  run.delivered_gpu_hours = 100;
  run.jain = jain;
  return run;
}

TEST(TimelineReportTest, BarsAreJudgedAgainstFifoOfTheSameRuns) {
  const std::vector<TimedSummary> summaries = SummarizeTimed({Made("fifo", 1000, 0.80, 0, 0.7),
                                                              Made("fgpu", 90, 0.79, 1.5, 0.97),
                                                              Made("fgpu", 110, 0.79, 2.5, 0.95)});
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[1].runs, 2);
  EXPECT_DOUBLE_EQ(summaries[1].tiers[2].delay_p99, 100);
  EXPECT_DOUBLE_EQ(summaries[1].lost_fraction, 0.02);
  const std::vector<std::string> bars = JudgeBars(summaries, 1.2);
  ASSERT_EQ(bars.size(), 5u);
  EXPECT_EQ(bars[0].substr(0, 4), "PASS");  // 100 ≤ 1000 / 10
  EXPECT_EQ(bars[1].substr(0, 4), "PASS");  // 79 ≥ 80 − 2
  EXPECT_EQ(bars[3].substr(0, 4), "PASS");
  EXPECT_EQ(bars[4].substr(0, 4), "PASS");  // 2 % ≤ 2 %
  EXPECT_TRUE(JudgeBars(summaries, 0.5).empty());
  const std::string table = RenderTimedTable(summaries, {.nodes = 3, .gpus = 8, .seeds = {42, 43}});
  EXPECT_NE(table.find("issue 16's bars at load 1.20"), std::string::npos) << table;
  EXPECT_NE(RenderTimedSvg(summaries, 1.2, "t").find("<svg"), std::string::npos);
  EXPECT_EQ(TimedJson(summaries, {}).at("results").size(), 2u);
}

}  // namespace
}  // namespace fgpu::simulate
