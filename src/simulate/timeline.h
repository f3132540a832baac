// Governance in time: the trace's pods arrive in the order and with the spacing of their
// creation times (compressed to a load factor), run for their recorded durations (deletion −
// creation) and are admitted, queued, preempted and placed by sched's Governor under one of four
// baselines — so tiers, backfill, quotas and fair share are measured on the same arrivals
// (docs/governance.md "The simulation").
//
// The arrival model. The Alibaba trace is a snapshot of a full cluster: 99.7 % of its pods were
// created in its last 37 days, a few long-lived services months before, and compressing its
// clock alone never gives more than ~10 % of the cluster's GPUs as demand. So:
//   - the pods arrive in creation-time order, each gap between consecutive creations capped at
//     the 99th percentile of the gaps (the months-long gaps before the old services carry no
//     information about load), the sequence repeated until the arrival window is full, each
//     repetition's pods drawing their own tenants;
//   - every gap is scaled by one factor (the time compression) so that the offered load — the
//     arrival rate times each pod's GPUs × its duration within the window, over the cluster's
//     GPUs — is `load`;
//   - durations are kept as recorded; a run covers the window plus a drain, and what has not
//     started by its end counts as never started, its wait so far as its delay;
//   - the cluster starts empty: the first `warmup` seconds are run but not measured (delays
//     count pods arriving after it; allocation, shares and saturation are averaged after it).
// Tiers from the trace's qos: LS → latency, Guaranteed and Burstable → standard, BE and anything
// else → batch. A multi-GPU pod is a gang of that many one-GPU workers. Tenants and quotas from
// the seeded model (tenants.h). A preempted pod loses its work and queues again in full.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sched/governance/governor.h"
#include "simulate/replay.h"
#include "simulate/tenants.h"

namespace fgpu::simulate {

struct Baseline {
  std::string name;
  std::string description;
  sched::GovernorOptions options;
  bool quotas = false;
};

// fifo, priority, preemption, fgpu — in that order.
const std::vector<Baseline>& Baselines();
// "all" or names separated by commas; NotFound naming the choices.
Result<std::vector<Baseline>> ParseBaselines(std::string_view list);

sched::Tier TierOfQos(std::string_view qos);

struct TimedSpec {
  Baseline baseline;
  uint64_t seed = 42;
  double load = 1.2;
  std::string policy = "FGD+";
  TenantModel tenants{};
  double window = 6 * 3600.0;  // seconds of arrivals
  double warmup = 3600.0;      // seconds the cluster fills from empty; not measured
  double drain = 2 * 3600.0;   // seconds after the window before the run ends
  double tick = 1.0;           // seconds between scheduling passes (events in between are batched)
  int samples = 240;           // points of the allocation and queue curves
};

// Pods are counted, and their delays measured, when they arrived after the warm-up.
struct TierResult {
  int64_t pods = 0;
  int64_t started = 0;
  int64_t never_started = 0;     // still waiting at the horizon (or a gang that expired)
  double delay_p50 = 0;          // seconds from arrival to first start (never started: wait so far)
  double delay_p99 = 0;
  double completed_gpu_hours = 0;  // runs that finished within the horizon
  int64_t preempted = 0;           // times a pod of this tier was a victim
  double lost_gpu_hours = 0;       // the work those victims had done
};

struct TenantResult {
  std::string name;
  double nominal = 0;    // quota as a fraction of the cluster's GPU compute
  double limit = 0;      // nominal plus borrowing limit, as a fraction
  double share = 0;      // mean fraction of the cluster it held over the arrival window
  double peak = 0;       // the most it held at once, as a fraction
  double saturated = 0;  // fraction of the window's samples with work of it waiting
};

struct Sample {
  double time = 0;
  double allocated = 0;  // fraction of the cluster's GPU compute
  int64_t queued = 0;    // workloads waiting
};

struct TimedResult {
  std::string baseline;
  uint64_t seed = 0;
  double load = 0;
  double compression = 0;  // simulated seconds per trace second between arrivals
  double window = 0;
  double horizon = 0;      // window + drain
  int64_t arrivals = 0;    // pods that arrived (the trace's, repeated)
  std::array<TierResult, sched::kTierCount> tiers{};  // by sched::Tier
  double allocated_mean = 0;  // over the arrival window
  std::vector<Sample> samples;
  std::vector<TenantResult> tenants;
  double jain = 1;  // Jain's index of share/nominal over saturated tenants
  int saturated_tenants = 0;
  double max_over_limit = 0;  // the most any tenant held beyond nominal + borrowing, as a fraction (0: never)
  double delivered_gpu_hours = 0;
  double lost_gpu_hours = 0;
  int64_t passes = 0;
  int64_t decisions = 0;
  double schedule_seconds = 0;  // wall time in Governor::Schedule
};

// The arrivals of one run: pod index (into the trace) and time, in order.
struct Arrival {
  size_t pod = 0;
  double time = 0;
};
struct ArrivalPlan {
  double compression = 0;
  std::vector<Arrival> arrivals;
};
// InvalidArgument when the pods have no times or ask no GPU, or load/window are not positive.
Result<ArrivalPlan> PlanArrivals(const PodList& pods, int64_t capacity_milli, double load, double window);

// `events_done` (if given) counts processed pods as the run goes.
Result<TimedResult> ReplayInTime(const Scenario& scenario, const TimedSpec& spec,
                                 std::atomic<int64_t>* events_done = nullptr);

// Jain's fairness index of the values: (Σx)² / (n·Σx²); 1 for none.
double JainIndex(const std::vector<double>& values);

}  // namespace fgpu::simulate
