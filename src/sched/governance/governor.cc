#include "sched/governance/governor.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace fgpu::sched {

// Quotas as the scheduler's PreFilter, charged on Reserve and credited on Unreserve/Release.
class Governor::QuotaFilter final : public ReservePlugin {
 public:
  explicit QuotaFilter(QuotaTree* quotas) : quotas_(quotas) {}
  std::string_view name() const override { return "Quota"; }
  Status PreFilter(const Request& request) const override { return quotas_->Admit(request.tenant, AmountOf(request)); }
  void Reserve(const Request& request, const Placement& /*placement*/) override {
    quotas_->Charge(request.tenant, AmountOf(request));
  }
  void Unreserve(const Request& request, const Placement& /*placement*/) override {
    quotas_->Credit(request.tenant, AmountOf(request));
  }

 private:
  QuotaTree* quotas_;
};

// Nodes held for someone: a preemptor waiting for its victims to end, or the backfill
// reservation (held only while a request that would outlast it is being placed).
class Governor::HoldFilter final : public FilterPlugin {
 public:
  std::string_view name() const override { return "Held"; }
  bool Filter(const NodeView& node, const Request& /*request*/) const override { return !held(node.id); }
  bool held(NodeId node) const { return node < holds_.size() && holds_[node] > 0; }
  // True when the node's state changed (held from free, or free from held).
  bool Add(NodeId node) {
    if (node >= holds_.size()) holds_.resize(node + 1, 0);
    return ++holds_[node] == 1;
  }
  bool Remove(NodeId node) { return node < holds_.size() && holds_[node] > 0 && --holds_[node] == 0; }

 private:
  std::vector<int> holds_;
};

// GPU milli per node held by preemptible and by protected work.
struct Governor::ClassUsage {
  std::vector<int64_t> preemptible;
  std::vector<int64_t> protected_;
  uint8_t preemptible_tiers = 0;
  bool IsPreemptible(Tier tier) const { return (preemptible_tiers & (1U << static_cast<int>(tier))) != 0; }
};

class Governor::SegregationScore final : public ScorePlugin {
 public:
  SegregationScore(const ClassUsage* usage, double weight) : usage_(usage), weight_(weight) {}
  std::string_view name() const override { return "Segregation"; }
  double Score(const NodeView& node, const Request& request) const override {
    if (node.spec.gpu_count == 0) return 0;
    const bool preemptible = usage_->IsPreemptible(request.tier);
    const int64_t mine = preemptible ? usage_->preemptible[node.id] : usage_->protected_[node.id];
    const int64_t other = preemptible ? usage_->protected_[node.id] : usage_->preemptible[node.id];
    return weight_ * static_cast<double>(mine - other) / static_cast<double>(int64_t{node.spec.gpu_count} * kMilliPerGpu);
  }

 private:
  const ClassUsage* usage_;
  double weight_;
};

class Governor::ClassCounter final : public ReservePlugin {
 public:
  explicit ClassCounter(ClassUsage* usage) : usage_(usage) {}
  std::string_view name() const override { return "ClassCounter"; }
  void Reserve(const Request& request, const Placement& placement) override { Add(request, placement, +1); }
  void Unreserve(const Request& request, const Placement& placement) override { Add(request, placement, -1); }

 private:
  void Add(const Request& request, const Placement& placement, int64_t sign) {
    std::vector<int64_t>& counts = usage_->IsPreemptible(request.tier) ? usage_->preemptible : usage_->protected_;
    counts[placement.node] += sign * int64_t{placement.gpu_milli} * Count(placement.gpus);
  }
  ClassUsage* usage_;
};

struct Governor::Victims {
  NodeId node = 0;
  std::vector<WorkloadId> ids;
  std::vector<bool> reclaim;  // per id: taken back as borrowed quota (else: by priority)
};

namespace {

constexpr int kMaxMembers = 64;

Amount Capacity(const Cluster& cluster) {
  Amount capacity;
  for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
    capacity.gpu_memory_bytes += cluster.spec(node).gpu_memory_bytes * cluster.spec(node).gpu_count;
  }
  capacity.gpu_milli = cluster.total_gpu_milli();
  return capacity;
}

// The first gpu_count GPUs of the node on which one GPU of the request fits.
GpuSet FirstFitting(const NodeSpec& spec, const NodeState& state, const Request& request) {
  GpuSet gpus = 0;
  int taken = 0;
  for (int gpu = 0; gpu < spec.gpu_count && taken < request.gpu_count; ++gpu) {
    const auto index = static_cast<size_t>(gpu);
    if (state.free_milli[index] >= request.gpu_milli && state.free_gpu_memory[index] >= request.gpu_memory_bytes) {
      gpus |= GpuBit(gpu);
      ++taken;
    }
  }
  return gpus;
}

bool NamedElsewhere(const Request& request, NodeId node) {
  return request.node != kAnyNode && static_cast<NodeId>(request.node) != node;
}

}  // namespace

