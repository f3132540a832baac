#include "sched/scheduler.h"

#include <algorithm>
#include <utility>

namespace fgpu::sched {

namespace {

// Request shapes whose scores are cached at once (the Alibaba traces have 50-460).
constexpr size_t kMaxCachedShapes = 2048;

}  // namespace

Scheduler::Scheduler(Cluster cluster, std::unique_ptr<Policy> policy, SchedulerOptions options)
    : cluster_(std::move(cluster)),
      policy_(std::move(policy)),
      options_(std::move(options)),
      rng_(options_.seed) {
  const auto nodes = static_cast<size_t>(cluster_.node_count());
  node_at_rank_ = options_.node_order;
  std::vector<bool> seen(nodes, false);
  bool permutation = node_at_rank_.size() == nodes;
  for (size_t rank = 0; permutation && rank < nodes; ++rank) {
    const NodeId node = node_at_rank_[rank];
    permutation = node < nodes && !seen[node];
    if (permutation) seen[node] = true;
  }
  if (!permutation) {  // absent or not a permutation of the nodes: by node id
    node_at_rank_.resize(nodes);
    for (size_t rank = 0; rank < nodes; ++rank) node_at_rank_[rank] = static_cast<NodeId>(rank);
  }
  rank_of_node_.resize(nodes);
  for (size_t rank = 0; rank < nodes; ++rank) rank_of_node_[node_at_rank_[rank]] = static_cast<int>(rank);
  BuildGroups();
  filters_.push_back(std::make_unique<NodeResourcesFit>(&cluster_));
  filters_.push_back(std::make_unique<NodeName>());
  filters_.push_back(std::make_unique<NodeUnschedulable>());
  policy_->OnAttach(cluster_);
}

void Scheduler::BuildGroups() {
  group_of_node_.assign(node_at_rank_.size(), 0);
  leaf_of_node_.assign(node_at_rank_.size(), 0);
  for (NodeId node : node_at_rank_) {  // in tie order, so leaves follow it
    const int model = cluster_.spec(node).model;
    auto group =
        std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.model == model; });
    if (group == groups_.end()) group = groups_.insert(groups_.end(), Group{model, {}});
    group_of_node_[node] = static_cast<uint32_t>(group - groups_.begin());
    leaf_of_node_[node] = static_cast<int>(group->node_at_leaf.size());
    group->node_at_leaf.push_back(node);
  }
}

Result<Decision> Scheduler::Decide(const Request& request, bool observe) {
  Status valid = Validate(request);
  if (!valid.ok()) return valid;
  Decision decision;
  if (Status admitted = PreFilter(request); !admitted.ok()) {
    decision.reason = admitted.message();
    return decision;
  }
  if (observe && policy_->Observe(request)) ++epoch_;
  ShapeScores& scores = ScoresFor(request);
  Refresh(scores);
  const std::optional<Best> best = PickBest(scores, request);
  if (!best) {
    decision.reason = "no node fits";
    return decision;
  }
  const NodeScore scored{.score = best->score, .gpus = scores.gpus[best->node]};
  decision.placed = true;
  decision.node = best->node;
  decision.score = scored.score;
  decision.gpus = policy_->ChooseGpus(cluster_.view(best->node), request, scored, rng_);
  return decision;
}

Scheduler::ShapeScores& Scheduler::ScoresFor(const Request& request) {
  const Shape shape = ShapeOf(request);
  if (shapes_.size() >= kMaxCachedShapes && shape_index_.find(shape) == shape_index_.end()) {
    // A long-lived scheduler can meet unboundedly many shapes: start the caches over rather
    // than grow without limit (each shape holds a few words per node).
    shape_index_.clear();
    shapes_.clear();
  }
  const auto [found, inserted] = shape_index_.try_emplace(shape, shapes_.size());
  if (inserted) {
    auto scores = std::make_unique<ShapeScores>();
    scores->request = request;
    for (const Group& group : groups_)
      scores->trees.emplace_back(static_cast<int>(group.node_at_leaf.size()));
    scores->versions.assign(static_cast<size_t>(cluster_.node_count()), 0);
    scores->gpus.assign(static_cast<size_t>(cluster_.node_count()), 0);
    shapes_.push_back(std::move(scores));
  }
  return *shapes_[found->second];
}

void Scheduler::Refresh(ShapeScores& scores) {
  const ChangeLog& log = cluster_.changes();
  const bool stale =
      !scores.built || scores.epoch != epoch_ || scores.seen < log.base || !policy_->cacheable();
  if (stale) {
    for (NodeId node = 0; node < static_cast<NodeId>(cluster_.node_count()); ++node) Rescore(scores, node);
    scores.built = true;
    scores.epoch = epoch_;
  } else {
    for (uint64_t position = scores.seen; position < log.end(); ++position) {
      const NodeId node = log.nodes[position - log.base];
      if (scores.versions[node] != cluster_.state(node).version) Rescore(scores, node);
    }
  }
  scores.seen = log.end();
}

void Scheduler::Rescore(ShapeScores& scores, NodeId node) {
  scores.versions[node] = cluster_.state(node).version;
  MaxTree& tree = scores.trees[group_of_node_[node]];
  if (Refusing(node, scores.request) != nullptr) {
    tree.Set(leaf_of_node_[node], MaxTree::kNone);
    return;
  }
  const NodeView view = cluster_.view(node);
  const NodeScore scored = policy_->Score(view, scores.request);
  double score = scored.score;
  for (const auto& plugin : score_plugins_) score += plugin->Score(view, scores.request);
  tree.Set(leaf_of_node_[node], score);
  scores.gpus[node] = scored.gpus;
}

