// Property: whatever the policy and the sequence of requests and releases, no placement ever
// takes more than a GPU or a node has, and what is free is exactly capacity minus what the
// live reservations hold.
#include <gtest/gtest.h>

#include <map>

#include "sched/policies/registry.h"
#include "sched/scheduler.h"
#include "sched/testing.h"

namespace fgpu::sched {
namespace {

Cluster RandomCluster(Rng& rng) {
  ModelTable models;
  for (const char* name : {"A", "B", "C"}) (void)models.Intern(name);
  std::vector<NodeSpec> nodes;
  const int count = 3 + static_cast<int>(rng.Uniform(20));
  for (int index = 0; index < count; ++index) {
    NodeSpec node;
    node.name = "n" + std::to_string(index);
    node.cpu_milli = 1'000 + static_cast<int64_t>(rng.Uniform(128'000));
    node.memory_mib = 1'024 + static_cast<int64_t>(rng.Uniform(512'000));
    node.gpu_count = static_cast<int>(rng.Uniform(9));
    node.model = node.gpu_count > 0 ? static_cast<int>(rng.Uniform(3)) : kNoModel;
    node.gpu_memory_bytes = node.gpu_count > 0 ? static_cast<int64_t>(rng.Uniform(4)) << 34 : 0;
    nodes.push_back(node);
  }
  return std::move(Cluster::Create(models, nodes).value());
}

Request RandomRequest(Rng& rng) {
  Request request;
  request.cpu_milli = static_cast<int64_t>(rng.Uniform(40'000));
  request.memory_mib = static_cast<int64_t>(rng.Uniform(100'000));
  request.gpu_count =
      rng.Uniform(5) == 0 ? 0 : 1 + static_cast<int>(rng.Uniform(rng.Uniform(3) == 0 ? 8 : 1));
  if (request.gpu_count > 0) {
    request.gpu_milli =
        rng.Uniform(2) == 0 ? kMilliPerGpu : 1 + static_cast<int32_t>(rng.Uniform(kMilliPerGpu));
    request.gpu_memory_bytes = static_cast<int64_t>(rng.Uniform(3)) << 32;
    request.models = rng.Uniform(3) == 0 ? ModelSet{1} << rng.Uniform(3) : kAnyModel;
  }
  return request;
}

// Checks free ≥ 0, free ≤ capacity, and capacity − free = what live placements hold.
void ExpectConsistent(const Cluster& cluster, const std::map<ReservationId, Placement>& live) {
  for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
    const NodeSpec& spec = cluster.spec(node);
    const NodeState& state = cluster.state(node);
    int64_t cpu = 0;
    int64_t memory = 0;
    std::array<int64_t, kMaxGpusPerNode> milli{};
    std::array<int64_t, kMaxGpusPerNode> gpu_memory{};
    for (const auto& [id, placement] : live) {
      if (placement.node != node) continue;
      cpu += placement.cpu_milli;
      memory += placement.memory_mib;
      for (int gpu = 0; gpu < kMaxGpusPerNode; ++gpu) {
        if (!Contains(placement.gpus, gpu)) continue;
        ASSERT_LT(gpu, spec.gpu_count);
        milli[static_cast<size_t>(gpu)] += placement.gpu_milli;
        gpu_memory[static_cast<size_t>(gpu)] += placement.gpu_memory_bytes;
      }
    }
    ASSERT_GE(state.free_cpu_milli, 0);
    ASSERT_EQ(state.free_cpu_milli, spec.cpu_milli - cpu);
    ASSERT_GE(state.free_memory_mib, 0);
    ASSERT_EQ(state.free_memory_mib, spec.memory_mib - memory);
    for (int gpu = 0; gpu < spec.gpu_count; ++gpu) {
      const auto index = static_cast<size_t>(gpu);
      ASSERT_GE(state.free_milli[index], 0);
      ASSERT_EQ(state.free_milli[index], kMilliPerGpu - milli[index]);
      ASSERT_GE(state.free_gpu_memory[index], 0);
      ASSERT_EQ(state.free_gpu_memory[index], spec.gpu_memory_bytes - gpu_memory[index]);
    }
  }
}

TEST(SchedulerPropertyTest, NoPlacementEverExceedsAGpuOrANode) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Rng rng(seed);
    const Cluster cluster = RandomCluster(rng);
    std::vector<Request> sample;
    for (int index = 0; index < 50; ++index) sample.push_back(RandomRequest(rng));
    const auto policies = PolicyList();
    const PolicyInfo& info = policies[seed % policies.size()];
    SCOPED_TRACE(std::string(info.name) + " seed " + std::to_string(seed));
    Scheduler scheduler(
        cluster, std::move(MakePolicy(info.name, {TargetWorkload::MostFrequent(sample, 0.95)}).value()),
        {.seed = seed, .ties = seed % 2 == 0 ? TieBreak::kRandom : TieBreak::kFirstInOrder});
    std::map<ReservationId, Placement> live;
    for (int step = 0; step < 400; ++step) {
      if (!live.empty() && rng.Uniform(3) == 0) {
        auto victim = live.begin();
        std::advance(victim, static_cast<ptrdiff_t>(rng.Uniform(live.size())));
        ASSERT_TRUE(scheduler.Release(victim->first).ok());
        live.erase(victim);
      } else {
        const Request request = RandomRequest(rng);
        const Decision decision = *scheduler.Decide(request);
        if (decision.placed) {
          ASSERT_TRUE(scheduler.cluster().Fits(decision.node, request));
          const ReservationId id = *scheduler.Reserve(decision, request);
          live.emplace(id, MakePlacement(decision.node, decision.gpus, request));
        }
      }
      ExpectConsistent(scheduler.cluster(), live);
    }
  }
}

}  // namespace
}  // namespace fgpu::sched
