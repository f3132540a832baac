#include "simulate/protocol.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

PodList FivePods() {
  PodList pods;
  for (const auto& [name, gpus, milli] :
       {std::tuple{"e", 1, 500}, {"a", 2, 1000}, {"d", 0, 0}, {"c", 1, 300}, {"b", 8, 1000}}) {
    sched::Request request;
    request.cpu_milli = 1'000;
    request.gpu_count = gpus;
    request.gpu_milli = milli;
    pods.pods.push_back({name, 0, request});
  }
  return pods;  // 10.8 GPUs requested
}

TEST(ArrivalOrderTest, EveryPodOnceShuffledThenClonesUpToTheTarget) {
  const PodList pods = FivePods();
  const std::vector<uint32_t> order = ArrivalOrder(pods, 42, 1.3, 20'000);  // target 26 GPUs
  ASSERT_GT(order.size(), 5u);
  std::vector<uint32_t> first(order.begin(), order.begin() + 5);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  int64_t requested = 0;
  for (uint32_t index : order) requested += pods.pods[index].request.TotalGpuMilli();
  // Stops at the first clone whose per-GPU share would pass 26,000; the last accepted clone
  // may overshoot by up to 7 GPUs (an 8-GPU pod checked by one GPU's share).
  EXPECT_LE(requested, 26'000 + 7'000);
  EXPECT_GT(requested, 26'000 - 1'000);
  EXPECT_EQ(order, ArrivalOrder(pods, 42, 1.3, 20'000));  // deterministic
  EXPECT_NE(order, ArrivalOrder(pods, 43, 1.3, 20'000));
}

TEST(ArrivalOrderTest, NoInflationKeepsTheShuffledTrace) {
  EXPECT_EQ(ArrivalOrder(FivePods(), 1, 0, 20'000).size(), 5u);
  PodList cpu_only;
  cpu_only.pods.push_back({"x", 0, {}});
  EXPECT_EQ(ArrivalOrder(cpu_only, 1, 1.3, 20'000).size(), 1u);  // no GPU pod: nothing tops up
}

TEST(TypicalWorkloadTest, CoversNinetyFivePercentOfTheSmallTrace) {
  Result<NodeList> nodes = LoadNodes(testing::SmallNodes());
  ASSERT_TRUE(nodes.ok());
  Result<PodList> pods = LoadPods(testing::SmallPods(), *nodes);
  ASSERT_TRUE(pods.ok());
  const sched::TargetWorkload workload = TypicalWorkload(*pods);
  ASSERT_FALSE(workload.empty());
  double weight = 0;
  for (const sched::TargetTask& task : workload.tasks()) weight += task.weight;
  EXPECT_NEAR(weight, 1.0, 1e-9);
}

}  // namespace
}  // namespace fgpu::simulate