GovernorOptions PlainPreemption() {
  GovernorOptions options;
  options.preemptible = (1U << static_cast<int>(Tier::kBatch)) | (1U << static_cast<int>(Tier::kStandard));
  options.preemption_delay = 0;
  options.preemption_exempt_after = 0;
  options.preemption_escalation = 0;
  options.strict_tiers = false;
  options.segregation = 0;
  options.wait_for_room = 0;
  options.protected_in_quota = false;
  return options;
}

Governor::Governor(Scheduler* scheduler, QuotaTree quotas, GovernorOptions options)
    : scheduler_(scheduler),
      quotas_(std::make_unique<QuotaTree>(std::move(quotas))),
      options_(options),
      fair_share_(Capacity(scheduler->cluster()), options.fair_share_half_life) {
  on_node_.resize(static_cast<size_t>(scheduler_->cluster().node_count()));
  preemptible_milli_.resize(on_node_.size(), 0);
  scheduler_->AddReservePlugin(std::make_unique<QuotaFilter>(quotas_.get()));
  holds_ = scheduler_->AddFilter(std::make_unique<HoldFilter>());
  if (options_.segregation > 0) {
    const auto nodes = static_cast<size_t>(scheduler_->cluster().node_count());
    class_usage_ = std::make_unique<ClassUsage>(
        ClassUsage{std::vector<int64_t>(nodes, 0), std::vector<int64_t>(nodes, 0), options_.preemptible});
    scheduler_->AddScorePlugin(std::make_unique<SegregationScore>(class_usage_.get(), options_.segregation));
    scheduler_->AddReservePlugin(std::make_unique<ClassCounter>(class_usage_.get()));
  }
  if (quotas_->enabled()) {
    const Amount capacity = Capacity(scheduler->cluster());
    for (int node = 1; node < quotas_->size(); ++node) {
      if (!quotas_->IsLeaf(node)) continue;
      const Amount nominal = quotas_->Nominal(node);
      double weight = 0;
      if (capacity.gpu_memory_bytes > 0) {
        weight = std::max(weight, static_cast<double>(nominal.gpu_memory_bytes) / static_cast<double>(capacity.gpu_memory_bytes));
      }
      if (capacity.gpu_milli > 0) {
        weight = std::max(weight, static_cast<double>(nominal.gpu_milli) / static_cast<double>(capacity.gpu_milli));
      }
      fair_share_.SetShare(quotas_->Name(node), std::max(weight, 1e-6));
    }
  }
}

Governor::~Governor() = default;

Result<WorkloadId> Governor::Submit(WorkloadSpec spec, double now) {
  if (Status valid = Validate(spec.request); !valid.ok()) return valid;
  if (spec.members < 1 || spec.members > kMaxMembers) {
    return Status::InvalidArgument("a gang has 1.." + std::to_string(kMaxMembers) + " members, not " +
                                   std::to_string(spec.members));
  }
  if (!(spec.duration >= 0) || !std::isfinite(spec.duration)) return Status::InvalidArgument("duration must be ≥ 0");
  if (!(spec.gang_timeout >= 0) || !std::isfinite(spec.gang_timeout)) {
    return Status::InvalidArgument("gang timeout must be ≥ 0");
  }
  Workload workload;
  workload.id = next_id_++;
  workload.spec = std::move(spec);
  workload.submitted = now;
  workload.share_key = FairShareKey(workload.spec.request.tenant);
  workload.quota_leaf = quotas_->LeafOf(workload.spec.request.tenant);
  const auto [shape, added] = shape_ids_.try_emplace(ShapeOf(workload.spec.request), static_cast<int>(shape_ids_.size()));
  if (added) {
    unfit_open_.push_back(0);
    unfit_held_.push_back(0);
  }
  workload.shape_id = shape->second;
  const WorkloadId id = workload.id;
  Workload& stored = workloads_.emplace(id, std::move(workload)).first->second;
  Enqueue(&stored);
  return id;
}

Result<WorkloadId> Governor::Adopt(WorkloadSpec spec, NodeId node, GpuSet gpus, double started) {
  if (Status valid = Validate(spec.request); !valid.ok()) return valid;
  if (spec.members != 1) return Status::InvalidArgument("only a one-member workload is adopted");
  if (node >= static_cast<NodeId>(scheduler_->cluster().node_count())) {
    return Status::InvalidArgument("no node " + std::to_string(node));
  }
  Result<ReservationId> reserved = scheduler_->Adopt(MakePlacement(node, gpus, spec.request), spec.request);
  if (!reserved.ok()) return reserved.status();
  Workload workload;
  workload.id = next_id_++;
  workload.spec = std::move(spec);
  workload.submitted = started;
  workload.observed = true;
  workload.share_key = FairShareKey(workload.spec.request.tenant);
  workload.reservations = {*reserved};
  const WorkloadId id = workload.id;
  Workload& stored = workloads_.emplace(id, std::move(workload)).first->second;
  fair_share_.Advance(started);
  MarkRunning(stored, started);
  return id;
}

