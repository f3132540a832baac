// The placement engine: filter → score → reserve over a Cluster, with the scoring policy as a
// plugin (policy.h).
//
// Contract
// - Decide picks the best-scoring node on which the request fits, and the GPUs on it. It
//   changes nothing. "No node fits" is a normal answer (Decision::placed = false), not an
//   error; an invalid request (Validate) is InvalidArgument.
// - Reserve applies a decision. It fails with ResourceExhausted, changing nothing, if the
//   decision no longer fits (the cluster changed in between).
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
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "sched/cluster.h"
#include "sched/max_tree.h"
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
  bool placed = false;  // false: no node fits the request now
  NodeId node = 0;
  GpuSet gpus = 0;
  double score = 0;
};

using ReservationId = uint64_t;

class Scheduler {
 public:
  Scheduler(Cluster cluster, std::unique_ptr<Policy> policy, SchedulerOptions options = {});

  Result<Decision> Decide(const Request& request);
  Result<ReservationId> Reserve(const Decision& decision, const Request& request);
  void Unreserve(ReservationId id);
  Status Release(ReservationId id);

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
  std::unordered_map<ReservationId, Placement> reservations_;
  ReservationId next_id_ = 1;
};

}  // namespace fgpu::sched
