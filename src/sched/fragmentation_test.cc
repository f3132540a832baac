#include "sched/fragmentation.h"

#include <gtest/gtest.h>

#include <array>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

// CPU-only (weight 1), a 500-milli share (1) and a whole GPU (2): weights 0.25, 0.25, 0.5.
TargetWorkload ThreeTasks(ModelSet whole_gpu_models = kAnyModel) {
  return TargetWorkload(
      {{.cpu_milli = 8'000, .gpu_milli = 0, .gpu_count = 0, .weight = 1},
       {.cpu_milli = 4'000, .gpu_milli = 500, .gpu_count = 1, .weight = 1},
       {.cpu_milli = 4'000, .gpu_milli = 1000, .gpu_count = 1, .models = whole_gpu_models, .weight = 2}});
}

constexpr std::array<int32_t, 4> kFree = {1000, 600, 300, 0};  // 1900 idle

TEST(NodeFragmentTest, CountsGpusTooSmallForEachTask) {
  // CPU-only: all idle (0.25·1900 = 475); share: the 300 GPU (0.25·300 = 75);
  // whole GPU: 600 + 300 (0.5·900 = 450).
  EXPECT_DOUBLE_EQ(ThreeTasks().NodeFragment(0, 16'000, kFree), 1000);
}

TEST(NodeFragmentTest, AllIdleCountsForTasksLackingCpu) {
  EXPECT_DOUBLE_EQ(ThreeTasks().NodeFragment(0, 3'000, kFree), 1900);
}

TEST(NodeFragmentTest, AllIdleCountsForTasksThatRefuseTheModel) {
  // The whole-GPU task accepts only model 1: on model 0 all 1900 idle is fragment for it.
  EXPECT_DOUBLE_EQ(ThreeTasks(ModelSet{1} << 1).NodeFragment(0, 16'000, kFree), 475 + 75 + 950);
}

TEST(NodeFragmentTest, AllIdleCountsForTasksNeedingMoreGpusThanFit) {
  TargetWorkload two_gpus({{.cpu_milli = 0, .gpu_milli = 1000, .gpu_count = 2, .weight = 1}});
  EXPECT_DOUBLE_EQ(two_gpus.NodeFragment(0, 16'000, kFree), 1900);
  const std::array<int32_t, 3> two_free = {1000, 1000, 400};
  EXPECT_DOUBLE_EQ(two_gpus.NodeFragment(0, 16'000, two_free), 400);
}

TEST(NodeFragmentTest, AFullNodeHasNoFragment) {
  const std::array<int32_t, 2> full = {0, 0};
  EXPECT_DOUBLE_EQ(ThreeTasks().NodeFragment(0, 0, full), 0);
}

TEST(MostFrequentTest, KeepsTheShortestPrefixCoveringTheShare) {
  std::vector<Request> requests;
  for (int copy = 0; copy < 5; ++copy) requests.push_back(testing::Gpus(1, 500));
  for (int copy = 0; copy < 3; ++copy) requests.push_back(testing::Gpus(1, 1000));
  requests.push_back(testing::CpuOnly(2'000));
  requests.push_back(testing::CpuOnly(9'000));
  const TargetWorkload eighty = TargetWorkload::MostFrequent(requests, 0.80);
  ASSERT_EQ(eighty.tasks().size(), 2u);
  EXPECT_EQ(eighty.tasks()[0].gpu_milli, 500);
  EXPECT_DOUBLE_EQ(eighty.tasks()[0].weight, 5.0 / 8);
  const TargetWorkload more = TargetWorkload::MostFrequent(requests, 0.81);
  ASSERT_EQ(more.tasks().size(), 3u);
  EXPECT_EQ(more.tasks()[2].cpu_milli, 9'000);  // equal counts: larger CPU first
  EXPECT_EQ(TargetWorkload::MostFrequent(requests, 1.0).tasks().size(), 4u);
}

}  // namespace
}  // namespace fgpu::sched
