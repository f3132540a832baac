#include "cli/run_plan.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace fgpu::cli {
namespace {

TEST(RunPlan, MemoryLimitsInBytesAndPercent) {
  EXPECT_EQ(*ParseMemoryLimit("512MiB", 80 * kGiB), 512ull << 20);
  EXPECT_EQ(*ParseMemoryLimit("10GiB", 80 * kGiB), 10 * kGiB);
  EXPECT_EQ(*ParseMemoryLimit("40%", 80 * kGiB), 32 * kGiB);
  EXPECT_EQ(*ParseMemoryLimit("100%", 80 * kGiB), 80 * kGiB);
  EXPECT_EQ(*ParseMemoryLimit("12.5%", 80 * kGiB), 10 * kGiB);
}

TEST(RunPlan, BadMemoryLimitsNameTheInput) {
  for (const char* bad : {"", "0", "0%", "-1GiB", "101%", "abc", "10 parsecs", "%", "NaN%", "81GiB"}) {
    Result<uint64_t> parsed = ParseMemoryLimit(bad, 80 * kGiB);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_NE(ParseMemoryLimit("81GiB", 80 * kGiB).status().message().find("more than the GPU has"),
            std::string::npos);
}

TEST(RunPlan, InterposerGoesFirstAndOnlyTheSliceGpuIsVisible) {
  const Environment env = WorkloadEnvironment("/opt/fgpu/lib/fgpu/libfgpu.so", "/usr/lib/libother.so",
                                              "/dev/shm/fgpu-run-0/run-1", "GPU-abc");
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so:/usr/lib/libother.so"}));
  EXPECT_EQ(env[1].second, "/dev/shm/fgpu-run-0/run-1");
  EXPECT_EQ(env[2], (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "GPU-abc"}));
  EXPECT_EQ(WorkloadEnvironment("/x/libfgpu.so", nullptr, "d", "u")[0].second, "/x/libfgpu.so");
  EXPECT_EQ(WorkloadEnvironment("/x/libfgpu.so", "", "d", "u")[0].second, "/x/libfgpu.so");
}

TEST(RunPlan, WorkloadsOfASimulatedAgentGetTheSimulatorsVariables) {
  EXPECT_TRUE(SimulatorEnvironmentForWorkloads(nullptr, nullptr, "/usr/lib/x").empty());
  EXPECT_TRUE(SimulatorEnvironmentForWorkloads("", "", "/usr/lib/x").empty());
  const Environment env = SimulatorEnvironmentForWorkloads(nullptr, "/fgpu-node1", "/b/lib/fgpu/sim:/usr/lib/x");
  EXPECT_EQ(env, (Environment{{"FGPU_SIM_SEGMENT", "/fgpu-node1"}, {"LD_LIBRARY_PATH", "/b/lib/fgpu/sim:/usr/lib/x"}}));
  EXPECT_EQ(SimulatorEnvironmentForWorkloads("/c.json", nullptr, nullptr), (Environment{{"FGPU_SIM_CONFIG", "/c.json"}}));
}

TEST(RunPlan, HookLibrarySitsBesideTheBinary) {
  EXPECT_EQ(HookLibraryBeside("/opt/fgpu/bin/fgpu"), "/opt/fgpu/lib/fgpu/libfgpu.so");
  EXPECT_EQ(HookLibraryBeside("/work/build/dev/bin/fgpu"), "/work/build/dev/lib/fgpu/libfgpu.so");
}

}  // namespace
}  // namespace fgpu::cli

namespace fgpu::cli {
namespace {

TEST(ComputeShareTest, AcceptsPercentagesFromOneToHundred) {
  EXPECT_EQ(*ParseComputeShare("30"), 30u);
  EXPECT_EQ(*ParseComputeShare("30%"), 30u);
  EXPECT_EQ(*ParseComputeShare("1"), 1u);
  EXPECT_EQ(*ParseComputeShare("100%"), 100u);
}

TEST(ComputeShareTest, RefusesEverythingElseNamingTheInput) {
  for (const char* bad : {"", "0", "101", "-5", "50.5", "abc", "%", "1000", "30%%"}) {
    const Result<uint32_t> share = ParseComputeShare(bad);
    ASSERT_FALSE(share.ok()) << bad;
    EXPECT_NE(share.status().message().find(std::string("'") + bad + "'"), std::string::npos) << share.status().message();
  }
}

TEST(RunPlan, AnAgentSlicesWholeEnvironmentIsApplied) {
  const Environment slice = {{"FGPU_SIM_SEGMENT", "/seg"}, {"LD_LIBRARY_PATH", "/b/lib/fgpu/sim"},
                             {"LD_PRELOAD", "/b/lib/fgpu/libfgpu.so"}, {"FGPU_SLICE", "/var/lib/fgpu/slices/s1"},
                             {"CUDA_VISIBLE_DEVICES", "GPU-1"}};
  const Environment env = AgentSliceEnvironment(slice, "/mine/libfgpu.so", "/usr/lib/libother.so", "/opt/lib");
  const Environment expected = {{"FGPU_SIM_SEGMENT", "/seg"}, {"LD_LIBRARY_PATH", "/b/lib/fgpu/sim:/opt/lib"},
                                {"LD_PRELOAD", "/b/lib/fgpu/libfgpu.so:/usr/lib/libother.so"},
                                {"FGPU_SLICE", "/var/lib/fgpu/slices/s1"}, {"CUDA_VISIBLE_DEVICES", "GPU-1"}};
  EXPECT_EQ(env, expected);
  // Nothing set yet: the slice's values alone, no empty entry.
  const Environment bare = AgentSliceEnvironment(slice, "/mine/libfgpu.so", nullptr, "");
  EXPECT_EQ(bare[1].second, "/b/lib/fgpu/sim");
  EXPECT_EQ(bare[2].second, "/b/lib/fgpu/libfgpu.so");
}

TEST(RunPlan, AnAgentThatNamesNoInterposerGetsOurs) {
  const Environment env = AgentSliceEnvironment({{"FGPU_SLICE", "/d"}, {"LD_PRELOAD", ""}}, "/mine/libfgpu.so", nullptr, nullptr);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"LD_PRELOAD", "/mine/libfgpu.so"}));
  EXPECT_EQ(env[1].first, "FGPU_SLICE");
}

}  // namespace
}  // namespace fgpu::cli
