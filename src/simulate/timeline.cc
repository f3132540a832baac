#include "simulate/timeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "sched/policies/registry.h"

namespace fgpu::simulate {
namespace {

constexpr double kHour = 3600;
constexpr size_t kMostArrivals = 5'000'000;

std::vector<Baseline> MakeBaselines() {
  using sched::Queueing;
  sched::GovernorOptions fifo = sched::PlainPreemption();
  fifo.tiers = false;
  fifo.preemption = false;
  fifo.queueing = Queueing::kGreedy;
  fifo.fair_share = false;
  sched::GovernorOptions priority = fifo;
  priority.tiers = true;
  priority.strict_tiers = true;
  sched::GovernorOptions preemption = priority;
  preemption.strict_tiers = false;
  preemption.preemption = true;
  const sched::GovernorOptions fgpu;  // governor.h's defaults: what the agent runs
  return {
      {"fifo", "arrival order, whatever fits starts (no tiers)", fifo, false},
      {"priority", "strict priority: tiers in order, a lower tier waits while a higher one does, no preemption",
       priority, false},
      {"preemption", "tiers with plain preemption (any lower tier, at once), no quotas", preemption, false},
      {"fgpu", "tiers, preemption with its refinements, EASY backfill, quotas with borrowing, fair share", fgpu, true},
  };
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int64_t GpuMilli(const sched::Request& request) { return request.TotalGpuMilli(); }

double Duration(const Pod& pod) { return std::max<double>(1, static_cast<double>(*pod.deleted - *pod.created)); }

// A pod as the Governor sees it: a multi-GPU pod is a gang of one-GPU workers.
sched::WorkloadSpec SpecOf(const Pod& pod, const std::string& tenant, bool exact_durations) {
  sched::WorkloadSpec spec;
  spec.request = pod.request;
  spec.request.tier = TierOfQos(pod.qos);
  spec.request.tenant = tenant;
  if (pod.request.gpu_count > 1) {
    spec.members = pod.request.gpu_count;
    spec.request.gpu_count = 1;
    spec.request.cpu_milli = (pod.request.cpu_milli + spec.members - 1) / spec.members;
    spec.request.memory_mib = (pod.request.memory_mib + spec.members - 1) / spec.members;
  }
  spec.duration = exact_durations ? Duration(pod) : 0;
  return spec;
}

Status ValidateSpec(const TimedSpec& spec) {
  if (!(spec.load > 0 && spec.load <= 10)) return Status::InvalidArgument("the load must be in (0, 10]");
  if (!(spec.window >= 60 && spec.window <= 365 * 24 * kHour)) {
    return Status::InvalidArgument("the window must be 60 s .. a year");
  }
  if (!(spec.drain >= 0 && spec.drain <= 365 * 24 * kHour)) return Status::InvalidArgument("the drain must be ≥ 0");
  if (!(spec.tick > 0 && spec.tick <= 3600)) return Status::InvalidArgument("the tick must be in (0, 3600] s");
  if (spec.samples < 2 || spec.samples > 100'000) return Status::InvalidArgument("samples must be 2..100000");
  if (!(spec.warmup >= 0 && spec.warmup < spec.window)) return Status::InvalidArgument("the warm-up must be shorter than the window");
  return Validate(spec.tenants);
}

}  // namespace

const std::vector<Baseline>& Baselines() {
  static const std::vector<Baseline>* baselines = new std::vector<Baseline>(MakeBaselines());
  return *baselines;
}

Result<std::vector<Baseline>> ParseBaselines(std::string_view list) {
  if (list == "all") return Baselines();
  std::vector<Baseline> chosen;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view name = list.substr(start, end - start);
    const auto found = std::find_if(Baselines().begin(), Baselines().end(),
                                    [&](const Baseline& baseline) { return baseline.name == name; });
    if (found == Baselines().end()) {
      std::string names;
      for (const Baseline& baseline : Baselines()) names += (names.empty() ? "" : ", ") + baseline.name;
      return Status::NotFound("unknown baseline '" + std::string(name) + "'; the baselines are " + names + " (or all)");
    }
    chosen.push_back(*found);
    start = end + 1;
  }
  return chosen;
}

sched::Tier TierOfQos(std::string_view qos) {
  if (qos == "LS") return sched::Tier::kLatency;
  if (qos == "Guaranteed" || qos == "Burstable") return sched::Tier::kStandard;
  return sched::Tier::kBatch;
}

double JainIndex(const std::vector<double>& values) {
  if (values.empty()) return 1;
  double sum = 0;
  double squares = 0;
  for (double value : values) {
    sum += value;
    squares += value * value;
  }
  return squares == 0 ? 1 : sum * sum / (static_cast<double>(values.size()) * squares);
}

Result<ArrivalPlan> PlanArrivals(const PodList& pods, int64_t capacity_milli, double load, double window) {
  if (!pods.timed) {
    return Status::InvalidArgument(pods.path + " has no creation_time and deletion_time on every pod: the "
                                   "time-driven replay needs them");
  }
  if (!(load > 0) || !(window > 0) || capacity_milli <= 0) {
    return Status::InvalidArgument("the load, the window and the cluster's GPUs must be positive");
  }
  std::vector<size_t> order(pods.pods.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return *pods.pods[a].created < *pods.pods[b].created; });
  // gaps[k]: before the k-th pod of the order; gaps[0] is the wrap from the last to the first.
  std::vector<double> gaps(order.size(), 0);
  for (size_t k = 1; k < order.size(); ++k) {
    gaps[k] = static_cast<double>(*pods.pods[order[k]].created - *pods.pods[order[k - 1]].created);
  }
  std::vector<double> sorted(gaps.begin() + 1, gaps.end());
  std::sort(sorted.begin(), sorted.end());
  const double cap = sorted.empty() ? 1 : sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
  const double median = sorted.empty() ? 1 : sorted[sorted.size() / 2];
  gaps[0] = median;
  double total_gap = 0;
  for (double& gap : gaps) {
    gap = std::min(gap, cap);
    total_gap += gap;
  }
  if (total_gap <= 0) {  // every pod created at once: spread them evenly
    std::fill(gaps.begin(), gaps.end(), 1.0);
    total_gap = static_cast<double>(gaps.size());
  }
  double work = 0;  // GPU milli-seconds within the window, per pod
  for (const Pod& pod : pods.pods) work += static_cast<double>(GpuMilli(pod.request)) * std::min(Duration(pod), window);
  work /= static_cast<double>(pods.pods.size());
  if (work <= 0) return Status::InvalidArgument(pods.path + ": no pod asks for a GPU");
  const double rate = load * static_cast<double>(capacity_milli) / work;  // pods per second
  const double mean_gap = total_gap / static_cast<double>(gaps.size());
  ArrivalPlan plan;
  plan.compression = 1 / (rate * mean_gap);
  double time = 0;
  for (size_t k = 0; time < window; ++k) {
    if (plan.arrivals.size() >= kMostArrivals) {
      return Status::InvalidArgument("more than " + std::to_string(kMostArrivals) +
                                     " arrivals: lower the load or the window");
    }
    plan.arrivals.push_back({order[k % order.size()], time});
    time += gaps[(k + 1) % order.size()] * plan.compression;
  }
  return plan;
}

namespace {

// One run's bookkeeping beside the Governor: what each arrival became, and the sums.
class Replayer {
 public:
  Replayer(const Scenario& scenario, const TimedSpec& spec, ArrivalPlan plan, std::vector<std::string> tenants,
           std::vector<int> tenant_of, const sched::QuotaTree& model, sched::Scheduler* scheduler,
           sched::Governor* governor)
      : scenario_(scenario),
        spec_(spec),
        plan_(std::move(plan)),
        tenants_(std::move(tenants)),
        tenant_of_(std::move(tenant_of)),
        scheduler_(scheduler),
        governor_(governor),
        capacity_(static_cast<double>(scenario.cluster.total_gpu_milli())),
        horizon_(spec.window + spec.drain),
        runs_(plan_.arrivals.size()),
        tenant_state_(tenants_.size()) {
    for (size_t t = 0; t < tenants_.size(); ++t) {
      const int leaf = model.LeafOf(tenants_[t]);
      tenant_state_[t].nominal = static_cast<double>(model.Nominal(leaf).gpu_milli) / capacity_;
      tenant_state_[t].limit =
          static_cast<double>(std::min(sched::kUnlimited, model.Nominal(leaf).gpu_milli + model.BorrowingLimit(leaf).gpu_milli)) /
          capacity_;
    }
  }

