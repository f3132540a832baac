#include "simulate/tenants.h"

#include <cmath>

#include "sched/rng.h"

namespace fgpu::simulate {

Status Validate(const TenantModel& model) {
  if (model.orgs < 1 || model.orgs > 16) return Status::InvalidArgument("organisations must be 1..16");
  if (model.teams_per_org < 1 || model.teams_per_org > 16) return Status::InvalidArgument("teams must be 1..16");
  if (!(model.zipf >= 0) || !std::isfinite(model.zipf)) return Status::InvalidArgument("zipf must be ≥ 0");
  if (!(model.borrowing >= 0) || !std::isfinite(model.borrowing)) return Status::InvalidArgument("borrowing must be ≥ 0");
  return Status::Ok();
}

std::vector<std::string> TenantNames(const TenantModel& model) {
  std::vector<std::string> names;
  for (int org = 1; org <= model.orgs; ++org) {
    for (int team = 1; team <= model.teams_per_org; ++team) {
      names.push_back("org" + std::to_string(org) + "/team" + std::to_string(team));
    }
  }
  return names;
}

namespace {

// Tenant k's share of the demand: ∝ 1/k^zipf.
std::vector<double> Weights(const TenantModel& model) {
  const size_t tenants = static_cast<size_t>(model.orgs) * static_cast<size_t>(model.teams_per_org);
  std::vector<double> weights;
  double total = 0;
  for (size_t k = 1; k <= tenants; ++k) {
    weights.push_back(1.0 / std::pow(static_cast<double>(k), model.zipf));
    total += weights.back();
  }
  for (double& weight : weights) weight /= total;
  return weights;
}

}  // namespace

std::vector<int> AssignTenants(size_t pods, const TenantModel& model, uint64_t seed) {
  const std::vector<double> weights = Weights(model);
  std::vector<double> cumulative;
  double total = 0;
  for (double weight : weights) cumulative.push_back(total += weight);
  // A stream of its own, so the tenants do not move when other uses of the seed change.
  sched::Rng rng(seed ^ 0x7e4a47ULL);
  std::vector<int> assigned;
  assigned.reserve(pods);
  for (size_t pod = 0; pod < pods; ++pod) {
    const double draw = rng.UniformDouble() * total;
    size_t tenant = 0;
    while (tenant + 1 < weights.size() && cumulative[tenant] <= draw) ++tenant;
    assigned.push_back(static_cast<int>(tenant));
  }
  return assigned;
}

Result<sched::QuotaTree> ModelQuotas(const TenantModel& model, int64_t capacity_milli) {
  if (Status valid = Validate(model); !valid.ok()) return valid;
  const std::vector<double> weights = Weights(model);
  std::vector<sched::QuotaSpec> specs;
  for (int org = 1; org <= model.orgs; ++org) specs.push_back({.name = "org" + std::to_string(org)});
  size_t k = 0;
  for (int org = 1; org <= model.orgs; ++org) {
    for (int team = 1; team <= model.teams_per_org; ++team, ++k) {
      const double part = model.equal_quotas ? 1.0 / static_cast<double>(weights.size()) : weights[k];
      const auto nominal = static_cast<int64_t>(std::floor(static_cast<double>(capacity_milli) * part));
      const auto borrowing = static_cast<int64_t>(std::llround(static_cast<double>(nominal) * model.borrowing));
      specs.push_back({.name = "org" + std::to_string(org) + "/team" + std::to_string(team),
                       .parent = "org" + std::to_string(org),
                       .nominal = sched::Amount{0, nominal},
                       .borrowing_limit = sched::Amount{sched::kUnlimited, borrowing}});
    }
  }
  return sched::QuotaTree::Create(std::move(specs));
}

}  // namespace fgpu::simulate
