// The Governor: who runs, who waits and who makes room, over a Scheduler (placement) — tiers
// with preemption, a queue with EASY backfill, hierarchical quotas with borrowing and
// reclaim, fair share with usage decay, and gangs. One engine for the agent (one machine), the
// trace simulator (a cluster) and a Kubernetes controller. docs/governance.md has the
// semantics with examples; this header is the contract.
//
// Contract
// - Submit queues a workload (one request, or a gang of `members` copies placed all at once or
//   none). Nothing is placed until Schedule.
// - Schedule(now) makes one pass over the queue in order — tier (highest first), then fair
//   share (the tenant with the most unused share first), then submission — and returns what
//   to do: kStart (the workload's placements are reserved: Scheduler::reservation), kPreempt
//   (end this running workload to make room; its placements stay reserved until Finish),
//   kExpire (a gang waited past its timeout and left the queue).
// - A request that does not fit (or whose quota refuses it) may preempt: victims of a strictly
//   lower, preemptible tier (priority), or — when its tenant asks within its own nominal quota —
//   workloads of tenants above their nominal (reclaim), of the tiers options.reclaim allows.
//   Never a workload of an equal or higher tier by priority. Victims are chosen on one node to disrupt least:
//   lowest tier first, then fewest, then least work lost (GPU-seconds run). A victim tenant's
//   preemptions are limited per window (options.preemption_budget), and a request preempts only
//   after waiting options.preemption_delay for room to free by itself. The preemptor is nominated
//   to that node, which is held for it until its victims have ended (Finish) and it is placed.
// - Backfill (EASY): the first request in order that does not fit (and that its quota admits)
//   gets a reservation: the time its members would fit if the running workloads ended at their
//   expected ends, and the nodes they would take. Later requests may start now only if they
//   do not delay it: ending before that time, or staying off those nodes. Expected ends come
//   from the request's duration, else the tenant's learned average for its tier, else
//   options.default_duration.
// - Quotas (quota.h) are a PreFilter of the scheduler: a request its tenant's quota refuses
//   waits (or reclaims) and is never placed above its nominal plus borrowing limit.
// - Deterministic: the same submissions, finishes and clocks give the same actions.
// - Not thread-safe: one thread drives a Governor (and its Scheduler).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "sched/governance/fair_share.h"
#include "sched/governance/quota.h"
#include "sched/scheduler.h"

