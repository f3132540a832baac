#include "agent/sched_placer.h"

#include <algorithm>

#include "sched/policies/registry.h"
#include "sched/scheduler.h"

namespace fgpu::agent {
namespace {

constexpr int64_t kUnmodelled = int64_t{1} << 40;  // host CPU and RAM: not the agent's concern

sched::Request SliceRequest(uint64_t memory, uint32_t share) {
  sched::Request request;
  request.gpu_count = 1;
  request.gpu_milli = static_cast<int32_t>(std::clamp<uint32_t>(share, 1, 100) * 10);
  request.gpu_memory_bytes = static_cast<int64_t>(memory);
  return request;
}

}  // namespace

Result<SchedPlacer> SchedPlacer::Create(const std::string& policy) {
  Result<std::string_view> canonical = sched::CanonicalPolicyName(policy);
  if (!canonical.ok()) return canonical.status();
  return SchedPlacer(std::string(*canonical));
}

Result<std::size_t> SchedPlacer::Choose(const std::vector<GpuRoom>& rooms, const std::vector<SliceRecord>& slices,
                                        uint64_t memory, uint32_t share) const {
  sched::ModelTable models;
  Result<int> model = models.Intern("GPU");
  if (!model.ok()) return model.status();
  std::vector<sched::NodeSpec> nodes;
  for (const GpuRoom& room : rooms) {
    nodes.push_back({room.gpu.uuid, kUnmodelled, kUnmodelled, *model, 1, static_cast<int64_t>(room.gpu.memory_total)});
  }
  Result<sched::Cluster> cluster = sched::Cluster::Create(std::move(models), std::move(nodes));
  if (!cluster.ok()) return cluster.status();
  std::vector<sched::Request> mix;
  for (std::size_t i = 0; i < rooms.size(); ++i) {
    const auto node = static_cast<sched::NodeId>(i);
    if (rooms[i].exclusive || !rooms[i].fenced.empty()) {  // takes no new slices: full to the engine
      const sched::Request whole = SliceRequest(rooms[i].gpu.memory_total, 100);
      if (Status applied = cluster->Apply(sched::MakePlacement(node, 1, whole)); !applied.ok()) return applied;
      continue;
    }
    for (const SliceRecord& slice : slices) {
      if (slice.gpu_uuid != rooms[i].gpu.uuid) continue;
      const sched::Request held = SliceRequest(slice.memory_bytes, slice.compute_share);
      mix.push_back(held);
      if (Status applied = cluster->Apply(sched::MakePlacement(node, 1, held)); !applied.ok()) return applied;
    }
  }
  const sched::Request request = SliceRequest(memory, share);
  mix.push_back(request);
  sched::PolicyContext context{sched::TargetWorkload::MostFrequent(mix, 1.0)};
  Result<std::unique_ptr<sched::Policy>> policy = sched::MakePolicy(policy_, context);
  if (!policy.ok()) return policy.status();
  sched::Scheduler scheduler(std::move(*cluster), std::move(*policy));
  Result<sched::Decision> decision = scheduler.Decide(request);
  if (!decision.ok()) return decision.status();
  if (!decision->placed) return Status::ResourceExhausted("no GPU has room");
  return static_cast<std::size_t>(decision->node);
}

}  // namespace fgpu::agent