Status Governor::Resize(WorkloadId id, const Request& request, double now) {
  const auto found = workloads_.find(id);
  if (found == workloads_.end()) return Status::NotFound("no workload " + std::to_string(id));
  Workload& workload = found->second;
  if (workload.state != WorkloadState::kRunning || workload.spec.members != 1) {
    return Status::InvalidArgument("only a running one-member workload is resized");
  }
  if (Status valid = Validate(request); !valid.ok()) return valid;
  const Placement old_placement = workload.placements.front();
  const Request old_request = workload.spec.request;
  fair_share_.Advance(now);
  IndexNodes(&workload, /*add=*/false);
  (void)scheduler_->Release(workload.reservations.front());
  Request pinned = request;
  pinned.node = static_cast<int32_t>(old_placement.node);
  Status outcome = Status::Ok();
  Result<ReservationId> reserved = Status::ResourceExhausted("not tried");
  if (request.gpu_count != old_request.gpu_count) {
    outcome = Status::InvalidArgument("a resize keeps the GPU count");
  } else {
    // The same GPUs: a resize never moves a running workload.
    const Decision decision{.placed = true, .node = old_placement.node, .gpus = old_placement.gpus};
    reserved = scheduler_->Reserve(decision, pinned);
    if (!reserved.ok()) outcome = reserved.status();
  }
  if (!outcome.ok()) {
    Result<ReservationId> back = scheduler_->Adopt(old_placement, old_request);  // it held just now
    workload.reservations = {back.ok() ? *back : 0};
    IndexNodes(&workload, /*add=*/true);
    return outcome;
  }
  fair_share_.Allocate(workload.share_key, Amount{} - workload.Demand());
  workload.spec.request = request;
  workload.reservations = {*reserved};
  workload.placements = {scheduler_->reservation(*reserved)->placement};
  fair_share_.Allocate(workload.share_key, workload.Demand());
  IndexNodes(&workload, /*add=*/true);
  return Status::Ok();
}

Status Governor::Finish(WorkloadId id, double now) { return End(id, now, /*learn=*/true); }

Status Governor::Cancel(WorkloadId id, double now) { return End(id, now, /*learn=*/false); }

void Governor::Link(std::vector<Workload*>& list, Workload* workload) {
  workload->slot = list.size();
  list.push_back(workload);
}

void Governor::Unlink(std::vector<Workload*>& list, Workload* workload) {
  Workload* last = list.back();
  list[workload->slot] = last;
  last->slot = workload->slot;
  list.pop_back();
}

void Governor::IndexNodes(Workload* workload, bool add) {
  for (size_t i = 0; i < workload->placements.size(); ++i) {
    const NodeId node = workload->placements[i].node;
    bool seen = false;  // a gang with several members on one node is listed there once
    for (size_t j = 0; j < i; ++j) seen = seen || workload->placements[j].node == node;
    if (seen) continue;
    std::vector<Workload*>& list = on_node_[node];
    if (add) {
      list.push_back(workload);
    } else {
      list.erase(std::find(list.begin(), list.end(), workload));
    }
  }
  if ((options_.preemptible & (1U << static_cast<int>(workload->spec.request.tier))) != 0) {
    for (const Placement& placement : workload->placements) {
      preemptible_milli_[placement.node] += (add ? 1 : -1) * int64_t{placement.gpu_milli} * Count(placement.gpus);
    }
  }
}

Status Governor::End(WorkloadId id, double now, bool learn) {
  const auto found = workloads_.find(id);
  if (found == workloads_.end()) return Status::NotFound("no workload " + std::to_string(id));
  Workload& workload = found->second;
  if (workload.state == WorkloadState::kQueued) {
    if (workload.nominated) Unhold(*workload.nominated);
    Dequeue(&workload);
  } else {
    Unlink(running_, &workload);
    by_end_.erase(workload.end_at);
    IndexNodes(&workload, /*add=*/false);
    fair_share_.Advance(now);
    for (ReservationId reservation : workload.reservations) (void)scheduler_->Release(reservation);
    fair_share_.Allocate(workload.share_key, Amount{} - workload.Demand());
    if (learn && workload.state == WorkloadState::kRunning) Learn(workload, now - workload.started);
  }
  if (head_ && head_->workload == id) head_.reset();
  workloads_.erase(found);
  return Status::Ok();
}

const Workload* Governor::Find(WorkloadId id) const {
  const auto found = workloads_.find(id);
  return found == workloads_.end() ? nullptr : &found->second;
}

std::vector<WorkloadId> Governor::QueueOrder() const {
  std::vector<WorkloadId> order;
  order.reserve(queue_.size());
  for (const Workload* workload : queue_) order.push_back(workload->id);
  return order;
}

std::string Governor::FairShareKey(const std::string& tenant) const {
  if (!quotas_->enabled()) return tenant;
  const int leaf = quotas_->LeafOf(tenant);
  return leaf < 0 ? tenant : quotas_->Name(leaf);
}

double Governor::Estimate(const Workload& workload) const {
  if (workload.spec.duration > 0) return workload.spec.duration;
  const auto learned = learned_.find(LearnKey(workload));
  return learned != learned_.end() ? learned->second : options_.default_duration;
}

