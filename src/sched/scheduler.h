// The placement engine: filter → score → reserve over a Cluster, with the scoring policy as a
// plugin (policy.h).
//
// Contract
// - Decide runs the reserve plugins' PreFilters (quotas), then picks the best-scoring node that
//   every filter passes (plugin.h: resources, a named node, a cordon, then the added filters),
//   and the GPUs on it. It changes nothing. "No node fits" and a PreFilter's refusal are normal
//   answers (Decision::placed = false with its reason), not errors; an invalid request
//   (Validate) is InvalidArgument.
// - Reserve applies a decision and tells the reserve plugins. It fails with ResourceExhausted,
//   changing nothing, if the decision no longer fits or a PreFilter now refuses it.
// - Unreserve undoes a reservation that will not be bound; it is idempotent and ignores ids
//   it does not know (the Kubernetes contract). Release gives back a placement whose workload
//   ended; NotFound for an unknown id. Both return exactly what Reserve took.
// - Incremental: scores are cached per (node, request shape) and a node is rescored only after
//   it changed (or after the policy's global state changed), so a decision costs O(changed
//   nodes × policy cost + models × log n), not a scan of the cluster. The first request of a
//   new shape scores every node once.
// - Ties: the first node of SchedulerOptions::node_order, or at random (TieBreak).
// - Deterministic for a given seed and node order. Not thread-safe: one thread drives a
//   Scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "sched/cluster.h"
#include "sched/max_tree.h"
#include "sched/plugin.h"
#include "sched/policy.h"
#include "sched/request.h"
#include "sched/rng.h"

namespace fgpu::sched {

// How to choose among nodes with equal best scores.
enum class TieBreak : uint8_t {
  // The first in `node_order`. The FGD authors' simulator does this: its kube-scheduler picks
  // the lexicographically smallest node name, and node names start with a seeded random
  // permutation index, so ties go to the first node of a per-seed random order. It packs.
  kFirstInOrder,
  // Uniformly at random (upstream kube-scheduler's reservoir sampling). It spreads.
  kRandom,
};

struct SchedulerOptions {
  // Seeds random tie-breaks and the random choices of policies.
  uint64_t seed = 1;
  TieBreak ties = TieBreak::kFirstInOrder;
  // A permutation of the node ids: the order kFirstInOrder follows. Empty: by node id.
  std::vector<NodeId> node_order = {};
};

struct Decision {
  bool placed = false;  // false: no node fits the request now, or a PreFilter refused it
  NodeId node = 0;
  GpuSet gpus = 0;
  double score = 0;
  std::string reason{};  // when not placed: the PreFilter's refusal, or that no node fits
};

using ReservationId = uint64_t;

struct Reservation {
  Placement placement;
  Request request;
};

// A node that did not take a request, and the filter that refused it.
struct Rejection {
  NodeId node = 0;
  std::string_view filter;
};

class Scheduler {
 public:
  Scheduler(Cluster cluster, std::unique_ptr<Policy> policy, SchedulerOptions options = {});

  // `observe` false: the policy does not count this as an arrival (Policy::Observe) — a
  // queued request asked again is the same arrival.
  Result<Decision> Decide(const Request& request, bool observe = true);
  Result<ReservationId> Reserve(const Decision& decision, const Request& request);
  // Takes a placement that already exists (a workload found running after a restart): only the
  // capacity must hold it — PreFilters and node filters are not asked, the plugins are told.
  // ResourceExhausted when it does not fit.
  Result<ReservationId> Adopt(const Placement& placement, const Request& request);
  void Unreserve(ReservationId id);
  Status Release(ReservationId id);