namespace fgpu::sched {

enum class Queueing : uint8_t {
  kGreedy,    // in order, whatever fits starts; nothing is held for a blocked request
  kBackfill,  // EASY: the first blocked request holds a reservation that others must not delay
  kStrict,    // in order, and nothing overtakes a blocked request
};

// Which borrowers a tenant reclaiming its nominal quota may preempt.
enum class ReclaimTiers : uint8_t { kNone, kLower, kLowerOrEqual };

struct GovernorOptions {
  bool tiers = true;  // false: every tier in one order (the FIFO baseline)
  bool preemption = true;
  Queueing queueing = Queueing::kBackfill;
  bool fair_share = true;
  double fair_share_half_life = 7 * 24 * 3600.0;  // seconds
  // Seconds between recomputations of the fair-share order (Slurm's PriorityCalcPeriod): in
  // between, the queue's order holds and a new request is inserted at its place.
  double fair_share_refresh = 60;
  ReclaimTiers reclaim = ReclaimTiers::kLowerOrEqual;
  // At most this many of a tenant's workloads preempted per window (0: no limit).
  int preemption_budget = 0;
  double preemption_window = 3600;  // seconds
  double default_duration = 3600;   // seconds, when neither the request nor history says
  double gang_timeout = 600;        // seconds a gang may wait, unless it says
  // Preemption searches per second of the Governor's clock (each looks at every node once; a
  // token bucket holding one second's worth): what a pass may spend on them is bounded however
  // often passes run. More finds victims sooner (the latency tier's tail) and preempts more.
  double preemption_searches_per_second = 16;
  // The tiers whose workloads may be preempted by priority (bit 1 << tier). Reclaim takes back
  // borrowed quota from any tier `reclaim` allows.
  uint8_t preemptible = 1U << static_cast<int>(Tier::kBatch);
  // A request of a tier that is not preemptible is admitted only within its tenant's own
  // nominal quota, never by borrowing (KAI's rule). Off by default: borrowers of any tier are
  // reclaimable anyway, and on the Alibaba trace it doubled the latency tier's p99.
  bool protected_in_quota = false;
  // Seconds a request waits for room to free by itself before it preempts (0: at once). On a
  // busy cluster something ends every few seconds: waiting a little spares most victims.
  double preemption_delay = 30;
  // A workload that has run longer than this many seconds is not preempted (the work a
  // preemption throws away is bounded; 0: any may be) — unless the request has waited
  // preemption_escalation seconds (0: never), when it may take any preemptible victim.
  double preemption_exempt_after = 600;
  double preemption_escalation = 120;
  // Nothing of a lower tier starts while a request of a higher tier waits for room (it would
  // only be preempted by it).
  bool strict_tiers = true;
  // Weight of the score term that keeps preemptible work with preemptible work, node by node
  // (0: off). Below 1 it only orders nodes the policy scores alike (FGD+'s scores are whole
  // numbers), so packing is unchanged; a tier that must preempt then finds nodes held by
  // preemptible work alone and clears a GPU with fewer, younger victims.
  double segregation = 0.9;
  // Before preempting, a request that would preempt and whose room the running workloads'
  // expected ends free within this many seconds holds that node and waits for it instead
  // (once; 0: never waits).
  double wait_for_room = 90;
};

// Every refinement off: preemption at once of any lower tier, no exemption, no waiting for
// room, no strict tiers, no segregation — plain priority preemption as Kubernetes does it.
// Baselines and tests start from it.
GovernorOptions PlainPreemption();

using WorkloadId = uint64_t;

struct WorkloadSpec {
  Request request{};      // one member's; tier and tenant ride in it
  int members = 1;        // > 1: a gang, all members placed at once or none
  double duration = 0;    // expected run time in seconds; 0: estimated
  double gang_timeout = 0;  // seconds; 0: GovernorOptions::gang_timeout
  // false: it never preempts nor holds room (a request that will not wait for it).
  bool may_preempt = true;
};

enum class WorkloadState : uint8_t { kQueued, kRunning, kTerminating };

// Why a queued workload waits, as of the last pass (Governor::WhyWaiting says it in words).
enum class Wait : uint8_t {
  kNotConsidered,  // submitted after the last pass
  kNoRoom,         // no node fits it now
  kQuota,          // its tenant's quota refuses it
  kStrictOrder,    // strict queueing: behind an earlier request that does not fit
  kVictimsEnding,  // it preempted; the node is held for it until its victims end
  kRoomSoon,       // room frees by itself soon on a node held for it (wait_for_room)
};

struct Workload {
  WorkloadId id = 0;
  WorkloadSpec spec;
  WorkloadState state = WorkloadState::kQueued;
  double submitted = 0;
  double started = 0;
  std::vector<ReservationId> reservations;  // one per member while running or terminating
  Wait wait = Wait::kNotConsidered;          // queued: why, as of the last pass
  std::optional<NodeId> nominated;           // queued: the node held for it while victims end
  std::vector<WorkloadId> victims;           // queued and nominated: the workloads ending for it
  double room_at = -1;                       // queued, kRoomSoon: when its room should be free
  std::vector<Placement> placements;         // what its reservations hold (the same order)
  bool observed = false;                     // the policy has seen it arrive (Policy::Observe)
  std::string share_key;                     // its quota leaf (or tenant): fair share and reclaim
  size_t slot = 0;                           // its index in the Governor's running list
  int shape_id = 0;                          // its request's shape, interned by the Governor
  int quota_leaf = -1;                       // its tenant's quota leaf (QuotaTree::LeafOf)
  double order_factor = 0;                   // queued: its tenant's fair-share factor as ordered
  double expected_end = 0;                   // running: started + the estimate it started with
  std::multimap<double, Workload*>::iterator end_at{};  // running: its entry in the Governor's ends