std::optional<Scheduler::Best> Scheduler::PickBest(const ShapeScores& scores, const Request& request) {
  // The best total over groups, and how many nodes tie at it.
  const bool biased = policy_->has_model_bias();
  double best_total = MaxTree::kNone;
  uint32_t tied = 0;
  std::vector<double>& totals = group_totals_;
  totals.assign(groups_.size(), MaxTree::kNone);
  for (size_t group = 0; group < groups_.size(); ++group) {
    const MaxTree& tree = scores.trees[group];
    if (tree.best_count() == 0) continue;
    totals[group] = tree.best() + (biased ? policy_->ModelBias(groups_[group].model, request) : 0.0);
    if (totals[group] > best_total) {
      best_total = totals[group];
      tied = tree.best_count();
    } else if (totals[group] == best_total) {
      tied += tree.best_count();
    }
  }
  if (tied == 0) return std::nullopt;
  const bool random = options_.ties == TieBreak::kRandom || policy_->random_ties();
  uint32_t nth = random && tied > 1 ? static_cast<uint32_t>(rng_.Uniform(tied)) : 0;
  std::optional<Best> best;
  for (size_t group = 0; group < groups_.size(); ++group) {
    if (totals[group] != best_total) continue;
    const MaxTree& tree = scores.trees[group];
    if (random && nth >= tree.best_count()) {  // the pick is in a later group
      nth -= tree.best_count();
      continue;
    }
    const NodeId node = groups_[group].node_at_leaf[static_cast<size_t>(tree.NthBest(random ? nth : 0))];
    if (random) return Best{node, best_total};
    // First in tie order: the earliest-ranked of each tied group's first node.
    if (!best || rank_of_node_[node] < rank_of_node_[best->node]) best = Best{node, best_total};
  }
  return best;
}

const FilterPlugin* Scheduler::Refusing(NodeId node, const Request& request) const {
  const NodeView view = cluster_.view(node);
  for (const auto& filter : filters_) {
    if (!filter->Filter(view, request)) return filter.get();
  }
  return nullptr;
}

Status Scheduler::PreFilter(const Request& request) const {
  for (const auto& plugin : reserve_plugins_) {
    if (Status admitted = plugin->PreFilter(request); !admitted.ok()) return admitted;
  }
  return Status::Ok();
}

std::vector<Rejection> Scheduler::Explain(const Request& request) const {
  std::vector<Rejection> rejections;
  for (NodeId node = 0; node < static_cast<NodeId>(cluster_.node_count()); ++node) {
    const FilterPlugin* refusing = Refusing(node, request);
    if (refusing == nullptr) return {};
    rejections.push_back({node, refusing->name()});
  }
  return rejections;
}

const Reservation* Scheduler::reservation(ReservationId id) const {
  const auto found = reservations_.find(id);
  return found == reservations_.end() ? nullptr : &found->second;
}

Result<ReservationId> Scheduler::Reserve(const Decision& decision, const Request& request) {
  if (!decision.placed) return Status::InvalidArgument("reserving a decision that placed nothing");
  if (Status admitted = PreFilter(request); !admitted.ok()) return Status::ResourceExhausted(admitted.message());
  if (decision.node >= static_cast<NodeId>(cluster_.node_count())) {
    return Status::InvalidArgument("the decision names node " + std::to_string(decision.node) + " of " +
                                   std::to_string(cluster_.node_count()));
  }
  if (const FilterPlugin* refusing = Refusing(decision.node, request); refusing != nullptr) {
    return Status::ResourceExhausted("node '" + cluster_.spec(decision.node).name + "' no longer passes " +
                                     std::string(refusing->name()));
  }
  if (Count(decision.gpus) != request.gpu_count) {
    return Status::InvalidArgument("the decision names " + std::to_string(Count(decision.gpus)) +
                                   " GPUs for a request of " + std::to_string(request.gpu_count));
  }
  const Placement placement = MakePlacement(decision.node, decision.gpus, request);
  Status applied = cluster_.Apply(placement);
  if (!applied.ok()) return applied;
  policy_->OnPlaced(cluster_.view(decision.node), placement);
  for (const auto& plugin : reserve_plugins_) plugin->Reserve(request, placement);
  const ReservationId id = next_id_++;
  reservations_.emplace(id, Reservation{placement, request});
  return id;
}

Result<ReservationId> Scheduler::Adopt(const Placement& placement, const Request& request) {
  if (Count(placement.gpus) != request.gpu_count) {
    return Status::InvalidArgument("the placement names " + std::to_string(Count(placement.gpus)) + " GPUs for a request of " +
                                   std::to_string(request.gpu_count));
  }
  if (Status applied = cluster_.Apply(placement); !applied.ok()) return applied;
  policy_->OnPlaced(cluster_.view(placement.node), placement);
  for (const auto& plugin : reserve_plugins_) plugin->Reserve(request, placement);
  const ReservationId id = next_id_++;
  reservations_.emplace(id, Reservation{placement, request});
  return id;
}

void Scheduler::Unreserve(ReservationId id) { (void)Free(id); }

Status Scheduler::Release(ReservationId id) { return Free(id); }

Status Scheduler::Free(ReservationId id) {
  const auto found = reservations_.find(id);
  if (found == reservations_.end()) return Status::NotFound("no reservation " + std::to_string(id));
  const Reservation freed = std::move(found->second);
  reservations_.erase(found);
  Status removed = cluster_.Remove(freed.placement);
  if (!removed.ok()) return removed;  // cannot happen: Apply took exactly this
  policy_->OnRemoved(cluster_.view(freed.placement.node), freed.placement);
  for (const auto& plugin : reserve_plugins_) plugin->Unreserve(freed.request, freed.placement);
  return Status::Ok();
}

}  // namespace fgpu::sched
