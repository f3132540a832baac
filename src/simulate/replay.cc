#include "simulate/replay.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <utility>

#include "sched/policies/registry.h"
#include "sched/rng.h"
#include "sched/scheduler.h"
#include "simulate/protocol.h"

namespace fgpu::simulate {

namespace {

// Progress is published in batches so runs on several threads do not fight over one line.
constexpr int64_t kProgressBatch = 64;

double NodeFragment(const sched::TargetWorkload& workload, const sched::NodeView& node) {
  return workload.NodeFragment(node.spec.model, node.state.free_cpu_milli, node.free_milli());
}

// The cluster's FGD fragmentation, kept current one changed node at a time.
class FragmentMeter {
 public:
  FragmentMeter(const sched::TargetWorkload& workload, const sched::Cluster& cluster) : workload_(workload) {
    for (sched::NodeId node = 0; node < static_cast<sched::NodeId>(cluster.node_count()); ++node) {
      per_node_.push_back(NodeFragment(workload, cluster.view(node)));
      total_ += per_node_.back();
    }
  }
  void NodeChanged(const sched::NodeView& node) {
    const double now = NodeFragment(workload_, node);
    total_ += now - per_node_[node.id];
    per_node_[node.id] = now;
  }
  double total() const { return total_; }

 private:
  const sched::TargetWorkload& workload_;
  std::vector<double> per_node_;
  double total_ = 0;
};

}  // namespace

Result<Scenario> Scenario::Load(const std::string& nodes_path, const std::string& pods_path) {
  Result<NodeList> nodes = LoadNodes(nodes_path);
  if (!nodes.ok()) return nodes.status();
  Result<PodList> pods = LoadPods(pods_path, *nodes);
  if (!pods.ok()) return pods.status();
  Result<sched::Cluster> cluster = sched::Cluster::Create(nodes->models, nodes->nodes);
  if (!cluster.ok()) return Status::InvalidArgument(nodes_path + ": " + cluster.status().message());
  sched::TargetWorkload workload = TypicalWorkload(*pods);
  return Scenario{std::move(*nodes), std::move(*pods), std::move(*cluster), std::move(workload)};
}

std::vector<sched::NodeId> TieOrder(const NodeList& nodes, uint64_t seed) {
  std::vector<sched::NodeId> order(nodes.nodes.size());
  std::iota(order.begin(), order.end(), sched::NodeId{0});
  std::stable_sort(order.begin(), order.end(), [&](sched::NodeId left, sched::NodeId right) {
    return nodes.nodes[left].name < nodes.nodes[right].name;
  });
  sched::Rng rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (size_t last = order.size(); last > 1; --last) std::swap(order[last - 1], order[rng.Uniform(last)]);
  return order;
}

Result<RunResult> Replay(const Scenario& scenario, const RunSpec& spec, std::atomic<int64_t>* pods_done) {
  Result<std::unique_ptr<sched::Policy>> policy = sched::MakePolicy(spec.policy, {scenario.workload});
  if (!policy.ok()) return policy.status();
  RunResult run;
  run.policy = std::string((*policy)->name());
  run.seed = spec.seed;
  const std::vector<uint32_t> order =
      ArrivalOrder(scenario.pods, spec.seed, spec.inflate, scenario.cluster.total_gpu_milli());
  // The policy's random stream is not the arrival stream: changing a policy must not change
  // which pods arrive.
  sched::Scheduler scheduler(scenario.cluster, std::move(*policy),
                             {.seed = spec.seed ^ 0x5deece66dULL,
                              .ties = spec.ties,
                              .node_order = TieOrder(scenario.nodes, spec.seed)});
  FragmentMeter fragment(scenario.workload, scheduler.cluster());
  const auto capacity = static_cast<double>(std::max<int64_t>(scenario.cluster.total_gpu_milli(), 1));
  int64_t arrived_milli = 0;
  int64_t unpublished = 0;
  run.latency_ns.reserve(order.size());
  for (uint32_t index : order) {
    const sched::Request& request = scenario.pods.pods[index].request;
    arrived_milli += request.TotalGpuMilli();
    const auto start = std::chrono::steady_clock::now();
    Result<sched::Decision> decision = scheduler.Decide(request);
    if (!decision.ok()) return decision.status();
    if (decision->placed) {
      Result<sched::ReservationId> reserved = scheduler.Reserve(*decision, request);
      if (!reserved.ok()) return reserved.status();
    }
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    const auto nanos = static_cast<uint64_t>(elapsed.count());
    run.latency_ns.push_back(
        static_cast<uint32_t>(std::min<uint64_t>(nanos, std::numeric_limits<uint32_t>::max())));
    run.decision_seconds += static_cast<double>(nanos) * 1e-9;
    ++run.arrivals;
    if (decision->placed) {
      ++run.placed;
      fragment.NodeChanged(scheduler.cluster().view(decision->node));
    } else {
      ++run.failed;
    }
    run.curve.Add(100.0 * static_cast<double>(arrived_milli) / capacity,
                  100.0 * static_cast<double>(scheduler.cluster().used_gpu_milli()) / capacity,
                  100.0 * fragment.total() / capacity);
    if (pods_done != nullptr && ++unpublished == kProgressBatch) {
      pods_done->fetch_add(unpublished, std::memory_order_relaxed);  // a counter only: no ordering needed
      unpublished = 0;
    }
  }
  if (pods_done != nullptr) pods_done->fetch_add(unpublished, std::memory_order_relaxed);
  return run;
}

}  // namespace fgpu::simulate