std::string Governor::LearnKey(const Workload& workload) {
  return workload.spec.request.tenant + '\n' + std::to_string(static_cast<int>(workload.spec.request.tier));
}

void Governor::Learn(const Workload& workload, double ran) {
  if (!(ran > 0)) return;
  auto [estimate, added] = learned_.try_emplace(LearnKey(workload), ran);
  if (!added) estimate->second += 0.3 * (ran - estimate->second);  // an exponential moving average
}

double Governor::ExpectedEnd(const Workload& workload, double now) const {
  if (workload.state == WorkloadState::kTerminating) return now;
  return std::max(workload.expected_end, now);
}

bool Governor::Before(const Workload* a, const Workload* b) const {
  if (options_.tiers && a->spec.request.tier != b->spec.request.tier) return a->spec.request.tier > b->spec.request.tier;
  if (options_.fair_share && a->order_factor != b->order_factor) return a->order_factor > b->order_factor;
  return std::tie(a->submitted, a->id) < std::tie(b->submitted, b->id);
}

void Governor::Enqueue(Workload* workload) {
  if (options_.fair_share) {
    const auto [factor, added] = factors_.try_emplace(workload->share_key, 0.0);
    if (added) factor->second = fair_share_.Factor(workload->share_key);
    workload->order_factor = factor->second;
  }
  const auto at = std::upper_bound(queue_.begin(), queue_.end(), workload,
                                   [this](const Workload* a, const Workload* b) { return Before(a, b); });
  queue_.insert(at, workload);
  if (workload->spec.members > 1) queued_gangs_.insert(workload);
}

void Governor::Dequeue(Workload* workload) {
  auto [first, last] = std::equal_range(queue_.begin(), queue_.end(), workload,
                                        [this](const Workload* a, const Workload* b) { return Before(a, b); });
  const auto found = std::find(first, last, workload);
  if (found != last) queue_.erase(found);
  queued_gangs_.erase(workload);
}

void Governor::Reorder(double now) {
  if (!options_.fair_share || now < next_reorder_) return;
  next_reorder_ = now + options_.fair_share_refresh;
  factors_.clear();
  for (Workload* workload : queue_) {
    const auto [factor, added] = factors_.try_emplace(workload->share_key, 0.0);
    if (added) factor->second = fair_share_.Factor(workload->share_key);
    workload->order_factor = factor->second;
  }
  std::sort(queue_.begin(), queue_.end(), [this](const Workload* a, const Workload* b) { return Before(a, b); });
}

void Governor::Hold(NodeId node) {
  if (holds_->Add(node)) (void)scheduler_->Touch(node);
}

void Governor::Unhold(NodeId node) {
  if (holds_->Remove(node)) (void)scheduler_->Touch(node);
}

void Governor::SetBackfillHold(bool held) {
  if (!head_) held = false;
  if (held == backfill_held_) return;
  backfill_held_ = held;
  for (NodeId node : head_->nodes) {
    if (held) {
      Hold(node);
    } else {
      Unhold(node);
    }
  }
}

