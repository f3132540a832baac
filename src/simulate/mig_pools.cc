#include "simulate/mig_pools.h"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <tuple>

#include "sched/policies/registry.h"
#include "sched/rng.h"
#include "sched/scheduler.h"
#include "simulate/protocol.h"

namespace fgpu::simulate {
namespace {

using fgpu::mig::kComputeSlices;
using fgpu::mig::kMemorySlices;
using fgpu::mig::ModelInfo;
using fgpu::mig::Profile;

constexpr double kEpsilon = 1e-9;
constexpr double kMostWasteForMig = 1.0 / 8;  // mixed: what a pod may waste and still go to MIG first

double ComputeOf(const Profile& profile) { return static_cast<double>(profile.compute_slices) / kComputeSlices; }
double MemoryOf(const Profile& profile) { return static_cast<double>(profile.memory_slices) / kMemorySlices; }

// The MIG nodes of a run: CPU and RAM left per node, and per GPU the memory slices taken and
// the instances of each profile (dynamic MIG: instances are created as pods arrive).
class MigPacker {
 public:
  MigPacker(const Scenario& scenario, const ModelInfo& model, std::vector<char> is_mig, std::vector<sched::NodeId> order)
      : model_(model), is_mig_(std::move(is_mig)), order_(std::move(order)) {
    for (const sched::NodeSpec& spec : scenario.nodes.nodes) {
      nodes_.push_back({spec.cpu_milli, spec.memory_mib, spec.model, std::vector<Gpu>(static_cast<size_t>(spec.gpu_count))});
    }
  }

  // A share of one GPU in an instance of `profile`.
  bool PlaceShare(const sched::Request& request, const Profile& profile) {
    const auto p = static_cast<size_t>(&profile - model_.profiles.data());
    Node* best_node = nullptr;
    Gpu* best_gpu = nullptr;
    int best_start = -1;
    std::tuple<int, int> best_score{-1, 0};
    for (const sched::NodeId id : order_) {
      Node& node = nodes_[id];
      if (!Usable(id, request)) continue;
      for (Gpu& gpu : node.gpus) {
        for (int start = 0; start < kMemorySlices; ++start) {
          if (!fgpu::mig::Fits(profile, start, gpu.occupied, gpu.media, gpu.count[p])) continue;
          const auto after = static_cast<uint8_t>(gpu.occupied | profile.Occupies(start));
          const std::tuple<int, int> score{std::popcount(after), -fgpu::mig::FreeRuns(after)};  // the fullest GPU first
          if (score <= best_score) continue;
          best_node = &node;
          best_gpu = &gpu;
          best_start = start;
          best_score = score;
        }
      }
    }
    if (best_node == nullptr) return false;
    best_gpu->occupied |= profile.Occupies(best_start);
    ++best_gpu->count[p];
    best_gpu->media = best_gpu->media || profile.media;
    Take(*best_node, request);
    return true;
  }

  // A pod without GPUs: the first MIG node with the CPU and RAM.
  bool PlaceCpu(const sched::Request& request) {
    for (const sched::NodeId id : order_) {
      if (!Usable(id, request)) continue;
      Take(nodes_[id], request);
      return true;
    }
    return false;
  }

  // Whole GPUs, a 7g instance on each: the node with the fewest empty GPUs that has enough.
  bool PlaceWhole(const sched::Request& request) {
    Node* best = nullptr;
    int best_empty = 0;
    for (const sched::NodeId id : order_) {
      if (!Usable(id, request)) continue;
      const auto empty = static_cast<int>(std::count_if(nodes_[id].gpus.begin(), nodes_[id].gpus.end(),
                                                        [](const Gpu& gpu) { return gpu.occupied == 0; }));
      if (empty >= request.gpu_count && (best == nullptr || empty < best_empty)) {
        best = &nodes_[id];
        best_empty = empty;
      }
    }
    if (best == nullptr) return false;
    int left = request.gpu_count;
    for (Gpu& gpu : best->gpus) {
      if (left > 0 && gpu.occupied == 0) {
        gpu.occupied = 0xFF;
        --left;
      }
    }
    Take(*best, request);
    return true;
  }

 private:
  struct Gpu {
    uint8_t occupied = 0;
    std::array<int, 8> count{};
    bool media = false;
  };
  struct Node {
    int64_t free_cpu_milli;
    int64_t free_memory_mib;
    int model;
    std::vector<Gpu> gpus;
  };

  bool Usable(sched::NodeId id, const sched::Request& request) const {
    const Node& node = nodes_[id];
    return is_mig_[id] != 0 && node.free_cpu_milli >= request.cpu_milli && node.free_memory_mib >= request.memory_mib &&
           sched::Accepts(request.models, node.model);
  }
  static void Take(Node& node, const sched::Request& request) {
    node.free_cpu_milli -= request.cpu_milli;
    node.free_memory_mib -= request.memory_mib;
  }