  Amount Demand() const { return AmountOf(spec.request) * spec.members; }
};

struct Action {
  enum class Kind : uint8_t { kStart, kPreempt, kExpire };
  Kind kind = Kind::kStart;
  WorkloadId workload = 0;
  WorkloadId for_workload = 0;  // kPreempt: the preemptor
  std::string reason{};         // kPreempt: "priority" or "reclaim"; kExpire: why
};

struct GovernorCounters {
  uint64_t passes = 0;
  uint64_t decisions = 0;  // placement attempts (a gang's members count one each)
  uint64_t started = 0;
  uint64_t preempted = 0;
  uint64_t reclaimed = 0;  // of preempted: by reclaim
  uint64_t backfilled = 0;  // started while an earlier request held a reservation
  uint64_t expired = 0;
};

class Governor {
 public:
  // Adds the quota PreFilter to `scheduler`, which must outlive the Governor and be driven
  // only through it from now on.
  Governor(Scheduler* scheduler, QuotaTree quotas, GovernorOptions options = {});
  ~Governor();
  Governor(const Governor&) = delete;
  Governor& operator=(const Governor&) = delete;

  // InvalidArgument for an invalid request, members outside 1..64, a negative duration.
  Result<WorkloadId> Submit(WorkloadSpec spec, double now);
  // A workload already running on `node` (found after a restart): adopted as started at
  // `started`, whatever the quotas and filters say now (they held when it was placed).
  // ResourceExhausted when the node's capacity cannot hold it.
  Result<WorkloadId> Adopt(WorkloadSpec spec, NodeId node, GpuSet gpus, double started);
  // Changes a running one-member workload's request in place (same node and GPUs): Ok when the
  // node, its filters and the quotas take the new size; else nothing changes.
  Status Resize(WorkloadId id, const Request& request, double now);
  // The workload ended — finished, failed, or a victim that is gone — or left the queue: its
  // placements are given back. A run that ended normally teaches its tenant's estimate.
  Status Finish(WorkloadId id, double now);
  // As Finish, learning nothing (a cancellation, a failure to start).
  Status Cancel(WorkloadId id, double now);
  std::vector<Action> Schedule(double now);

  const Workload* Find(WorkloadId id) const;
  // Every workload queued, running or terminating, by id (= by submission).
  const std::map<WorkloadId, Workload>& workloads() const { return workloads_; }
  // The queued workloads in the order they will be considered.
  std::vector<WorkloadId> QueueOrder() const;
  size_t queued() const { return queue_.size(); }
  size_t running() const { return running_.size(); }
  // Why a queued workload waits, in words ("" for one that does not wait).
  std::string WhyWaiting(const Workload& workload) const;
  // The expected run time the Governor assumes for the workload.
  double Estimate(const Workload& workload) const;
  // The backfill reservation of the last pass: who, from when, and on which nodes.
  struct BackfillReservation {
    WorkloadId workload = 0;
    double shadow_time = 0;
    std::vector<NodeId> nodes{};
  };
  const std::optional<BackfillReservation>& backfill_reservation() const { return head_; }

  const QuotaTree& quotas() const { return *quotas_; }
  const FairShare& fair_share() const { return fair_share_; }
  const GovernorOptions& options() const { return options_; }
  const GovernorCounters& counters() const { return counters_; }
  const Scheduler& scheduler() const { return *scheduler_; }

 private:
  class QuotaFilter;
  class HoldFilter;
  struct ClassUsage;
  class SegregationScore;
  class ClassCounter;
  struct Victims;

  enum class Blocked : uint8_t { kNone, kQuota, kNoRoom };