std::vector<Action> Governor::Schedule(double now) {
  std::vector<Action> actions;
  ++counters_.passes;
  fair_share_.Advance(now);
  Expire(now, actions);
  SetBackfillHold(false);
  head_.reset();
  Reorder(now);
  const std::vector<Workload*> order = queue_;  // a pass moves workloads out of the queue

  // Shapes no node fits in this pass: placements only take room, so one that failed stays
  // failed (with the backfill hold on, only for requests that see the hold).
  ++stamp_;
  // Refill the preemption-search bucket for the time since the last pass.
  const double rate = std::max(0.0, options_.preemption_searches_per_second);
  search_tokens_ = tokens_at_ < 0 ? rate : std::min(rate, search_tokens_ + rate * std::max(0.0, now - tokens_at_));
  tokens_at_ = now;
  std::vector<std::tuple<int, Tier, const std::string*>> failed_preemptions;
  bool blocked = false;
  int highest_waiting = -1;  // the highest tier found waiting for room so far in this pass
  for (Workload* workload : order) {
    if (options_.strict_tiers && options_.tiers && highest_waiting > static_cast<int>(workload->spec.request.tier)) {
      workload->wait = Wait::kStrictOrder;
      continue;
    }
    if (blocked) {
      workload->wait = Wait::kStrictOrder;
      continue;
    }
    std::optional<NodeId> was_held;  // room it waits for, given back below if it must wait on
    if (workload->nominated) {
      const bool victims_gone = std::none_of(workload->victims.begin(), workload->victims.end(),
                                             [&](WorkloadId victim) { return Find(victim) != nullptr; });
      if (!victims_gone) {
        workload->wait = Wait::kVictimsEnding;
        continue;
      }
      if (workload->room_at >= 0 && now < workload->room_at + options_.wait_for_room) was_held = workload->nominated;
      Unhold(*workload->nominated);
      workload->nominated.reset();
      workload->victims.clear();
      ++stamp_;  // the room held for it is open again
    }
    SetBackfillHold(head_ && now + Estimate(*workload) > head_->shadow_time);
    const int shape = workload->shape_id;
    const bool single = workload->spec.members == 1;
    const bool known_unfit = unfit_open_[static_cast<size_t>(shape)] == stamp_ ||
                             (backfill_held_ && unfit_held_[static_cast<size_t>(shape)] == stamp_);
    Blocked outcome = Blocked::kNoRoom;
    if (single && known_unfit && quotas_->AdmitsLeaf(workload->quota_leaf, workload->Demand()) &&
        !BorrowsProtected(*workload)) {
      workload->wait = Wait::kNoRoom;
    } else {
      outcome = TryPlace(*workload);
      if (outcome == Blocked::kNone) {
        Started(*workload, now, actions);
        continue;
      }
      if (outcome == Blocked::kNoRoom && single) {
        (backfill_held_ ? unfit_held_ : unfit_open_)[static_cast<size_t>(shape)] = stamp_;
      }
    }
    if (was_held) {  // its room is late: keep holding it a while
      workload->nominated = was_held;
      workload->wait = Wait::kRoomSoon;
      Hold(*was_held);
      continue;
    }
    if (options_.preemption && workload->spec.may_preempt &&
        search_tokens_ >= 1 &&
        now - workload->submitted >= options_.preemption_delay) {
      // Victims only end within a pass: a search that failed fails again for the same ask.
      const auto same = [&](const auto& failed) {
        return std::get<0>(failed) == shape && std::get<1>(failed) == workload->spec.request.tier &&
               *std::get<2>(failed) == workload->share_key;
      };
      if (!single || std::none_of(failed_preemptions.begin(), failed_preemptions.end(), same)) {
        search_tokens_ -= 1;
        if (TryPreempt(*workload, now, actions)) continue;
        if (single) failed_preemptions.emplace_back(shape, workload->spec.request.tier, &workload->share_key);
      }
    }
    if (outcome == Blocked::kNoRoom) highest_waiting = std::max(highest_waiting, static_cast<int>(workload->spec.request.tier));
    if (options_.queueing == Queueing::kStrict) {
      blocked = true;
    } else if (options_.queueing == Queueing::kBackfill && !head_ && outcome == Blocked::kNoRoom) {
      SetBackfillHold(false);
      head_ = ReserveFor(*workload, now);
    }
  }
  SetBackfillHold(false);
  return actions;
}

void Governor::MarkRunning(Workload& workload, double now) {
  workload.state = WorkloadState::kRunning;
  workload.started = now;
  workload.placements.clear();
  for (ReservationId reservation : workload.reservations) {
    workload.placements.push_back(scheduler_->reservation(reservation)->placement);
  }
  Link(running_, &workload);
  workload.expected_end = now + Estimate(workload);
  workload.end_at = by_end_.emplace(workload.expected_end, &workload);
  IndexNodes(&workload, /*add=*/true);
  fair_share_.Allocate(workload.share_key, workload.Demand());
}

void Governor::Started(Workload& workload, double now, std::vector<Action>& actions) {
  Dequeue(&workload);
  MarkRunning(workload, now);
  ++counters_.started;
  if (head_) ++counters_.backfilled;
  actions.push_back({Action::Kind::kStart, workload.id, 0, ""});
}

Governor::Blocked Governor::TryPlace(Workload& workload) {
  const Request& request = workload.spec.request;
  // The quota first, without a message (the scheduler's PreFilter would say it in words).
  if (!quotas_->AdmitsLeaf(workload.quota_leaf, workload.Demand()) || BorrowsProtected(workload)) {
    workload.wait = Wait::kQuota;
    return Blocked::kQuota;
  }
  std::vector<ReservationId> taken;
  const auto give_back = [&] {
    for (ReservationId reservation : taken) scheduler_->Unreserve(reservation);
    workload.wait = Wait::kNoRoom;
    return Blocked::kNoRoom;
  };
  for (int member = 0; member < workload.spec.members; ++member) {
    ++counters_.decisions;
    Result<Decision> decision = scheduler_->Decide(request, /*observe=*/!workload.observed);
    workload.observed = true;
    if (!decision.ok() || !decision->placed) return give_back();
    Result<ReservationId> reserved = scheduler_->Reserve(*decision, request);
    if (!reserved.ok()) return give_back();
    taken.push_back(*reserved);
  }
  workload.reservations = std::move(taken);
  return Blocked::kNone;
}

std::string Governor::WhyWaiting(const Workload& workload) const {
  if (workload.state != WorkloadState::kQueued) return "";
  switch (workload.wait) {
    case Wait::kNotConsidered:
      return "not yet considered";
    case Wait::kNoRoom:
      return workload.spec.members > 1 ? "its " + std::to_string(workload.spec.members) + " members do not all fit"
                                       : "no node fits";
    case Wait::kQuota: {
      Status refused = quotas_->Admit(workload.spec.request.tenant, workload.Demand());
      if (!refused.ok()) return refused.message();
      if (BorrowsProtected(workload)) {
        return "tenant '" + workload.spec.request.tenant +
               "': a tier that is not preemptible uses only its own quota, and this would borrow";
      }
      return "its quota refused it";
    }
    case Wait::kStrictOrder:
      return "behind an earlier request that does not fit (strict order)";
    case Wait::kVictimsEnding:
      return "waiting for the workloads preempted for it to end";
    case Wait::kRoomSoon:
      return "waiting for room that running workloads should free soon, on a node held for it";
  }
  return "";
}