  Result<TimedResult> Run(std::atomic<int64_t>* done) {
    size_t next_arrival = 0;
    size_t next_sample = 0;
    double now = 0;
    while (true) {
      double event = horizon_ + spec_.tick;
      if (next_arrival < plan_.arrivals.size()) event = std::min(event, plan_.arrivals[next_arrival].time);
      if (!ends_.empty()) event = std::min(event, ends_.top().first);
      const double tick = std::max(now, std::ceil(event / spec_.tick) * spec_.tick);
      if (tick > horizon_) break;
      Advance(tick, next_sample);
      while (!ends_.empty() && ends_.top().first <= tick) {
        const auto [end, id] = ends_.top();
        ends_.pop();
        End(id, tick);
      }
      while (next_arrival < plan_.arrivals.size() && plan_.arrivals[next_arrival].time <= tick) {
        if (Status submitted = Submit(next_arrival, plan_.arrivals[next_arrival].time); !submitted.ok()) return submitted;
        ++next_arrival;
        if (done != nullptr) done->fetch_add(1, std::memory_order_relaxed);
      }
      if (Status scheduled = Schedule(tick); !scheduled.ok()) return scheduled;
      if (next_arrival == plan_.arrivals.size() && ends_.empty() && governor_->queued() == 0) break;
    }
    Advance(horizon_, next_sample);
    return Finish();
  }

