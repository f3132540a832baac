#include "sched/governance/fair_share.h"

#include <algorithm>
#include <cmath>

namespace fgpu::sched {

FairShare::FairShare(Amount capacity, double half_life_seconds)
    : capacity_(capacity), half_life_(std::max(half_life_seconds, 1e-3)) {}

double FairShare::DominantShare(const Amount& amount) const {
  double share = 0;
  if (capacity_.gpu_memory_bytes > 0) {
    share = std::max(share, static_cast<double>(amount.gpu_memory_bytes) / static_cast<double>(capacity_.gpu_memory_bytes));
  }
  if (capacity_.gpu_milli > 0) {
    share = std::max(share, static_cast<double>(amount.gpu_milli) / static_cast<double>(capacity_.gpu_milli));
  }
  return share;
}

void FairShare::Advance(double now) {
  if (!started_) {
    started_ = true;
    now_ = now;
    return;
  }
  if (now <= now_) return;
  const double elapsed = now - now_;
  now_ = now;
  // Over the interval the allocation r was constant: usage' = usage·d + r·∫ decay = usage·d + r·H/ln2·(1 − d).
  const double decay = std::exp2(-elapsed / half_life_);
  const double gained = half_life_ / std::log(2.0) * (1 - decay);
  total_usage_ = 0;
  for (auto& [tenant, account] : accounts_) {
    account.usage = account.usage * decay + DominantShare(account.allocated) * gained;
    total_usage_ += account.usage;
  }
}

void FairShare::Allocate(const std::string& tenant, const Amount& delta) {
  auto [account, added] = accounts_.try_emplace(tenant);
  if (added) total_weight_ += account->second.weight;
  account->second.allocated += delta;
}

void FairShare::SetShare(const std::string& tenant, double weight) {
  auto [account, added] = accounts_.try_emplace(tenant);
  const double old = added ? 0 : account->second.weight;
  account->second.weight = std::max(weight, 1e-9);
  total_weight_ += account->second.weight - old;
}

double FairShare::Factor(const std::string& tenant) const {
  const auto found = accounts_.find(tenant);
  if (found == accounts_.end() || total_usage_ <= 0 || total_weight_ <= 0) return 1;
  const double used = found->second.usage / total_usage_;
  const double share = found->second.weight / total_weight_;
  return std::exp2(-used / share);
}

double FairShare::Usage(const std::string& tenant) const {
  const auto found = accounts_.find(tenant);
  return found == accounts_.end() ? 0 : found->second.usage;
}

}  // namespace fgpu::sched