bool Governor::BorrowsProtected(const Workload& workload) const {
  if (!options_.protected_in_quota || !quotas_->enabled()) return false;
  if ((options_.preemptible & (1U << static_cast<int>(workload.spec.request.tier))) != 0) return false;
  return !quotas_->WithinNominal(workload.spec.request.tenant, workload.Demand());
}

bool Governor::BudgetLeft(const std::string& tenant, double now, int already) {
  if (options_.preemption_budget <= 0) return true;
  std::deque<double>& times = preemptions_[tenant];
  while (!times.empty() && times.front() <= now - options_.preemption_window) times.pop_front();
  return static_cast<int>(times.size()) + already < options_.preemption_budget;
}

bool Governor::TryPreempt(Workload& workload, double now, std::vector<Action>& actions) {
  if (workload.spec.members > 1) return false;  // gangs wait for room; they do not preempt
  std::optional<Victims> victims = FindVictims(workload, now);
  if (!victims) return false;
  // Preempting is the last resort: room that running work frees within wait_for_room spares
  // the victims (once; the node is held for it meanwhile).
  if (options_.wait_for_room > 0 && workload.room_at < 0) {
    if (std::optional<std::pair<NodeId, double>> room = RoomSoon(workload, now)) {
      workload.nominated = room->first;
      workload.room_at = room->second;
      workload.wait = Wait::kRoomSoon;
      Hold(room->first);
      return true;
    }
  }
  for (size_t i = 0; i < victims->ids.size(); ++i) {
    Workload& victim = workloads_.at(victims->ids[i]);
    victim.state = WorkloadState::kTerminating;
    ++counters_.preempted;
    if (victims->reclaim[i]) ++counters_.reclaimed;
    if (options_.preemption_budget > 0) preemptions_[victim.spec.request.tenant].push_back(now);
    actions.push_back({Action::Kind::kPreempt, victim.id, workload.id, victims->reclaim[i] ? "reclaim" : "priority"});
  }
  workload.nominated = victims->node;
  workload.victims = std::move(victims->ids);
  workload.wait = Wait::kVictimsEnding;
  Hold(victims->node);
  return true;
}