 private:
  struct PodRun {
    double arrival = 0;
    double first_start = -1;
    double started = 0;
    bool finished = false;
  };
  struct TenantState {
    double nominal = 0;
    double limit = 0;
    double allocated = 0;  // milli now
    double integral = 0;   // milli-seconds within the window
    double peak = 0;
    int64_t waiting = 0;
    int64_t saturated_samples = 0;
  };

  const Pod& PodOf(size_t run) const { return scenario_.pods.pods[plan_.arrivals[run].pod]; }
  int TenantOf(size_t run) const { return tenant_of_[run]; }
  sched::Tier TierOf(size_t run) const { return TierOfQos(PodOf(run).qos); }

  // Moves the clock to `to`, integrating allocation and taking the samples due before it.
  void Advance(double to, size_t& next_sample) {
    const double window = spec_.window;
    const double from = spec_.warmup;
    const double within = std::max(0.0, std::clamp(to, from, window) - std::clamp(clock_, from, window));
    const double used = static_cast<double>(scheduler_->cluster().used_gpu_milli());
    allocated_integral_ += used * within;
    delivered_integral_ += used * std::max(0.0, std::min(to, horizon_) - clock_);
    for (TenantState& tenant : tenant_state_) tenant.integral += tenant.allocated * within;
    while (next_sample < static_cast<size_t>(spec_.samples)) {
      const double at = horizon_ * static_cast<double>(next_sample) / static_cast<double>(spec_.samples - 1);
      if (at > to) break;
      samples_.push_back({at, used / capacity_, static_cast<int64_t>(governor_->queued())});
      if (at >= from && at <= window) {
        ++window_samples_;
        for (TenantState& tenant : tenant_state_) tenant.saturated_samples += tenant.waiting > 0 ? 1 : 0;
      }
      ++next_sample;
    }
    clock_ = std::max(clock_, to);
  }

  Status Submit(size_t run, double at) {
    runs_[run].arrival = at;
    const sched::WorkloadSpec spec = SpecOf(PodOf(run), tenants_[static_cast<size_t>(TenantOf(run))], true);
    Result<sched::WorkloadId> id = governor_->Submit(spec, at);
    if (!id.ok()) return Status::InvalidArgument(scenario_.pods.path + ":" + std::to_string(PodOf(run).line) + ": " + id.status().message());
    run_of_[*id] = run;
    ++tenant_state_[static_cast<size_t>(TenantOf(run))].waiting;
    return Status::Ok();
  }