  // Plugins run after the built-in ones, in the order added; the scheduler owns them and the
  // pointer returned stays valid for its life.
  template <typename Plugin>
  Plugin* AddFilter(std::unique_ptr<Plugin> plugin) {
    Plugin* raw = plugin.get();
    filters_.push_back(std::move(plugin));
    ++epoch_;  // every cached filter result is stale
    return raw;
  }
  template <typename Plugin>
  Plugin* AddScorePlugin(std::unique_ptr<Plugin> plugin) {
    Plugin* raw = plugin.get();
    score_plugins_.push_back(std::move(plugin));
    ++epoch_;  // every cached score is stale
    return raw;
  }
  template <typename Plugin>
  Plugin* AddReservePlugin(std::unique_ptr<Plugin> plugin) {
    Plugin* raw = plugin.get();
    reserve_plugins_.push_back(std::move(plugin));
    return raw;
  }

  Status SetCordoned(NodeId node, bool cordoned) { return cluster_.SetCordoned(node, cordoned); }
  Status Reshape(NodeId node, std::string name, int64_t gpu_memory_bytes) {
    return cluster_.Reshape(node, std::move(name), gpu_memory_bytes);
  }
  // A plugin's per-node state changed (plugin.h).
  Status Touch(NodeId node) { return cluster_.Touch(node); }

  // Why no node takes the request: for every node, the first filter that refuses it; empty
  // when some node passes them all. PreFilters are not asked (PreFilter says what they think).
  // Looks at every node: for explaining a refusal, not for deciding.
  std::vector<Rejection> Explain(const Request& request) const;
  Status PreFilter(const Request& request) const;

  const Reservation* reservation(ReservationId id) const;
  const std::unordered_map<ReservationId, Reservation>& reservations() const { return reservations_; }

  const Cluster& cluster() const { return cluster_; }
  const Policy& policy() const { return *policy_; }
  size_t reservation_count() const { return reservations_.size(); }

 private:
  // Nodes are grouped by GPU model (ModelBias applies per group); inside a group, tree leaves
  // are the nodes' ranks in the tie order, so a group's first tied node is NthBest(0).
  struct Group {
    int model = kNoModel;
    std::vector<NodeId> node_at_leaf;
  };

  // The cached scores of every node for one request shape: one tree per group.
  struct ShapeScores {
    Request request;  // a request of this shape, to score with
    std::vector<MaxTree> trees;
    std::vector<uint32_t> versions;  // node version each cached score was computed at
    std::vector<GpuSet> gpus;        // each node's scored GPUs
    uint64_t seen = 0;               // change-log position the cache is current to
    uint64_t epoch = 0;              // policy epoch the cache was built in
    bool built = false;
  };

  struct Best {
    NodeId node = 0;
    double score = MaxTree::kNone;
  };

  void BuildGroups();
  ShapeScores& ScoresFor(const Request& request);
  void Refresh(ShapeScores& scores);
  void Rescore(ShapeScores& scores, NodeId node);
  // The best node over all groups (with their biases), or nullopt when no node fits.
  std::optional<Best> PickBest(const ShapeScores& scores, const Request& request);
  Status Free(ReservationId id);
  // The first filter that refuses the request on the node, or nullptr.
  const FilterPlugin* Refusing(NodeId node, const Request& request) const;

  Cluster cluster_;
  std::unique_ptr<Policy> policy_;
  SchedulerOptions options_;
  std::vector<int> rank_of_node_;
  std::vector<NodeId> node_at_rank_;
  std::vector<Group> groups_;
  std::vector<uint32_t> group_of_node_;
  std::vector<int> leaf_of_node_;
  std::vector<double> group_totals_;  // scratch for PickBest
  Rng rng_;
  uint64_t epoch_ = 0;
  std::unordered_map<Shape, size_t, ShapeHash> shape_index_;
  std::vector<std::unique_ptr<ShapeScores>> shapes_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;  // the built-in ones first
  std::vector<std::unique_ptr<ScorePlugin>> score_plugins_;
  std::vector<std::unique_ptr<ReservePlugin>> reserve_plugins_;
  std::unordered_map<ReservationId, Reservation> reservations_;
  ReservationId next_id_ = 1;
};

}  // namespace fgpu::sched