  // Whether `a` goes before `b` in the queue.
  bool Before(const Workload* a, const Workload* b) const;
  void Enqueue(Workload* workload);
  void Dequeue(Workload* workload);
  // Recomputes the fair-share factors and re-sorts the queue (every fair_share_refresh seconds).
  void Reorder(double now);
  Blocked TryPlace(Workload& workload);
  void Started(Workload& workload, double now, std::vector<Action>& actions);
  // Running from `now` on its reservations: the running list, the node index, fair share.
  void MarkRunning(Workload& workload, double now);
  bool TryPreempt(Workload& workload, double now, std::vector<Action>& actions);
  std::optional<Victims> FindVictims(const Workload& workload, double now);
  std::optional<BackfillReservation> ReserveFor(const Workload& workload, double now);
  // Visits the running workloads by expected end (the terminating ones first, as ending now;
  // overdue ones as ending now) until `visit` returns false.
  template <typename Visit>
  void ByExpectedEnd(double now, Visit visit) const;
  // The node and time at which departures alone make room for a one-member request within
  // options.wait_for_room, if any.
  std::optional<std::pair<NodeId, double>> RoomSoon(const Workload& workload, double now);
  void SetBackfillHold(bool held);
  void Hold(NodeId node);
  void Unhold(NodeId node);
  void Expire(double now, std::vector<Action>& actions);
  Status End(WorkloadId id, double now, bool learn);
  double ExpectedEnd(const Workload& workload, double now) const;
  // Whether the request is of a tier that is not preemptible and would borrow (protected_in_quota).
  bool BorrowsProtected(const Workload& workload) const;
  // Whether the tenant may lose one more workload to preemption now, `already` chosen besides.
  bool BudgetLeft(const std::string& tenant, double now, int already);
  void Learn(const Workload& workload, double ran);
  // Fair share and reclaim count per quota leaf (the tenant itself without quotas).
  std::string FairShareKey(const std::string& tenant) const;
  static std::string LearnKey(const Workload& workload);

  Scheduler* scheduler_;
  std::unique_ptr<QuotaTree> quotas_;
  GovernorOptions options_;
  FairShare fair_share_;
  HoldFilter* holds_ = nullptr;  // owned by the scheduler
  std::unique_ptr<ClassUsage> class_usage_;  // per node, read and written by the two plugins above
  // Links `workload` into / out of a list by its slot (a workload is in one at a time).
  static void Link(std::vector<Workload*>& list, Workload* workload);
  static void Unlink(std::vector<Workload*>& list, Workload* workload);
  void IndexNodes(Workload* workload, bool add);

  std::map<WorkloadId, Workload> workloads_;  // ordered by id = by submission; addresses are stable
  std::vector<Workload*> queue_;              // queued, in order (Before)
  std::vector<Workload*> running_;            // running and terminating
  std::multimap<double, Workload*> by_end_;   // running and terminating, by expected end
  std::vector<std::vector<Workload*>> on_node_;  // running and terminating workloads per node
  std::vector<int64_t> preemptible_milli_;    // per node: GPU milli held by preemptible tiers
  std::unordered_map<std::string, double> factors_;  // fair-share factor per share key, as ordered
  double next_reorder_ = 0;
  double search_tokens_ = 0;      // preemption searches the bucket holds
  double tokens_at_ = -1;         // when it was last filled
  std::unordered_map<Shape, int, ShapeHash> shape_ids_;
  // Per shape id: the stamp of the pass part in which no node fitted it (with and without the
  // backfill hold); a stamp moves on at each pass and when held room opens within one.
  std::vector<uint64_t> unfit_open_;
  std::vector<uint64_t> unfit_held_;
  uint64_t stamp_ = 0;
  std::unordered_set<Workload*> queued_gangs_;
  WorkloadId next_id_ = 1;
  std::optional<BackfillReservation> head_;

  bool backfill_held_ = false;
  std::unordered_map<std::string, std::deque<double>> preemptions_;  // tenant -> times
  std::unordered_map<std::string, double> learned_;                  // tenant/tier -> seconds
  GovernorCounters counters_;
};

}  // namespace fgpu::sched