  void Requeue(size_t run, double now) {
    Result<sched::WorkloadId> id =
        governor_->Submit(SpecOf(PodOf(run), tenants_[static_cast<size_t>(TenantOf(run))], true), now);
    if (!id.ok()) return;  // it was valid when it first arrived
    run_of_[*id] = run;
    ++tenant_state_[static_cast<size_t>(TenantOf(run))].waiting;
  }

  void Allocate(size_t run, double sign) {
    TenantState& tenant = tenant_state_[static_cast<size_t>(TenantOf(run))];
    tenant.allocated += sign * static_cast<double>(GpuMilli(PodOf(run).request));
    tenant.peak = std::max(tenant.peak, tenant.allocated / capacity_);
    max_over_limit_ = std::max(max_over_limit_, tenant.allocated / capacity_ - tenant.limit);
  }

  void End(sched::WorkloadId id, double now) {
    const auto found = run_of_.find(id);
    const sched::Workload* workload = governor_->Find(id);
    if (found == run_of_.end() || workload == nullptr || workload->state != sched::WorkloadState::kRunning) return;
    const size_t run = found->second;
    (void)governor_->Finish(id, now);
    run_of_.erase(found);
    runs_[run].finished = true;
    Allocate(run, -1);
    tiers_[static_cast<size_t>(TierOf(run))].completed_gpu_hours +=
        static_cast<double>(GpuMilli(PodOf(run).request)) / 1000 * Duration(PodOf(run)) / kHour;
  }

  Status Schedule(double now) {
    for (int round = 0; round < 4; ++round) {
      const auto start = std::chrono::steady_clock::now();
      const std::vector<sched::Action> actions = governor_->Schedule(now);
      schedule_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      bool preempted = false;
      for (const sched::Action& action : actions) {
        const auto found = run_of_.find(action.workload);
        if (found == run_of_.end()) continue;
        const size_t run = found->second;
        TenantState& tenant = tenant_state_[static_cast<size_t>(TenantOf(run))];
        TierResult& tier = tiers_[static_cast<size_t>(TierOf(run))];
        switch (action.kind) {
          case sched::Action::Kind::kStart:
            if (runs_[run].first_start < 0) runs_[run].first_start = now;
            runs_[run].started = now;
            --tenant.waiting;
            Allocate(run, +1);
            ends_.push({now + Duration(PodOf(run)), action.workload});
            break;
          case sched::Action::Kind::kPreempt: {
            const double lost = static_cast<double>(GpuMilli(PodOf(run).request)) / 1000 * (now - runs_[run].started) / kHour;
            ++tier.preempted;
            tier.lost_gpu_hours += lost;
            lost_gpu_hours_ += lost;
            (void)governor_->Cancel(action.workload, now);
            run_of_.erase(found);
            Allocate(run, -1);
            Requeue(run, now);
            preempted = true;
            break;
          }
          case sched::Action::Kind::kExpire:
            run_of_.erase(found);
            --tenant.waiting;
            break;
        }
      }
      if (!preempted) break;
    }
    return Status::Ok();
  }