  const ModelInfo& model_;
  std::vector<char> is_mig_;
  std::vector<sched::NodeId> order_;
  std::vector<Node> nodes_;
};

// Which nodes run MIG: all, none, or a seeded share of them.
std::vector<char> MigNodes(const PoolsSpec& spec, size_t node_count) {
  std::vector<char> is_mig(node_count, spec.pools == Pools::kMig ? 1 : 0);
  if (spec.pools != Pools::kMixed) return is_mig;
  sched::Rng rng(spec.seed ^ 0x6d6967ULL);
  for (char& mig : is_mig) mig = rng.UniformDouble() < spec.mig_fraction ? 1 : 0;
  return is_mig;
}

}  // namespace

std::string_view NameOf(Pools pools) {
  switch (pools) {
    case Pools::kSlices: return "slices";
    case Pools::kMig: return "mig";
    case Pools::kMixed: return "mixed";
  }
  return "?";
}

const Profile& ProfileForShare(const ModelInfo& model, double share) {
  const Profile* best = nullptr;
  for (const Profile& profile : model.profiles) {
    if (profile.media || ComputeOf(profile) < share - kEpsilon || MemoryOf(profile) < share - kEpsilon) continue;
    if (best == nullptr ||
        std::tie(profile.memory_slices, profile.compute_slices) < std::tie(best->memory_slices, best->compute_slices)) {
      best = &profile;
    }
  }
  return best != nullptr ? *best : model.profiles.back();  // the 7g holds every share
}

Result<PoolsResult> ReplayPools(const Scenario& scenario, const PoolsSpec& spec) {
  if (!(spec.mig_fraction >= 0 && spec.mig_fraction <= 1)) return Status::InvalidArgument("the MIG share of nodes must be in [0, 1]");
  const ModelInfo& model = fgpu::mig::InfoOf(spec.model);
  Result<std::unique_ptr<sched::Policy>> policy = sched::MakePolicy("FGD+", {scenario.workload});
  if (!policy.ok()) return policy.status();
  const std::vector<sched::NodeId> order = TieOrder(scenario.nodes, spec.seed);
  sched::Scheduler slices(scenario.cluster, std::move(*policy),
                          {.seed = spec.seed ^ 0x5deece66dULL, .ties = sched::TieBreak::kFirstInOrder, .node_order = order});
  const std::vector<char> is_mig = MigNodes(spec, scenario.nodes.nodes.size());
  for (size_t node = 0; node < is_mig.size(); ++node) {
    if (is_mig[node] != 0) {
      if (Status cordoned = slices.SetCordoned(static_cast<sched::NodeId>(node), true); !cordoned.ok()) return cordoned;
    }
  }
  MigPacker mig(scenario, model, is_mig, order);
  const auto place_slice = [&](const sched::Request& request) -> Result<bool> {
    Result<sched::Decision> decision = slices.Decide(request);
    if (!decision.ok()) return decision.status();
    if (!decision->placed) return false;
    Result<sched::ReservationId> reserved = slices.Reserve(*decision, request);
    if (!reserved.ok()) return reserved.status();
    return true;
  };

  PoolsResult result;
  result.pools = spec.pools;
  result.seed = spec.seed;
  const int64_t capacity = scenario.cluster.total_gpu_milli();
  int64_t arrived = 0;
  double requested = 0;  // in GPUs
  double held_compute = 0;
  double held_memory = 0;
  double mig_requested = 0;
  for (const uint32_t index : ArrivalOrder(scenario.pods, spec.seed, spec.inflate, capacity)) {
    const sched::Request& request = scenario.pods.pods[index].request;
    if (arrived + request.TotalGpuMilli() > capacity) break;
    arrived += request.TotalGpuMilli();
    ++result.arrivals;
    const double share = static_cast<double>(request.gpu_milli) / sched::kMilliPerGpu;
    const Profile& profile = request.gpu_count == 1 ? ProfileForShare(model, share) : model.profiles.back();
    const bool whole = request.gpu_count > 1 || request.gpu_milli == sched::kMilliPerGpu;
    const auto place_mig = [&] {
      if (request.gpu_count == 0) return mig.PlaceCpu(request);
      return whole ? mig.PlaceWhole(request) : mig.PlaceShare(request, profile);
    };
    const double waste = std::max(ComputeOf(profile), MemoryOf(profile)) - share;
    const bool mig_first = request.gpu_count > 0 && spec.pools != Pools::kSlices && waste <= kMostWasteForMig + kEpsilon;
    bool placed = false;
    bool in_mig = false;
    if (mig_first || spec.pools == Pools::kMig) placed = in_mig = place_mig();
    if (!placed && spec.pools != Pools::kMig) {
      Result<bool> sliced = place_slice(request);
      if (!sliced.ok()) return sliced.status();
      placed = *sliced;
    }
    if (!placed && spec.pools == Pools::kMixed && !mig_first) placed = in_mig = place_mig();
    if (!placed) {
      ++result.failed;
      continue;
    }
    ++result.placed;
    requested += share * request.gpu_count;
    if (in_mig && request.gpu_count > 0) {
      ++result.on_mig;
      mig_requested += share * request.gpu_count;
      held_compute += (whole ? 1.0 : ComputeOf(profile)) * request.gpu_count;
      held_memory += (whole ? 1.0 : MemoryOf(profile)) * request.gpu_count;
    }
  }
  const double gpus = static_cast<double>(std::max<int64_t>(capacity, 1)) / sched::kMilliPerGpu;
  result.requested = 100 * requested / gpus;
  result.unallocated = 100 - result.requested;
  // Slices hold what their pods ask; MIG instances what their profile has.
  result.stranded_compute = 100 * (held_compute - mig_requested) / gpus;
  result.stranded_memory = 100 * (held_memory - mig_requested) / gpus;
  result.stranded_memory_gib =
      (held_memory - mig_requested) * static_cast<double>(model.memory_bytes) / static_cast<double>(uint64_t{1} << 30);
  return result;
}

}  // namespace fgpu::simulate
