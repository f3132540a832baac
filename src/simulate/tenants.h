// The tenants of a time-driven replay. The Alibaba trace names no tenant, so fgpu invents them
// with a documented, seeded model (docs/governance.md "The simulation"):
//
//   - `orgs` organisations of `teams_per_org` teams each; the teams are the tenants
//     ("org1/team2"), numbered 1..N in the order orgN/teamM;
//   - each pod belongs to tenant k with probability ∝ 1/k^zipf (drawn with the run's seed), so a
//     few tenants want far more than their share and most want less, as in real fleets;
//   - every team's nominal quota is its expected part of the demand (its Zipf weight) of the
//     cluster's GPU compute — as a platform team sizes quotas from past use — or, with
//     `equal_quotas`, an equal part (a stress case: the big tenants want far more than theirs);
//     its borrowing limit is `borrowing` × its nominal, and it lends everything it does not use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sched/governance/quota.h"

namespace fgpu::simulate {

struct TenantModel {
  int orgs = 2;
  int teams_per_org = 4;
  double zipf = 1.0;
  double borrowing = 1.0;
  bool equal_quotas = false;
};

// InvalidArgument for 1..16 orgs and teams outside, a negative zipf or borrowing.
Status Validate(const TenantModel& model);

std::vector<std::string> TenantNames(const TenantModel& model);

// The tenant (an index into TenantNames) of each of `pods` pods.
std::vector<int> AssignTenants(size_t pods, const TenantModel& model, uint64_t seed);

// Organisations over teams, the teams' nominals summing to capacity_milli.
Result<sched::QuotaTree> ModelQuotas(const TenantModel& model, int64_t capacity_milli);

}  // namespace fgpu::simulate