  TimedResult Finish() {
    TimedResult result;
    result.baseline = spec_.baseline.name;
    result.seed = spec_.seed;
    result.load = spec_.load;
    result.compression = plan_.compression;
    result.window = spec_.window;
    result.horizon = horizon_;
    result.arrivals = static_cast<int64_t>(plan_.arrivals.size());
    std::array<std::vector<double>, sched::kTierCount> delays;
    for (size_t run = 0; run < runs_.size(); ++run) {
      if (runs_[run].arrival < spec_.warmup) continue;
      const auto tier = static_cast<size_t>(TierOf(run));
      ++tiers_[tier].pods;
      if (runs_[run].first_start >= 0) {
        ++tiers_[tier].started;
        delays[tier].push_back(runs_[run].first_start - runs_[run].arrival);
      } else {
        delays[tier].push_back(horizon_ - runs_[run].arrival);
        ++tiers_[tier].never_started;
      }
    }
    for (size_t tier = 0; tier < tiers_.size(); ++tier) {
      tiers_[tier].delay_p50 = Percentile(delays[tier], 50);
      tiers_[tier].delay_p99 = Percentile(delays[tier], 99);
    }
    result.tiers = tiers_;
    const double measured = spec_.window - spec_.warmup;
    result.allocated_mean = allocated_integral_ / (measured * capacity_);
    result.samples = std::move(samples_);
    std::vector<double> fair;
    for (size_t t = 0; t < tenants_.size(); ++t) {
      const TenantState& state = tenant_state_[t];
      TenantResult tenant{tenants_[t], state.nominal, state.limit, state.integral / (measured * capacity_), state.peak,
                          window_samples_ > 0 ? static_cast<double>(state.saturated_samples) / static_cast<double>(window_samples_) : 0};
      if (tenant.saturated >= 0.5 && tenant.nominal > 0) fair.push_back(tenant.share / tenant.nominal);
      result.tenants.push_back(std::move(tenant));
    }
    result.saturated_tenants = static_cast<int>(fair.size());
    result.jain = JainIndex(fair);
    result.max_over_limit = std::max(0.0, max_over_limit_);
    result.delivered_gpu_hours = delivered_integral_ / 1000 / kHour;
    result.lost_gpu_hours = lost_gpu_hours_;
    result.passes = static_cast<int64_t>(governor_->counters().passes);
    result.decisions = static_cast<int64_t>(governor_->counters().decisions);
    result.schedule_seconds = schedule_seconds_;
    return result;
  }

  const Scenario& scenario_;
  const TimedSpec& spec_;
  ArrivalPlan plan_;
  std::vector<std::string> tenants_;
  std::vector<int> tenant_of_;
  sched::Scheduler* scheduler_;
  sched::Governor* governor_;
  double capacity_;
  double horizon_;
  std::vector<PodRun> runs_;
  std::vector<TenantState> tenant_state_;
  std::unordered_map<sched::WorkloadId, size_t> run_of_;
  using EndEvent = std::pair<double, sched::WorkloadId>;
  std::priority_queue<EndEvent, std::vector<EndEvent>, std::greater<>> ends_;
  std::array<TierResult, sched::kTierCount> tiers_{};
  std::vector<Sample> samples_;
  int64_t window_samples_ = 0;
  double clock_ = 0;
  double allocated_integral_ = 0;
  double delivered_integral_ = 0;
  double lost_gpu_hours_ = 0;
  double max_over_limit_ = 0;
  double schedule_seconds_ = 0;
};

}  // namespace

Result<TimedResult> ReplayInTime(const Scenario& scenario, const TimedSpec& spec, std::atomic<int64_t>* events_done) {
  if (Status valid = ValidateSpec(spec); !valid.ok()) return valid;
  const int64_t capacity = scenario.cluster.total_gpu_milli();
  Result<ArrivalPlan> plan = PlanArrivals(scenario.pods, capacity, spec.load, spec.window);
  if (!plan.ok()) return plan.status();
  Result<sched::QuotaTree> model = ModelQuotas(spec.tenants, capacity);
  if (!model.ok()) return model.status();
  Result<std::unique_ptr<sched::Policy>> policy = sched::MakePolicy(spec.policy, {scenario.workload});
  if (!policy.ok()) return policy.status();
  sched::Scheduler scheduler(scenario.cluster, std::move(*policy),
                             {.seed = spec.seed, .ties = sched::TieBreak::kFirstInOrder,
                              .node_order = TieOrder(scenario.nodes, spec.seed)});
  sched::Governor governor(&scheduler, spec.baseline.quotas ? *model : sched::QuotaTree{}, spec.baseline.options);
  std::vector<int> tenant_of = AssignTenants(plan->arrivals.size(), spec.tenants, spec.seed);
  Replayer replayer(scenario, spec, std::move(*plan), TenantNames(spec.tenants), std::move(tenant_of), *model,
                    &scheduler, &governor);
  return replayer.Run(events_done);
}

}  // namespace fgpu::simulate