std::optional<Governor::Victims> Governor::FindVictims(const Workload& workload, double now) {
  const Request& request = workload.spec.request;
  const std::string& tenant = request.tenant;
  const Amount demand = workload.Demand();
  const bool quota_ok = quotas_->Admits(tenant, demand);
  const bool may_reclaim =
      quotas_->enabled() && options_.reclaim != ReclaimTiers::kNone && quotas_->WithinNominal(tenant, demand);
  if (BorrowsProtected(workload)) return std::nullopt;  // no room made would admit it
  const bool may_preempt = options_.tiers && request.tier != Tier::kBatch;
  if (!quota_ok && !may_reclaim && !may_preempt) return std::nullopt;
  if (!may_preempt && !may_reclaim) return std::nullopt;

  struct Candidate {
    Workload* workload;
    double lost;     // GPU milli-seconds it has run: the work a preemption throws away
    bool reclaim;    // preempted as a borrower (else by priority)
    bool borrower;   // may be reclaimed (its tenant borrows; a tier reclaim allows)
  };
  const bool exempt_older =
      options_.preemption_exempt_after > 0 &&
      (options_.preemption_escalation <= 0 || now - workload.submitted < options_.preemption_escalation);
  // Whether `other` may be preempted for this request, and how (nullopt: it may not).
  const auto candidate = [&](Workload* other) -> std::optional<Candidate> {
    if (other->state != WorkloadState::kRunning) return std::nullopt;
    const Tier tier = other->spec.request.tier;
    if (exempt_older && now - other->started > options_.preemption_exempt_after) return std::nullopt;
    // By priority only the preemptible tiers; a borrower of any tier reclaim allows (Kueue's
    // reclaimWithinCohort: what is borrowed goes back, whatever it runs).
    const bool priority = may_preempt && tier < request.tier && (options_.preemptible & (1U << static_cast<int>(tier))) != 0;
    bool borrower = false;
    if (may_reclaim && other->share_key != workload.share_key) {
      const bool tier_allowed = options_.reclaim == ReclaimTiers::kLowerOrEqual ? tier <= request.tier : tier < request.tier;
      borrower = tier_allowed && !quotas_->Borrowed(other->spec.request.tenant).IsZero();
    }
    if (!priority && !borrower) return std::nullopt;
    return Candidate{other, (now - other->started) * static_cast<double>(other->Demand().gpu_milli), !priority, borrower};
  };
  // Least disruptive first: lowest tier, then least work lost, then the newest.
  const auto less_disruptive = [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(a.workload->spec.request.tier, a.lost, ~a.workload->id) <
           std::make_tuple(b.workload->spec.request.tier, b.lost, ~b.workload->id);
  };
  std::unordered_map<std::string, int> taken_from;  // per tenant, for the budget
  const auto budget_allows = [&](const Candidate& c, const std::unordered_map<std::string, int>& taken) {
    const auto found = taken.find(c.workload->spec.request.tenant);
    return BudgetLeft(c.workload->spec.request.tenant, now, found == taken.end() ? 0 : found->second);
  };

  // 1. Quota: borrowers, and the tenant's own work of a lower preemptible tier (Kueue's
  // withinClusterQueue), least disruptive first, until the tenant's request is admitted.
  std::vector<Candidate> chosen;
  if (!quota_ok) {
    std::vector<Candidate> borrowers;
    for (Workload* other : running_) {
      std::optional<Candidate> c = candidate(other);
      if (!c) continue;
      if (c->borrower) {
        c->reclaim = true;  // taken for the quota: a reclaim, whatever its tier
        borrowers.push_back(*c);
      } else if (!c->reclaim && other->share_key == workload.share_key) {
        borrowers.push_back(*c);  // its own lower-tier work, by priority
      }
    }
    std::sort(borrowers.begin(), borrowers.end(), less_disruptive);
    // Tried on the tree itself (no copy), every credit charged back before returning.
    QuotaTree& trial = *quotas_;
    struct Restore {
      QuotaTree& tree;
      std::vector<Candidate>& credited;
      ~Restore() {
        for (const Candidate& c : credited) tree.Charge(c.workload->spec.request.tenant, c.workload->Demand());
      }
    } restore{trial, chosen};
    bool admitted = false;
    for (const Candidate& c : borrowers) {
      if (!budget_allows(c, taken_from)) continue;
      trial.Credit(c.workload->spec.request.tenant, c.workload->Demand());
      chosen.push_back(c);
      ++taken_from[c.workload->spec.request.tenant];
      if ((admitted = trial.Admits(tenant, demand))) break;
    }
    if (!admitted) return std::nullopt;
    for (size_t i = chosen.size(); i-- > 0;) {  // drop the ones not needed after all
      const std::string& owner = chosen[i].workload->spec.request.tenant;
      trial.Charge(owner, chosen[i].workload->Demand());
      if (trial.Admits(tenant, demand)) {
        --taken_from[owner];
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        trial.Credit(owner, chosen[i].workload->Demand());
      }
    }
  }

  // 2. Room: on one node, the fewest least-disruptive candidates that make the request fit.
  const Cluster& cluster = scheduler_->cluster();
  const auto give_back_on = [](NodeState& state, const Workload& gone, NodeId node) {
    for (const Placement& placement : gone.placements) {
      if (placement.node == node) GiveBack(state, placement);
    }
  };
  struct Option {
    NodeId node = 0;
    std::vector<Candidate> extra;
    std::tuple<int, size_t, double> cost;  // highest victim tier, count, work lost
  };
  std::optional<Option> best;
  std::vector<Candidate> here;
  for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
    if (cluster.state(node).cordoned || holds_->held(node) || NamedElsewhere(request, node)) continue;
    const std::vector<Workload*>& running_here = on_node_[node];
    if (chosen.empty() && running_here.empty()) continue;
    if (chosen.empty()) {  // even with every preemptible workload gone, is there compute enough?
      int64_t free = 0;
      for (int32_t milli : cluster.view(node).free_milli()) free += milli;
      if (free + preemptible_milli_[node] < request.TotalGpuMilli()) continue;
    }
    NodeState base = cluster.state(node);
    for (const Candidate& c : chosen) give_back_on(base, *c.workload, node);
    Option option{node, {}, {-1, 0, 0.0}};
    if (!FitsOn(cluster.spec(node), base, request)) {
      here.clear();
      for (Workload* other : running_here) {
        const bool taken = std::any_of(chosen.begin(), chosen.end(), [&](const Candidate& c) { return c.workload == other; });
        if (taken) continue;
        if (std::optional<Candidate> c = candidate(other)) here.push_back(*c);
      }
      if (here.empty()) continue;
      NodeState all = base;  // with every candidate gone: can it fit at all?
      for (const Candidate& c : here) give_back_on(all, *c.workload, node);
      if (!FitsOn(cluster.spec(node), all, request)) continue;
      std::sort(here.begin(), here.end(), less_disruptive);
      NodeState state = base;
      std::unordered_map<std::string, int> taken = taken_from;
      for (const Candidate& c : here) {
        if (!budget_allows(c, taken)) continue;
        give_back_on(state, *c.workload, node);
        option.extra.push_back(c);
        ++taken[c.workload->spec.request.tenant];
        if (FitsOn(cluster.spec(node), state, request)) break;
      }
      if (!FitsOn(cluster.spec(node), state, request)) continue;
      for (size_t i = option.extra.size(); i-- > 0;) {  // the most disruptive first: spare it if we can
        NodeState without = base;
        for (size_t j = 0; j < option.extra.size(); ++j) {
          if (j != i) give_back_on(without, *option.extra[j].workload, node);
        }
        if (FitsOn(cluster.spec(node), without, request)) option.extra.erase(option.extra.begin() + static_cast<std::ptrdiff_t>(i));
      }
      int tier = -1;
      double lost = 0;
      for (const Candidate& c : option.extra) {
        tier = std::max(tier, static_cast<int>(c.workload->spec.request.tier));
        lost += c.lost;
      }
      option.cost = {tier, option.extra.size(), lost};
    } else if (chosen.empty()) {
      continue;  // it fits here without anyone leaving: not a preemption (the scheduler will see)
    }
    if (!best || option.cost < best->cost) best = std::move(option);
  }
  if (!best) return std::nullopt;
  Victims victims;
  victims.node = best->node;
  for (const auto* list : {&chosen, &best->extra}) {
    for (const Candidate& c : *list) {
      victims.ids.push_back(c.workload->id);
      victims.reclaim.push_back(c.reclaim);
    }
  }
  return victims;
}

