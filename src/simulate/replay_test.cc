// The small checked-in trace (testdata/), replayed end to end in milliseconds.
#include "simulate/replay.h"

#include <gtest/gtest.h>

#include "sched/policies/registry.h"
#include "simulate/runner.h"
#include "simulate/summary.h"
#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

class SmallTraceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<Scenario> loaded = Scenario::Load(testing::SmallNodes(), testing::SmallPods());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    scenario_ = new Scenario(std::move(*loaded));
  }
  static void TearDownTestSuite() { delete scenario_; }
  static Scenario* scenario_;
};
Scenario* SmallTraceTest::scenario_ = nullptr;

TEST_F(SmallTraceTest, EveryPolicyReplaysTheProtocolDeterministically) {
  for (const sched::PolicyInfo& info : sched::PolicyList()) {
    SCOPED_TRACE(info.name);
    Result<RunResult> run = Replay(*scenario_, {std::string(info.name), 7, 1.3});
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_EQ(run->policy, info.name);
    EXPECT_EQ(run->arrivals, run->placed + run->failed);
    EXPECT_EQ(run->latency_ns.size(), static_cast<size_t>(run->arrivals));
    const std::optional<double> at_100 = run->curve.AllocatedAt(100);
    ASSERT_TRUE(at_100.has_value());
    EXPECT_GT(*at_100, 50);
    EXPECT_LE(*at_100, 100);
    Result<RunResult> again = Replay(*scenario_, {std::string(info.name), 7, 1.3});
    EXPECT_EQ(again->placed, run->placed);
    EXPECT_EQ(again->curve.AllocatedAt(130), run->curve.AllocatedAt(130));
  }
}

TEST_F(SmallTraceTest, FragmentationAwarePoliciesBeatRandom) {
  RunPlan plan{.policies = {"Random", "FGD", "FGD+"}, .seeds = {1, 2, 3, 4}, .inflate = 1.3, .jobs = 2};
  Progress progress;
  Result<std::vector<RunResult>> runs = RunAll(*scenario_, plan, progress);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ(progress.runs_done.load(), 12);
  EXPECT_EQ(progress.pods_done.load(), progress.pods_total.load());
  const std::vector<PolicySummary> summaries = Summarize(*runs, 1.3);
  ASSERT_EQ(summaries.size(), 3u);
  EXPECT_EQ(summaries[0].policy, "Random");
  EXPECT_EQ(summaries[0].seeds.size(), 4u);
  EXPECT_LT(summaries[1].unallocated_at_end.mean, summaries[0].unallocated_at_end.mean);
  EXPECT_LT(summaries[2].unallocated_at_end.mean, summaries[0].unallocated_at_end.mean);
  EXPECT_GT(summaries[2].decisions_per_sec, 1000);
  EXPECT_EQ(summaries[2].curve.front().arrived_pct, 0);
  EXPECT_EQ(summaries[2].curve.back().arrived_pct, 130);
}

TEST_F(SmallTraceTest, AnUnknownPolicyIsAnErrorNotACrash) {
  EXPECT_EQ(Replay(*scenario_, {"Magic", 1, 1.3}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fgpu::simulate
