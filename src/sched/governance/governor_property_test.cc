// Properties of the Governor over random clusters, quotas and workloads (tiers, tenants,
// gangs, durations), with random finishes and victims ending at random later times:
//   - capacity is never exceeded, and what is free is capacity minus the live reservations;
//   - no tenant holds more than its nominal plus borrowing limit, and the quotas' members never
//     hold more than their parents reach;
//   - a gang is never partly placed;
//   - a preemption by priority is always of a strictly lower tier; one by reclaim is always of
//     a borrower (a tenant above its nominal) of a tier the options allow, for a tenant asking
//     within its own nominal; victims by priority are of a preemptible tier; preemptors have
//     waited their delay;
//   - the same seed gives the same run.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "sched/governance/governor.h"
#include "sched/policies/registry.h"
#include "sched/testing.h"

namespace fgpu::sched {
namespace {

constexpr const char* kTenants[] = {"a1", "a2", "b1", "c1"};

Cluster RandomGovernedCluster(Rng& rng) {
  ModelTable models;
  (void)models.Intern("G");
  std::vector<NodeSpec> nodes;
  const int count = 2 + static_cast<int>(rng.Uniform(6));
  for (int index = 0; index < count; ++index) {
    NodeSpec node;
    node.name = "n" + std::to_string(index);
    node.cpu_milli = 64'000;
    node.memory_mib = 256'000;
    node.gpu_count = 1 + static_cast<int>(rng.Uniform(4));
    node.model = 0;
    node.gpu_memory_bytes = int64_t{80} << 30;
    nodes.push_back(node);
  }
  return std::move(Cluster::Create(models, nodes).value());
}

QuotaTree RandomQuotas(Rng& rng, int64_t capacity_milli) {
  if (rng.Uniform(4) == 0) return {};  // sometimes none
  const auto milli = [&](int64_t most) { return Amount{0, static_cast<int64_t>(rng.Uniform(static_cast<uint64_t>(most) + 1))}; };
  const int64_t quarter = capacity_milli / 4;
  std::vector<QuotaSpec> specs = {{.name = "org-a"}, {.name = "org-b"}};
  for (const char* leaf : kTenants) {
    QuotaSpec spec{.name = leaf, .parent = leaf[0] == 'a' ? "org-a" : "org-b", .nominal = milli(quarter)};
    if (rng.Uniform(2) == 0) spec.borrowing_limit = milli(quarter);
    if (rng.Uniform(2) == 0) spec.lending_limit = milli(quarter);
    specs.push_back(spec);
  }
  return std::move(QuotaTree::Create(specs).value());
}

WorkloadSpec RandomWorkload(Rng& rng) {
  WorkloadSpec spec;
  spec.request.cpu_milli = 1'000;
  spec.request.memory_mib = 1'024;
  const bool whole = rng.Uniform(3) == 0;
  spec.request.gpu_count = whole ? 1 + static_cast<int>(rng.Uniform(2)) : 1;
  spec.request.gpu_milli = whole ? 1000 : 100 + static_cast<int32_t>(rng.Uniform(9)) * 100;
  spec.request.gpu_memory_bytes = static_cast<int64_t>(rng.Uniform(40)) << 30;
  spec.request.tier = static_cast<Tier>(rng.Uniform(3));
  spec.request.tenant = kTenants[rng.Uniform(4)];
  spec.members = rng.Uniform(6) == 0 ? 2 + static_cast<int>(rng.Uniform(3)) : 1;
  spec.duration = rng.Uniform(2) == 0 ? 0 : 10 + static_cast<double>(rng.Uniform(500));
  return spec;
}

GovernorOptions RandomOptions(Rng& rng) {
  GovernorOptions options;
  options.tiers = rng.Uniform(4) != 0;
  options.preemption = rng.Uniform(4) != 0;
  options.queueing = static_cast<Queueing>(rng.Uniform(3));
  options.fair_share = rng.Uniform(2) == 0;
  options.reclaim = static_cast<ReclaimTiers>(rng.Uniform(3));
  options.preemption_budget = static_cast<int>(rng.Uniform(3));
  options.preemption_window = 200;
  options.gang_timeout = 300;
  options.preemptible = static_cast<uint8_t>(1 + rng.Uniform(7));
  options.preemption_delay = static_cast<double>(rng.Uniform(2) * 10);
  options.wait_for_room = static_cast<double>(rng.Uniform(2) * 60);
  options.preemption_exempt_after = static_cast<double>(rng.Uniform(2) * 100);
  options.preemption_escalation = static_cast<double>(rng.Uniform(2) * 50);
  options.strict_tiers = rng.Uniform(2) == 0;
  options.segregation = rng.Uniform(2) == 0 ? 0.0 : 0.9;
  options.protected_in_quota = rng.Uniform(2) == 0;
  return options;
}

// Checks every property after each pass; `out` gets the run's actions (for determinism).
void RunGovernor(uint64_t seed, std::string* out) {
  Rng rng(seed);
  Scheduler scheduler(RandomGovernedCluster(rng), std::move(MakePolicy("FGD+", {}).value()), {.seed = seed});
  const QuotaTree quotas = RandomQuotas(rng, scheduler.cluster().total_gpu_milli());
  const GovernorOptions options = RandomOptions(rng);
  Governor governor(&scheduler, quotas, options);
  std::ostringstream log;
  std::map<double, std::vector<WorkloadId>> ends;  // when running workloads and victims end
  double now = 0;
  for (int step = 0; step < 300; ++step) {
    now += static_cast<double>(rng.Uniform(20));
    for (int arrivals = static_cast<int>(rng.Uniform(3)); arrivals > 0; --arrivals) {
      EXPECT_TRUE(governor.Submit(RandomWorkload(rng), now).ok());
    }
    while (!ends.empty() && ends.begin()->first <= now) {
      for (WorkloadId id : ends.begin()->second) (void)governor.Finish(id, ends.begin()->first);
      ends.erase(ends.begin());
    }
    // Quota usage before the pass, to judge reclaims by.
    std::map<std::string, bool> borrowing;
    for (const char* tenant : kTenants) borrowing[tenant] = !governor.quotas().Borrowed(tenant).IsZero();
    const QuotaTree before = governor.quotas();
    for (const Action& action : governor.Schedule(now)) {
      log << now << ' ' << static_cast<int>(action.kind) << ' ' << action.workload << ' ' << action.for_workload << '\n';
      if (action.kind == Action::Kind::kStart) {
        const Workload* started = governor.Find(action.workload);
        ends[now + 1 + static_cast<double>(rng.Uniform(600))].push_back(action.workload);
        // A gang is never partly placed.
        EXPECT_EQ(started->reservations.size(), static_cast<size_t>(started->spec.members));
        // A tier that is not preemptible never borrows (its tenant within its nominal, with it).
        const bool protected_tier = (options.preemptible & (1U << static_cast<int>(started->spec.request.tier))) == 0;
        if (options.protected_in_quota && protected_tier && governor.quotas().enabled()) {
          const QuotaTree& tree = governor.quotas();
          const int leaf = tree.LeafOf(started->spec.request.tenant);
          for (int at = leaf; at > 0; at = tree.Parent(at)) {
            EXPECT_TRUE(tree.Usage(at).Within(tree.Nominal(at))) << "seed " << seed << " quota " << tree.Name(at);
          }
        }
      } else if (action.kind == Action::Kind::kPreempt) {
        const Workload* victim = governor.Find(action.workload);
        const Workload* preemptor = governor.Find(action.for_workload);
        ASSERT_NE(victim, nullptr);
        ASSERT_NE(preemptor, nullptr);
        const Tier victim_tier = victim->spec.request.tier;
        const Tier preemptor_tier = preemptor->spec.request.tier;
        EXPECT_GE(now - preemptor->submitted, options.preemption_delay) << "seed " << seed;
        if (action.reason == "priority") {
          EXPECT_TRUE(options.tiers);
          EXPECT_NE(options.preemptible & (1U << static_cast<int>(victim_tier)), 0) << "seed " << seed;
          EXPECT_LT(victim_tier, preemptor_tier) << "seed " << seed;
        } else {
          ASSERT_EQ(action.reason, "reclaim");
          EXPECT_TRUE(borrowing[victim->spec.request.tenant]) << "seed " << seed;
          EXPECT_TRUE(before.WithinNominal(preemptor->spec.request.tenant, preemptor->Demand())) << "seed " << seed;
          EXPECT_NE(options.reclaim, ReclaimTiers::kNone);
          if (options.reclaim == ReclaimTiers::kLower) {
            EXPECT_LT(victim_tier, preemptor_tier);
          } else {
            EXPECT_LE(victim_tier, preemptor_tier);
          }
        }
        ends[now + static_cast<double>(rng.Uniform(30))].push_back(action.workload);
      }
    }
    // Capacity: free = capacity − live reservations, never below zero.
    const Cluster& cluster = scheduler.cluster();
    std::vector<NodeState> expected(static_cast<size_t>(cluster.node_count()));
    for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
      NodeState& state = expected[node];
      state.free_cpu_milli = cluster.spec(node).cpu_milli;
      state.free_memory_mib = cluster.spec(node).memory_mib;
      for (int gpu = 0; gpu < cluster.spec(node).gpu_count; ++gpu) {
        state.free_milli[static_cast<size_t>(gpu)] = kMilliPerGpu;
        state.free_gpu_memory[static_cast<size_t>(gpu)] = cluster.spec(node).gpu_memory_bytes;
      }
    }
    size_t members = 0;
    for (const auto& [id, reservation] : scheduler.reservations()) TakeFrom(expected[reservation.placement.node], reservation.placement);
    for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
      const NodeState& state = cluster.state(node);
      ASSERT_EQ(state.free_cpu_milli, expected[node].free_cpu_milli);
      for (int gpu = 0; gpu < cluster.spec(node).gpu_count; ++gpu) {
        const auto index = static_cast<size_t>(gpu);
        ASSERT_GE(state.free_milli[index], 0);
        ASSERT_GE(state.free_gpu_memory[index], 0);
        ASSERT_EQ(state.free_milli[index], expected[node].free_milli[index]);
        ASSERT_EQ(state.free_gpu_memory[index], expected[node].free_gpu_memory[index]);
      }
    }
    // Quotas: within nominal + borrowing limit at every quota, and within each parent's reach.
    const QuotaTree& tree = governor.quotas();
    for (int node = 1; tree.enabled() && node < tree.size(); ++node) {
      const Amount reach = tree.Nominal(node) + tree.BorrowingLimit(node);
      EXPECT_TRUE(tree.Usage(node).Within(reach)) << "seed " << seed << " quota " << tree.Name(node);
    }
    if (tree.enabled()) {
      EXPECT_TRUE(tree.Usage(QuotaTree::kRoot).Within(tree.Nominal(QuotaTree::kRoot)));
    }
    // Gangs: running workloads hold all their members; the scheduler holds nothing else.
    members = scheduler.reservations().size();
    size_t expected_members = 0;
    for (const auto& [id, workload] : governor.workloads()) {
      if (workload.state == WorkloadState::kQueued) {
        EXPECT_TRUE(workload.reservations.empty());
      } else {
        EXPECT_EQ(workload.reservations.size(), static_cast<size_t>(workload.spec.members));
        expected_members += workload.reservations.size();
      }
    }
    ASSERT_EQ(members, expected_members) << "seed " << seed;
  }
  *out = log.str();
}

TEST(GovernorProperty, CapacityQuotasGangsAndTiersHoldOnRandomRuns) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE(seed);
    std::string log;
    RunGovernor(seed, &log);
    if (HasFatalFailure()) return;
  }
}

TEST(GovernorProperty, TheSameSeedGivesTheSameRun) {
  for (uint64_t seed : {3, 17, 29}) {
    std::string first;
    std::string second;
    RunGovernor(seed, &first);
    RunGovernor(seed, &second);
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(first, second);
  }
}

}  // namespace
}  // namespace fgpu::sched