std::optional<Governor::BackfillReservation> Governor::ReserveFor(const Workload& workload, double now) {
  const Cluster& cluster = scheduler_->cluster();
  const Request& request = workload.spec.request;
  int remaining = workload.spec.members;
  std::unordered_map<NodeId, NodeState> overlay;
  BackfillReservation reservation{workload.id, now, {}};
  const auto take_on = [&](NodeId node) {
    if (cluster.state(node).cordoned || holds_->held(node) || NamedElsewhere(request, node)) return;
    auto [state, added] = overlay.try_emplace(node, cluster.state(node));
    while (remaining > 0 && FitsOn(cluster.spec(node), state->second, request)) {
      TakeFrom(state->second, MakePlacement(node, FirstFitting(cluster.spec(node), state->second, request), request));
      --remaining;
      if (std::find(reservation.nodes.begin(), reservation.nodes.end(), node) == reservation.nodes.end()) {
        reservation.nodes.push_back(node);
      }
    }
  };
  if (workload.spec.members > 1) {  // the members that fit now
    for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()) && remaining > 0; ++node) take_on(node);
  }
  ByExpectedEnd(now, [&](double end, const Workload& other) {
    for (const Placement& placement : other.placements) {
      auto [state, added] = overlay.try_emplace(placement.node, cluster.state(placement.node));
      GiveBack(state->second, placement);
      take_on(placement.node);
    }
    if (remaining > 0) return true;
    reservation.shadow_time = end;
    return false;
  });
  if (remaining == 0) return reservation;
  return std::nullopt;  // it does not fit even when everything running has ended
}

template <typename Visit>
void Governor::ByExpectedEnd(double now, Visit visit) const {
  for (const Workload* other : running_) {  // few: the victims still ending
    if (other->state == WorkloadState::kTerminating && !visit(now, *other)) return;
  }
  for (const auto& [end, other] : by_end_) {
    if (other->state != WorkloadState::kTerminating && !visit(std::max(end, now), *other)) return;
  }
}

std::optional<std::pair<NodeId, double>> Governor::RoomSoon(const Workload& workload, double now) {
  const Cluster& cluster = scheduler_->cluster();
  const Request& request = workload.spec.request;
  std::unordered_map<NodeId, NodeState> overlay;
  std::optional<std::pair<NodeId, double>> room;
  ByExpectedEnd(now, [&](double end, const Workload& other) {
    if (end > now + options_.wait_for_room) return false;
    if (other.state == WorkloadState::kTerminating) return true;  // its room is someone else's
    for (const Placement& placement : other.placements) {
      const NodeId node = placement.node;
      if (cluster.state(node).cordoned || holds_->held(node) || NamedElsewhere(request, node)) continue;
      auto [state, added] = overlay.try_emplace(node, cluster.state(node));
      GiveBack(state->second, placement);
      if (FitsOn(cluster.spec(node), state->second, request)) {
        room = std::make_pair(node, end);
        return false;
      }
    }
    return true;
  });
  return room;
}

void Governor::Expire(double now, std::vector<Action>& actions) {
  std::vector<WorkloadId> expired;
  for (const Workload* workload : queued_gangs_) {
    const double timeout = workload->spec.gang_timeout > 0 ? workload->spec.gang_timeout : options_.gang_timeout;
    if (now - workload->submitted > timeout) expired.push_back(workload->id);
  }
  std::sort(expired.begin(), expired.end());  // deterministic order of the actions
  for (WorkloadId id : expired) {
    const Workload& workload = workloads_.at(id);
    std::string why = "its " + std::to_string(workload.spec.members) + " members did not all fit within " +
                      std::to_string(static_cast<int64_t>(now - workload.submitted)) + " s (" + WhyWaiting(workload) + ")";
    (void)End(id, now, /*learn=*/false);
    ++counters_.expired;
    actions.push_back({Action::Kind::kExpire, id, 0, std::move(why)});
  }
}

}  // namespace fgpu::sched
